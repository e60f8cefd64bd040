"""CPU-bound runs in parallel: N offline runs one after another, on threads, on processes.

    python bench/parallel_runs.py [--runs 20] [--processes 2] [--repeats 3]

The offline scripted model answers at once, so a run is pure Python: on threads of one
process the GIL lets one run compute at a time, and N runs at once take about as long as
N in a row. With ``STEPWISE_RUN_PROCESSES`` (here ``--processes``) the runs' streams go
to worker processes (graph/service/run_processes.py) and use the machine's cores.

Each mode runs the same experiment (the starter questions that need no approval, cycled
to ``--runs``, one variant) through ``ExperimentRunner`` on a run service of its own, on
its own home: sequential (1 experiment worker, threads), threads (``--runs`` workers),
processes (``--runs`` workers, ``--processes`` worker processes: all runs started at once;
the run service gives a run that never waits a worker of its own and queues the rest),
processes/1 (as many experiment workers as worker processes: the experiment itself starts
only one run per worker). Every mode is warmed up
first (the stock database built, the worker processes started and their graphs
compiled); the time the worker processes take to start is printed apart. A fourth
line, "separate", is the ceiling: ``--processes`` independent Python processes, each on
a home of its own, each running its share of the runs one after another, started at
the same moment (no shared store, no owner): what the cores give two programs that
share nothing; the pool cannot beat it. CPU s: the
CPU time the mode used in this process and its worker processes: wall time well above
it (sequential) means the machine was busy with something else. Repeats are
interleaved; medians, and the best repeat of each (the least disturbed by other
programs on a shared machine). Target: processes <= 0.6x sequential on 2 cores. Prints figures
only, asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_HOMES = tempfile.TemporaryDirectory(prefix="stepwise-bench-")  # removed when the bench exits
os.environ.setdefault("STEPWISE_HOME", _HOMES.name)

from graph.service.eval_sets import EvalQuestion, EvalSet, load_starter  # noqa: E402
from graph.service.experiment_variants import Variant  # noqa: E402
from graph.service.experiments import ExperimentRunner  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402


def questions(runs: int) -> EvalSet:
    """The starter questions that finish on their own (no approval), cycled to ``runs``."""
    usable = [q.question for q in load_starter().questions if "report" not in q.question.lower()]
    chosen = list(itertools.islice(itertools.cycle(usable), runs))
    return EvalSet(name="parallel", questions=[EvalQuestion(question=q) for q in chosen])


def service_on(name: str, processes: int) -> RunService:
    home = Path(_HOMES.name) / name
    home.mkdir()
    settings = Settings(home=home, provider="scripted", scripted_delay_s=0.0)
    return RunService(Store.open(settings), settings, timeout_tick_s=0, processes=processes)


def cpu_s(service: RunService) -> float:
    """CPU seconds used so far by this process and the service's worker processes."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    for pid in service.processes.pids() if service.processes else []:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def experiment_wall(service: RunService, runs: int, workers: int) -> tuple[float, float]:
    """Seconds from starting an experiment of ``runs`` runs to its last run's end, and the
    CPU seconds it took in all processes."""
    runner = ExperimentRunner.of(service)
    cpu = cpu_s(service)
    started = time.perf_counter()
    experiment_id = runner.start(
        f"{runs} runs on {workers}", questions(runs), [Variant(name="default")], max_workers=workers
    )
    runner.wait(experiment_id, timeout=3600, poll_s=0.02)
    wall, cpu = time.perf_counter() - started, cpu_s(service) - cpu
    statuses = [r["status"] for r in service.store.experiment_runs(experiment_id)]
    if statuses.count("done") != runs:
        raise SystemExit(f"not every run ended done: {sorted(set(statuses))}")
    return wall, cpu


def alone(runs: int) -> None:
    """A "separate" process: its share of the runs one after another, on each "go"."""
    service = service_on("alone", 0)
    experiment_wall(service, 2, 1)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        wall, cpu = experiment_wall(service, runs, 1)
        print(f"{wall} {cpu}", flush=True)
    service.shutdown()


class Separate:
    """``processes`` independent bench processes, each with ``runs`` runs to do."""

    def __init__(self, processes: int, runs: int):
        self.procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--alone", str(runs)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={k: v for k, v in os.environ.items() if k != "STEPWISE_HOME"},
            )
            for _ in range(processes)
        ]
        for proc in self.procs:
            assert proc.stdout.readline().strip() == "ready"

    def wall(self) -> tuple[float, float]:
        """Wall time until the last one has finished; CPU seconds of all."""
        started = time.perf_counter()
        for proc in self.procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        cpu = sum(float(proc.stdout.readline().split()[1]) for proc in self.procs)
        return time.perf_counter() - started, cpu

    def close(self) -> None:
        for proc in self.procs:
            proc.stdin.close()
            proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--alone", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.alone:
        return alone(args.alone)

    started = time.perf_counter()
    pool = service_on("processes", args.processes)
    services = {
        "sequential": service_on("sequential", 0),
        "threads": service_on("threads", 0),
        "processes": pool,
        "processes/1": pool,
    }
    # processes/1: the experiment starts one run per worker process at a time itself;
    # "processes" starts all at once and the run service queues them for a free worker.
    workers = {"sequential": 1, "threads": args.runs, "processes": args.runs}
    workers["processes/1"] = args.processes
    experiment_wall(pool, max(2, args.processes), max(2, args.processes))
    pool_ready = time.perf_counter() - started  # warm-up: ready workers, built database
    for name in ("sequential", "threads"):
        experiment_wall(services[name], 2, 2)
    separate = Separate(args.processes, args.runs // args.processes)
    print(
        f"{args.runs} offline runs; {os.cpu_count()} cores; {args.processes} worker processes "
        f"(started and warmed up in {pool_ready:.1f} s, not counted below)"
    )
    walls: dict[str, list[float]] = {name: [] for name in [*services, "separate"]}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    for _ in range(args.repeats):  # interleaved: a busy moment hits every mode alike
        for name, service in services.items():
            wall, cpu = experiment_wall(service, args.runs, workers[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
        wall, cpu = separate.wall()
        walls["separate"].append(wall)
        cpus["separate"].append(cpu)
    separate.close()
    for service in set(services.values()):
        service.shutdown()

    base, best_base = statistics.median(walls["sequential"]), min(walls["sequential"])
    print(
        f"\n{'':12}{'wall s':>8}{'x seq':>7}{'best s':>8}{'x seq':>7}{'CPU s':>7}"
        "   wall of each repeat (s)"
    )
    for name, values in walls.items():
        median, best = statistics.median(values), min(values)
        each = " ".join(f"{v:.2f}" for v in values)
        cpu = statistics.median(cpus[name])
        print(
            f"{name:12}{median:8.2f}{median / base:6.2f}x{best:8.2f}{best / best_base:6.2f}x"
            f"{cpu:7.2f}   {each}"
        )
    print(f"\nper run: sequential {base / args.runs * 1000:.0f} ms; target: processes <= 0.60x")


if __name__ == "__main__":
    main()
