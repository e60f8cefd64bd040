"""Runs at scale through LangGraph Server: N runs of a hosted system served by
``langgraph dev`` (``langgraph.json``), with 1 then 2 runs worked at once by the server
(``--n-jobs-per-worker``), against a model that answers after 200 ms.

    python bench/scale.py [--runs 16] [--delay 0.2] [--jobs 1,2] [--system plan_execute]

The model is the scripted model behind a real OpenAI-compatible HTTP server in its own
process (``python -m tests.support_procs.fake_server --delay``), reached by the real ChatOpenAI
client from the served graphs, so the runs wait on the model as they would on a real
one. Each level starts a fresh ``langgraph dev`` (offline, on loopback), warms it with one
run (its graph is built once per design), then creates the N runs at once through
``langgraph-sdk`` and waits for them all. The reference is the wall time at the first
level (runs one at a time); ideal = reference x first level / level. Prints figures only.

Columns: jobs (runs the server works at once); wall time; ideal; their ratio; mean run
time (each run's created_at to updated_at, queueing included); runs done.

Then the per-run overhead (``--overhead N`` runs each, ``bench/server_overhead.py``): the
same compiled graph run locally and on a fresh one-job ``langgraph dev``, and a trivial
three-node graph served the same way, interleaved, on the offline scripted model; first
update and total time of each, the server's excess over the local run, and a server run
split into request, queue, start (the graph factory), first node and the rest. Where the
time goes is in docs/deployment.md ("Where a server run's first second goes").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langgraph_sdk import get_sync_client  # noqa: E402

from bench.eval_throughput import model_server  # noqa: E402
from bench.server_overhead import measure as measure_overhead  # noqa: E402
from bench.server_overhead import report  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.kernel.system import get_system  # noqa: E402
from graph.models.choice import ModelChoice  # noqa: E402
from graph.served import run_config, run_input  # noqa: E402
from tests.support_procs import langgraph_server  # noqa: E402
from ui.views import view_of  # noqa: E402


def _seconds(run: dict) -> float:
    start, end = (datetime.fromisoformat(run[k]) for k in ("created_at", "updated_at"))
    return (end - start).total_seconds()


def measure(system: str, design: Design, questions: list[str], jobs: int) -> dict:
    """Wall time of ``questions`` as server runs with ``jobs`` worked at once."""
    server = langgraph_server.start(jobs_per_worker=jobs)
    try:
        client = get_sync_client(url=server.url, timeout=600)
        config = run_config(design)

        def create(question: str) -> tuple[str, str]:
            thread = client.threads.create()["thread_id"]
            run = client.runs.create(
                thread, system, input=run_input(system, question, design), config=config
            )
            return thread, run["run_id"]

        client.runs.join(*create(questions[0]))  # warm up: the design's graph is built
        started = time.perf_counter()
        created = [create(q) for q in questions]
        for thread, run in created:
            client.runs.join(thread, run)
        wall = time.perf_counter() - started
        runs = [client.runs.get(thread, run) for thread, run in created]
        finished = [client.threads.get(thread) for thread, _ in created]
        return {
            "wall": wall,
            "run_s": statistics.fmean(_seconds(r) for r in runs),
            "done": sum(1 for t in finished if (t.get("values") or {}).get("outcome") == "done"),
        }
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per model request")
    parser.add_argument("--jobs", default="1,2", help="runs the server works at once, per level")
    parser.add_argument("--system", default="plan_execute")
    parser.add_argument(
        "--overhead",
        type=int,
        default=8,
        help="runs of each side for the per-run overhead (0: none)",
    )
    args = parser.parse_args(argv)
    levels = [int(j) for j in args.jobs.split(",")]
    spec = get_system(args.system)
    questions = [
        view_of(spec.name).examples[i % len(view_of(spec.name).examples)] for i in range(args.runs)
    ]

    with model_server(args.delay, in_process=False) as base_url:
        design = Design(
            system=args.system,
            approvals_by="experiment",  # no run waits for a person
            model=ModelChoice(endpoint=base_url, model="bench"),
        )
        print(
            f"{args.runs} {args.system} runs through langgraph dev, {args.delay:g} s per model "
            f"request (real ChatOpenAI over HTTP to {base_url}), {os.cpu_count()} CPU(s)"
        )
        print(f"{'jobs':>4} {'wall s':>8} {'ideal s':>8} {'ratio':>6} {'run s':>6} {'done':>5}")
        reference = None
        for jobs in levels:
            figures = measure(args.system, design, questions, jobs)
            if reference is None:
                reference = figures["wall"] * jobs
            ideal = reference / jobs
            print(
                f"{jobs:>4} {figures['wall']:>8.2f} {ideal:>8.2f} {figures['wall'] / ideal:>6.2f} "
                f"{figures['run_s']:>6.2f} {figures['done']:>5}"
            )
    if args.overhead:
        report(args.system, args.overhead, measure_overhead(args.system, args.overhead))


if __name__ == "__main__":
    main()
