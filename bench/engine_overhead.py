"""Engine overhead: Stepwise's plan_execute against the idiomatic LangGraph peer.

    python bench/engine_overhead.py [--repeats 15] [--steps 10]
    python bench/engine_overhead.py --growth [--repeats 5]

The peer (``bench/langgraph_peer.py``) is the same plan-execute shape written directly in
LangGraph: a planner node, an executor node routing with ``Command(goto=...)``, ReAct
sub-agents from ``create_agent`` over the same tools, LangGraph's ``SqliteSaver`` (Stepwise
uses its own saver on the same tables, ``VersionedSqliteSaver``, which stores what each
checkpoint changed). Both sides get
the same zero-latency model: the offline scripted model, except that the plan is a fixed
N steps (researchers alternating, then the synthesizer), so both make the same model and
tool calls per step (executor decision, one tool call, one reading of it). The figure is
what each side's own machinery costs per step, not model latency.

Every side's checkpointer settings (journal mode and synchronous read back from its live
SQLite connection, the serializer's format) are printed and checked equal before any
ratio is printed (``bench/fairness.py``); the load average is printed at start and end.

Timings, interleaved in one process (each repeat runs all of them, in rotating order),
median with the interquartile range and min-max:

- ``stepwise, no store``  : ``run_question`` on a graph built once (checkpoints, no events:
  nobody watches, so it streams node updates only, as the peer line does);
- ``app path, prepared once``: ``RunService.start`` + ``wait``: the graph built once
  (``prepare``), and every run event written to the store;
- ``app path, built per click``: the same, ``start`` called as the Run page calls it (no
  ``prepared``): it finds the design's graph kept after the first run (``RunModels``);
- ``langgraph peer``      : the peer graph, built once, streamed (``stream_mode="updates"``);
  the ratios are against this one.

For context, a fourth line streams the peer the way Stepwise's ``continue_run`` does for a
watcher, as on the app's path (updates, custom, values and tasks, with subgraphs: what
shows sub-agents live and keys events by task): the part of that gap that is streaming.

``--growth`` prints, for plans of 5/10/20/40/80 steps run through the RunService (store
on, a fresh home per size): ms/step, the checkpoints and run events one run leaves and
their size (MB), and the peer's ms/step beside it. Prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_HOME = tempfile.TemporaryDirectory(prefix="stepwise-bench-")  # removed when the bench exits
os.environ.setdefault("STEPWISE_HOME", _HOME.name)

from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from bench.fairness import (  # noqa: E402
    checkpointer_settings,
    load,
    print_settings,
    require_same,
    spread,
)
from bench.langgraph_peer import peer_checkpointer, peer_graph, peer_input  # noqa: E402
from graph.kernel.checkpoints import open_checkpointer  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.models.scripted import ScriptedChatModel, task_prompt  # noqa: E402
from graph.plan_execute import SYSTEM  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.runs import run_question  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402

TOPICS = ["the iPhone launch", "Google's IPO", "the dot-com crash", "AWS", "Lehman Brothers"]
QUESTION = "A long plan, please."
GROWTH_SIZES = (5, 10, 20, 40, 80)
# What continue_run asks LangGraph for, to show sub-agents live and key events by task.
STEPWISE_STREAMING = {"stream_mode": ["updates", "custom", "values", "tasks"], "subgraphs": True}


def fixed_plan(steps: int) -> dict:
    """``steps - 1`` research steps (web and SQL alternating), then the synthesizer."""
    plan = {
        str(i + 1): (
            {
                "agent": "web_researcher",
                "action": f"Search the documents for: {TOPICS[i // 2 % 5]}.",
            }
            if i % 2 == 0
            else {
                "agent": "data_researcher",
                "action": "Using the stock database, answer: how did AAPL's price change "
                f"in {2001 + i % 10}?",
            }
        )
        for i in range(steps - 1)
    }
    plan[str(steps)] = {"agent": "synthesizer", "action": "Answer from the findings."}
    return plan


class FixedPlanModel(ScriptedChatModel):
    """The scripted model, except that every plan is the same ``steps`` steps."""

    steps: int = 10

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        prompt = task_prompt(messages)
        if '"action"' in prompt and '"goto"' not in prompt and not kwargs.get("tools"):
            plan = json.dumps(fixed_plan(self.steps))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=plan))])
        return super()._generate(messages, stop, run_manager, **kwargs)


@dataclass
class Took:
    """One run's wall time and the CPU time of the whole process (every thread) meanwhile:
    on a shared machine the CPU time is the steadier measure of work done."""

    wall: float = 0.0
    cpu: float = 0.0


@contextmanager
def timed():
    took = Took()
    wall, cpu = time.perf_counter(), time.process_time()
    yield took
    took.wall, took.cpu = time.perf_counter() - wall, time.process_time() - cpu


class Sides:
    """The three things timed, each built once for plans of ``steps`` steps in ``home``."""

    def __init__(self, steps: int, home: Path):
        self.steps = steps
        self.model = FixedPlanModel(steps=steps)
        self.design = Design(recursion_limit=max(100, 8 * steps))
        self.engine = SYSTEM.build_graph(
            self.design,
            checkpointer=open_checkpointer(home / "bench-engine.sqlite", SYSTEM.shape.state_types),
            planner_model=self.model,
            worker_model=self.model,
        )
        self.settings = Settings(home=home)
        self.service = RunService(
            Store.open(self.settings),
            self.settings,
            model_factory=lambda role: self.model,
            timeout_tick_s=0,
        )
        self.prepared = self.service.prepare(self.design)
        self.peer = peer_graph(self.model, peer_checkpointer(home / "bench-peer.sqlite"))
        self.run_ids: list[str] = []

    def stepwise(self) -> Took:
        with timed() as took:
            outcome = run_question(QUESTION, self.design, graph=self.engine)
        assert outcome.status == "done" and len(outcome.rows) == self.steps, outcome.reason
        return took

    def settings_of_sides(self) -> dict[str, dict[str, str]]:
        """Each side's checkpointer settings, read back from its live connection."""
        return {
            "stepwise engine": checkpointer_settings(self.engine.checkpointer),
            "stepwise app (service)": checkpointer_settings(self.service.checkpointer),
            "langgraph peer": checkpointer_settings(self.peer.checkpointer),
        }

    def stepwise_store(self, per_click: bool = False) -> Took:
        """The app's path: ``RunService.start`` + ``wait``, every event to the store. The
        Run page calls ``start`` without ``prepared`` (the graph looked up per click, kept
        by ``RunModels``): ``per_click`` times that; otherwise ``prepare``'s graph."""
        with timed() as took:
            prepared = None if per_click else self.prepared
            run_id = self.service.start(QUESTION, self.design, prepared=prepared)
            record = self.service.wait(run_id)
        assert record.status == "done", record.reason
        self.run_ids.append(run_id)
        return took

    def peer_run(self, **streaming) -> Took:
        config = {
            "configurable": {"thread_id": uuid.uuid4().hex},
            "recursion_limit": max(100, 8 * self.steps),
        }
        streaming = streaming or {"stream_mode": "updates"}
        with timed() as took:
            for _ in self.peer.stream(peer_input(QUESTION), config, **streaming):
                pass
        state = self.peer.get_state(config).values
        assert state.get("final_answer") and len(state["step_results"]) == self.steps
        return took

    def close(self) -> None:
        self.service.shutdown()


def interleaved(sides: Sides, repeats: int) -> dict[str, list[Took]]:
    """Every timing's ``repeats`` runs, all in this one process, the order rotating every
    repeat (A/B/C/..., B/C/.../A, ...) so drift on a shared machine falls on every side."""
    named = {
        "stepwise, no store": sides.stepwise,
        "app path, prepared once": sides.stepwise_store,
        "app path, built per click": lambda: sides.stepwise_store(per_click=True),
        "langgraph peer": sides.peer_run,
        "peer, streamed as ours": lambda: sides.peer_run(**STEPWISE_STREAMING),
    }
    for run in named.values():  # warm-up: imports, database build, indexes, first compile
        run()
    times: dict[str, list[Took]] = {name: [] for name in named}
    order = list(named)
    for i in range(repeats):
        for name in order[i % len(order) :] + order[: i % len(order)]:
            times[name].append(named[name]())
    return times


def _range(values: list[float]) -> str:
    s = spread(values)
    return f"{s['median']:.2f} [{s['q1']:.2f}-{s['q3']:.2f}] ({s['min']:.2f}-{s['max']:.2f})"


def overhead(steps: int, repeats: int) -> None:
    print(f"load average at start: {load()}")
    home = Path(tempfile.mkdtemp(dir=_HOME.name))
    sides = Sides(steps, home)
    try:
        settings = sides.settings_of_sides()
        print("checkpointer settings, read back from each side's live connection:")
        print_settings(settings)
        require_same(settings)  # UnequalSettings: no ratio is printed
        times = interleaved(sides, repeats)
    finally:
        sides.close()
    peer = times["langgraph peer"]
    print(
        f"{steps}-step plan, {repeats} interleaved repeats in one process; same scripted "
        "model (zero latency), same tools, SQLite checkpointers with the settings above"
    )
    print(
        "per step, median [interquartile range] (min-max); ratios: median of each "
        "repeat's ratio to the peer run beside it [IQR] (min-max)"
    )
    print(f"{'':26s}  {'wall ms/step':>30}  {'x peer, wall':>26}  {'x peer, CPU':>26}")
    ratios: dict[str, dict[str, list[float]]] = {}
    for name, took in times.items():
        wall = [t.wall / steps * 1000 for t in took]
        ratios[name] = {
            what: [getattr(a, what) / getattr(b, what) for a, b in zip(took, peer)]
            for what in ("wall", "cpu")
        }
        print(
            f"{name:26s}  {_range(wall):>30}  {_range(ratios[name]['wall']):>26}  "
            f"{_range(ratios[name]['cpu']):>26}"
        )
    for name, target in (
        ("stepwise, no store", "engine alone, target <= 1.15x"),
        ("app path, prepared once", "app path, graph built once, target <= 1.3x"),
        ("app path, built per click", "app path as the Run page starts it, target <= 1.3x"),
    ):
        med = {w: spread(r)["median"] for w, r in ratios[name].items()}
        print(f"{target}: {med['wall']:.2f}x wall, {med['cpu']:.2f}x CPU")
    print(f"load average at end: {load()}")


def _stored_bytes(path: Path, tables: dict[str, tuple[str, ...]]) -> int:
    conn = sqlite3.connect(path)
    try:
        total = 0
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table, columns in tables.items():
            if table in names:
                sizes = " + ".join(f"COALESCE(LENGTH({c}), 0)" for c in columns)
                total += conn.execute(f"SELECT COALESCE(SUM({sizes}), 0) FROM {table}").fetchone()[
                    0
                ]
        return total
    finally:
        conn.close()


def _count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def growth(repeats: int) -> None:
    """Per-step time and what one run leaves stored, as plans grow. Every size is built
    first and the runs of all sizes interleave (the order rotating every repeat): the
    machine's speed drifts over a minute, and the sizes are compared with each other."""
    print(
        f"growth: plans of {'/'.join(map(str, GROWTH_SIZES))} steps through the RunService "
        f"(store on), {repeats} repeats interleaved across sizes, medians; stored figures "
        "per run"
    )
    print(
        f"{'steps':>5} {'ms/step':>8} {'CPU ms/step':>11} {'peer ms/step':>12} "
        f"{'peer CPU':>8} {'checkpoints':>11} {'ckpt MB':>8} {'events':>7} {'event MB':>9}"
    )
    homes = {steps: Path(tempfile.mkdtemp(dir=_HOME.name)) for steps in GROWTH_SIZES}
    sides = {steps: Sides(steps, homes[steps]) for steps in GROWTH_SIZES}
    took: dict[tuple[int, str], list[Took]] = {}
    try:
        jobs = [
            (steps, side, run)
            for steps, s in sides.items()
            for side, run in (("ours", s.stepwise_store), ("peer", s.peer_run))
        ]
        for _, _, run in jobs:  # warm-up
            run()
        for i in range(repeats):
            shift = i % len(jobs)
            for steps, side, run in jobs[shift:] + jobs[:shift]:
                took.setdefault((steps, side), []).append(run())
    finally:
        for s in sides.values():
            s.close()
    per_step: dict[int, float] = {}
    for steps in GROWTH_SIZES:
        home, runs = homes[steps], len(sides[steps].run_ids)
        ckpt = home / "checkpoints.sqlite"
        ckpt_bytes = _stored_bytes(
            ckpt,
            {
                "checkpoints": ("checkpoint", "metadata"),
                "writes": ("value",),
                "stepwise_texts": ("text",),
                "checkpoint_blobs": ("blob",),
            },
        )
        checkpoints = _count(ckpt, "SELECT COUNT(*) FROM checkpoints")
        store = home / "stepwise.sqlite"
        if not store.exists():
            store = next(home.glob("*.sqlite"))
        event_bytes = _stored_bytes(store, {"events": ("data_json",), "event_texts": ("text",)})
        events = _count(store, "SELECT COUNT(*) FROM events")
        ms = {
            f"{side} {what}": statistics.median(getattr(t, what) for t in took[(steps, side)])
            / steps
            * 1000
            for side in ("ours", "peer")
            for what in ("wall", "cpu")
        }
        per_step[steps] = ms["ours cpu"]
        print(
            f"{steps:>5} {ms['ours wall']:>8.1f} {ms['ours cpu']:>11.1f} {ms['peer wall']:>12.1f} "
            f"{ms['peer cpu']:>8.1f} {checkpoints / runs:>11.0f} {ckpt_bytes / runs / 1e6:>8.2f} "
            f"{events / runs:>7.0f} {event_bytes / runs / 1e6:>9.2f}"
        )
    if {10, GROWTH_SIZES[-1]} <= per_step.keys():
        last = GROWTH_SIZES[-1]
        print(
            f"CPU ms/step at {last} steps / at 10 steps: {per_step[last] / per_step[10]:.2f}x "
            "(target <= 1.2x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--growth", action="store_true", help="the growth table instead")
    args = parser.parse_args()
    if args.growth:
        growth(args.repeats or 5)
    else:
        overhead(args.steps, args.repeats or 15)


if __name__ == "__main__":
    main()
