"""Experiment throughput: N runs through the real ChatOpenAI client against a local
OpenAI-compatible server that answers (with the scripted model) after a fixed delay,
at several experiment worker counts.

    python bench/eval_throughput.py [--runs 40] [--delay 0.2] [--concurrency 1,4,8] [--in-process]
        [--poll 0.5]

The delay stands for model latency, so the runs are I/O-bound, as they are on a real
server: with W workers the wall time should approach sequential time / W. The
sequential time is the measured wall time at concurrency 1. Prints figures only; the
target (within 1.2x of ideal at 8 workers) is read, not asserted.

The server runs in its own process (``python -m tests.support_procs.fake_server``), as a model
server would; ``--in-process`` serves it from a thread of this process instead, where
its request handling competes with the runs for the GIL.

A level whose runs do not all end done prints no ratio (failed runs are quick: their
ratio would flatter), nor does any level after a failed first one (the reference). The
wall time ends at the last run's recorded end, not when the bench next looks: the bench
reads the experiment's progress every ``--poll`` seconds (each look is store reads on the
runs' interpreter, as the Evals page's are, once a second).

Columns: wall time; ideal (sequential / workers); their ratio; mean run time (each
run's own start to end: it grows when runs slow each other down); mean model-call
latency seen by the client (delay + HTTP + contention); packing (sum of run times /
(workers x wall): below 1 when some workers idle at the end, waiting for the last runs);
this process's CPU time per run (the runs share one interpreter lock, so at W workers the
wall time cannot drop below runs x cpu/run).
"""

from __future__ import annotations

import argparse
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_HOME = tempfile.TemporaryDirectory(prefix="stepwise-bench-")  # removed when the bench exits
os.environ.setdefault("STEPWISE_HOME", _HOME.name)

from bench.fairness import load  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.models.scripted import ScriptedChatModel  # noqa: E402
from graph.service.eval_sets import EvalQuestion, EvalSet, load_starter  # noqa: E402
from graph.service.experiment_comparison import run_records  # noqa: E402
from graph.service.experiment_variants import Variant  # noqa: E402
from graph.service.experiments import ExperimentRunner  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402
from tests.support_procs.fake_server import LocalOpenAIServer  # noqa: E402

TARGET, TARGET_WORKERS = 1.2, 8  # issue 33.5


def questions(runs: int) -> EvalSet:
    """The starter questions that finish on their own (no approval), cycled to ``runs``."""
    usable = [q.question for q in load_starter().questions if "report" not in q.question.lower()]
    chosen = list(itertools.islice(itertools.cycle(usable), runs))
    return EvalSet(name="throughput", questions=[EvalQuestion(question=q) for q in chosen])


@contextmanager
def model_server(delay: float, in_process: bool):
    """The base URL of a LocalOpenAIServer answering with the scripted model after ``delay``."""
    if in_process:
        with LocalOpenAIServer(ScriptedChatModel, delay_s=delay, model_name="bench") as server:
            yield server.base_url
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support_procs.fake_server",
            "--model",
            "scripted",
            "--port",
            str(port),
            "--delay",
            str(delay),
            "--model-name",
            "bench",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        base_url = process.stdout.readline().strip()
        if not base_url.startswith("http"):
            raise RuntimeError("the local model server did not start")
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=10)


def measure(
    service: RunService, eval_set: EvalSet, workers: int, poll_s: float
) -> tuple[float, float, list[dict]]:
    """Wall time (from the start to the last run's recorded end, so how often the bench
    looks does not add to it), this process's CPU time (the model server's is not in it)
    and the runs' records of one experiment of ``eval_set`` at ``workers``."""
    cpu = time.process_time()
    started = time.time()
    experiment_id = ExperimentRunner.of(service).start(
        f"throughput x{workers}",
        eval_set,
        [Variant(name="default")],
        design=Design(),
        max_workers=workers,
    )
    ExperimentRunner.of(service).wait(experiment_id, timeout=3600, poll_s=poll_s)
    ended = [
        run.finished_at
        for row in service.store.experiment_runs(experiment_id)
        if (run := service.store.run(row["run_id"])) is not None and run.finished_at is not None
    ]
    wall = max(ended, default=time.time()) - started
    return wall, time.process_time() - cpu, run_records(service.store, experiment_id)


def failures(service: RunService, records: list[dict], expected: int) -> str:
    """How many of the ``expected`` runs did not end done, and the first one's status and
    reason."""
    failed = [r for r in records if r["status"] != "done"]
    first = service.store.run(failed[0]["run_id"]) if failed else None
    why = f": first {first.status}, {first.reason[:160]!r}" if first is not None else ""
    missing = expected - len(records)
    return f"{len(failed) + missing} of {expected} runs did not end done{why}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per model request")
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument(
        "--in-process", action="store_true", help="serve the model from a thread of this process"
    )
    parser.add_argument(
        "--poll",
        type=float,
        default=0.5,
        help="seconds between looks at the experiment's progress (the Evals page: 1 s)",
    )
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.concurrency.split(",")]
    home = Path(os.environ["STEPWISE_HOME"])
    eval_set = questions(args.runs)

    with model_server(args.delay, args.in_process) as base_url:
        settings = Settings(
            home=home,
            openai_base_url=base_url,
            openai_api_key="bench",
            planner_model="bench",
            worker_model="bench",
            max_retries=0,
            request_timeout_s=120,
        )
        service = RunService(Store.open(settings), settings, timeout_tick_s=0)
        try:
            where = "in this process" if args.in_process else "in its own process"
            print(
                f"{args.runs} runs, {args.delay:g} s per model request, real ChatOpenAI over "
                f"HTTP to a local server {where} ({base_url}), {os.cpu_count()} CPU(s), progress "
                f"read every {args.poll:g} s, wall time to the last run's recorded end"
            )
            # Imports, the first graph compile and the first connections are paid once,
            # before any level is timed: in the sequential reference they would make the
            # ideal look longer and every ratio better than it is.
            measure(service, questions(2), 1, args.poll)
            print(f"load average before: {load()}")
            print(
                f"{'workers':>7} {'wall s':>8} {'ideal s':>8} {'ratio':>6} {'run s':>6} "
                f"{'call s':>7} {'packing':>7} {'cpu/run':>7} {'requests':>8} {'done':>5}"
            )
            sequential = None
            reference_ok = True
            ratios: dict[int, float] = {}
            for workers in levels:
                wall, cpu, records = measure(service, eval_set, workers, args.poll)
                requests = sum(r["llm_calls"] or 0 for r in records)
                runs = [r["latency_s"] for r in records if r["latency_s"] is not None]
                calls = [
                    e["data"]["llm_call"]["latency_s"]
                    for r in records
                    for e in service.store.events(r["run_id"], kinds=("custom",))
                    if isinstance(e["data"], dict) and "llm_call" in e["data"]  # not tool runs
                ]
                done = sum(1 for r in records if r["status"] == "done")
                if done < args.runs:
                    # A failed run is cheap: timing failures flatters every ratio. The
                    # first level is the reference, so no level gets a ratio after it.
                    reference_ok = reference_ok and sequential is not None
                    why = failures(service, records, args.runs)
                    print(f"{workers:>7} {wall:>8.2f}   NO RATIO: {why}")
                    continue
                if sequential is None and reference_ok:
                    sequential = wall * workers  # the first level is the reference
                if sequential is None:
                    print(f"{workers:>7} {wall:>8.2f}   NO RATIO: the reference level failed")
                    continue
                ideal = sequential / workers
                ratios[workers] = wall / ideal
                print(
                    f"{workers:>7} {wall:>8.2f} {ideal:>8.2f} {wall / ideal:>6.2f} "
                    f"{statistics.fmean(runs):>6.2f} {statistics.fmean(calls):>7.3f} "
                    f"{sum(runs) / (workers * wall):>7.2f} {cpu / len(records):>7.3f} "
                    f"{requests:>8} {done:>5}"
                )
            print(f"load average after: {load()}")
            verdict = (
                "no figure at 8 workers"
                if TARGET_WORKERS not in ratios
                else "met"
                if ratios[TARGET_WORKERS] <= TARGET
                else "NOT met"
            )
            print(
                f"target: within {TARGET}x of ideal at {TARGET_WORKERS} workers: {verdict} "
                "(not a claim at a load average of 2 or more)"
            )
        finally:
            service.shutdown()


if __name__ == "__main__":
    main()
