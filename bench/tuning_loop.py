"""The prompt-tuning loop's wall times on a real server: a fork from the last step with
another Executor prompt, a whole new run of the same question, and one playground call.

    python bench/tuning_loop.py [--base-url URL --model NAME] [--repeats N]

Without ``--base-url`` it starts the test suite's real server (llama-cpp-python serving
SmolLM2-135M-Instruct, installed by ``bash scripts/test.sh``). The first whole run is the
parent of every fork; then forks and whole runs alternate (interleaved, so a change in
the machine's load falls on both), each timed from the call that starts it to its end.
A fork goes on from the checkpoint before the run's last step: the calls before it are
replayed from the parent's recording, the later ones asked of the server.

Prints the settings, the load average before and after, and per kind the median and the
spread (min–max) of the wall times. Nothing is asserted.
"""

from __future__ import annotations

import argparse
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

from bench.real_server import Served, add_arguments, real_server  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.prompts import default_text  # noqa: E402
from graph.service.playground import PromptTry, try_node  # noqa: E402
from graph.service.prompt_forks import call_sources  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402
from ui.views import view_of  # noqa: E402

QUESTION = view_of("plan_execute").examples[0]
DESIGN = Design(max_replans=1)
EXECUTOR = "plan_execute/executor"
FORK_TEXT = "Be brief: give the reason in one short sentence.\n" + default_text(EXECUTOR)
ANSWERS = {"approval": "approve", "escalation": "skip"}
ENDED = ("done", "failed", "cancelled", "interrupted")


def follow(service: RunService, run_id: str, limit_s: float) -> str:
    """Wait for the run's end, answering its questions as the tests do; its status."""
    deadline = time.perf_counter() + limit_s
    while time.perf_counter() < deadline:
        record = service.store.run(run_id)
        if record.status in ENDED:
            return record.status
        if record.status == "waiting" and not service.is_live(run_id):
            for item in service.store.pending_interrupts(run_id):
                service.decide(run_id, item["id"], ANSWERS.get(item.get("kind"), "approve"))
        time.sleep(0.1)
    service.cancel(run_id)
    return "over the limit"


def before_last_step(service: RunService, run_id: str) -> str | None:
    """The checkpoint before the run first reaches its last step (None: one step only)."""
    timeline = service.timeline(run_id)
    last = max((p["fields"].get("current_step") or 0 for p in timeline), default=0)
    first = next((p for p in timeline if (p["fields"].get("current_step") or 0) >= last), None)
    if last < 2 or first is None or first["index"] == 0:
        return None
    return timeline[first["index"] - 1]["checkpoint_id"]


def time_playground_call(service: RunService, run_id: str, checkpoint_id: str | None) -> str:
    """One node playground call (``playground.try_node``): the node at that checkpoint
    (the Executor before the last step) asked once with the fork's prompt, on the active
    model profile, nothing else of the run executed."""
    if checkpoint_id is None:
        return "playground: not measured (no checkpoint before a last step to call it on)"
    started = time.perf_counter()
    trial = try_node(
        service, run_id, checkpoint_id, [PromptTry("bench", FORK_TEXT)], [service.profiles.active()]
    )
    took = time.perf_counter() - started
    problems = [s.problem for s in trial.samples if s.problem]
    said = f" ({problems[0]})" if problems else ""
    return f"playground: one call of {trial.node} {took:.1f} s{said}"


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    return (
        f"median {statistics.median(values):.1f} s, spread {min(values):.1f}–{max(values):.1f} s "
        f"(n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--repeats", type=int, default=3, help="forks and whole runs each")
    parser.add_argument("--limit", type=float, default=1800, help="seconds one run may take")
    args = parser.parse_args()

    with real_server(args) as served:
        measure(args, served)


def measure(args: argparse.Namespace, served: Served) -> None:
    settings = Settings(
        home=Path(_HOME.name),
        provider="openai",
        openai_base_url=served.base_url,
        planner_model=served.model,
        worker_model=served.model,
        max_retries=0,
        request_timeout_s=600,
        model_call_deadline_s=600,
        max_tokens=512,
    )
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        print(f"server: {served.about}\nmodel: {served.model}")
        print(f"question: {QUESTION}\ndesign: plan_execute, every agent, max_replans=1")
        print(f"repeats: {args.repeats} forks and {args.repeats} whole runs, interleaved")
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        whole: list[float] = []
        forks: list[float] = []
        started = time.perf_counter()
        parent = service.start(QUESTION, DESIGN)
        status = follow(service, parent, args.limit)
        whole.append(time.perf_counter() - started)
        print(f"whole run 1 (the parent): {whole[-1]:.1f} s, {status}", flush=True)
        point = before_last_step(service, parent) if status == "done" else None
        if point is None:
            print("fork: not measured (the parent did not end done with two steps or more)")
        for i in range(args.repeats):
            if point is not None:
                started = time.perf_counter()
                fork = service.fork_with_prompt(parent, point, EXECUTOR, text=FORK_TEXT)
                status = follow(service, fork, args.limit)
                forks.append(time.perf_counter() - started)
                calls = call_sources(store.events(fork, kinds=("custom",)))
                print(
                    f"fork {i + 1}: {forks[-1]:.1f} s, {status}, {calls['replayed']} calls "
                    f"replayed, {calls['live']} live",
                    flush=True,
                )
            if i + 1 < args.repeats:
                started = time.perf_counter()
                run_id = service.start(QUESTION, DESIGN)
                status = follow(service, run_id, args.limit)
                whole.append(time.perf_counter() - started)
                print(f"whole run {i + 2}: {whole[-1]:.1f} s, {status}", flush=True)
        print(time_playground_call(service, parent, point))
        print(f"fork from the last step: {spread(forks)}")
        print(f"whole new run: {spread(whole)}")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        service.shutdown()
        store.close()


if __name__ == "__main__":
    main()
