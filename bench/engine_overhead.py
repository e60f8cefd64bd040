"""Engine overhead: the same 10-step plan through Stepwise's engine and through a bare
LangGraph graph of no-op nodes with the same shape.

    python bench/engine_overhead.py [--repeats 20]

Both use the offline scripted model's speed class (no network): the figure is what
the engine itself costs per step (prompt rendering, JSON validation, ReAct sub-agent
graphs, real tools on SQLite, checkpoints), not model latency. Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_HOME = tempfile.TemporaryDirectory(prefix="stepwise-bench-")  # removed when the bench exits
os.environ.setdefault("STEPWISE_HOME", _HOME.name)

from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Command  # noqa: E402

from graph.kernel.checkpoints import open_checkpointer  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.models.scripted import ScriptedChatModel, task_prompt  # noqa: E402
from graph.plan_execute import SYSTEM  # noqa: E402
from graph.plan_execute.state import State  # noqa: E402
from graph.service.runs import run_question  # noqa: E402

build_graph = SYSTEM.build_graph

STEPS = 10
TOPICS = ["the iPhone launch", "Google's IPO", "the dot-com crash", "AWS", "Lehman Brothers"]
PLAN = {
    str(i + 1): (
        {"agent": "web_researcher", "action": f"Search the documents for: {TOPICS[i // 2]}."}
        if i % 2 == 0
        else {
            "agent": "data_researcher",
            "action": f"Using the stock database, answer: how did AAPL's price change in {2001 + i}?",
        }
    )
    for i in range(STEPS - 1)
}
PLAN[str(STEPS)] = {"agent": "synthesizer", "action": "Answer from the findings."}


class FixedPlanModel(ScriptedChatModel):
    """The scripted model, except that every plan is the same 10 steps."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        prompt = task_prompt(messages)
        if '"action"' in prompt and '"goto"' not in prompt and not kwargs.get("tools"):
            return ChatResult(
                generations=[ChatGeneration(message=AIMessage(content=json.dumps(PLAN)))]
            )
        return super()._generate(messages, stop, run_manager, **kwargs)


def engine_once(graph, design) -> tuple[float, int]:
    started = time.perf_counter()
    outcome = run_question("Ten steps, please.", design, graph=graph)
    assert outcome.status == "done" and len(outcome.rows) == STEPS, outcome.reason
    return time.perf_counter() - started, outcome.nodes_run


def bare_graph(checkpointer):
    """planner -> (executor -> worker) x 10 -> end, every node a no-op but the counter."""

    def planner(state):
        return Command(update={"current_step": 1}, goto="executor")

    def executor(state):
        step = state["current_step"]
        return Command(update={"current_step": step}, goto="worker" if step <= STEPS else END)

    def worker(state):
        return Command(update={"current_step": state["current_step"] + 1}, goto="executor")

    builder = StateGraph(State)
    builder.add_node("planner", planner, destinations=("executor",))
    builder.add_node("executor", executor, destinations=("worker", END))
    builder.add_node("worker", worker, destinations=("executor",))
    builder.add_edge(START, "planner")
    return builder.compile(checkpointer=checkpointer)


def bare_once(graph) -> float:
    started = time.perf_counter()
    config = {"configurable": {"thread_id": str(time.perf_counter_ns())}, "recursion_limit": 100}
    for _ in graph.stream(
        {"messages": [], "current_step": 0}, config, stream_mode=["updates", "values"]
    ):
        pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    home = Path(os.environ["STEPWISE_HOME"])
    design = Design()
    model = FixedPlanModel()
    engine = build_graph(
        design,
        checkpointer=open_checkpointer(home / "bench-engine.sqlite", SYSTEM.state_types),
        planner_model=model,
        worker_model=model,
    )
    bare_plain = bare_graph(None)
    bare_ckpt = bare_graph(open_checkpointer(home / "bench-bare.sqlite"))
    engine_once(engine, design)  # warm-up: imports, database build, index
    bare_once(bare_plain), bare_once(bare_ckpt)
    engine_times, nodes = zip(*(engine_once(engine, design) for _ in range(args.repeats)))
    plain_times = [bare_once(bare_plain) for _ in range(args.repeats)]
    ckpt_times = [bare_once(bare_ckpt) for _ in range(args.repeats)]
    e, p, c = (statistics.median(t) for t in (engine_times, plain_times, ckpt_times))
    print(
        f"10-step plan, {args.repeats} repeats, medians; engine ran {nodes[0]} top-level nodes "
        f"per run (+ ReAct sub-agent nodes), scripted model, SQLite checkpointer on"
    )
    print(f"engine run               : {e * 1000:8.1f} ms  ({e / STEPS * 1000:.2f} ms/step)")
    print(f"bare graph, no checkpoint: {p * 1000:8.1f} ms  ({p / STEPS * 1000:.2f} ms/step)")
    print(f"bare graph, SQLite ckpt  : {c * 1000:8.1f} ms  ({c / STEPS * 1000:.2f} ms/step)")
    print(
        f"engine overhead per step : {(e - c) / STEPS * 1000:8.2f} ms over the checkpointed bare graph"
    )
    print(f"ratio engine / bare      : {e / c:8.1f}x (checkpointed), {e / p:.1f}x (no checkpoint)")


if __name__ == "__main__":
    main()
