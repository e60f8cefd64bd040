"""A run's state read two ways: the event log's latest state event against the checkpointer.

    python bench/state_reads.py [--runs 10] [--repeats 200]

The Run page and the History list show a run's state as its system's ``snapshot`` (rows,
counts, conversation). Today the store keeps that projection with each "state" event
(``runs.snapshot_json`` the latest), so a page reads it in one row. The one-record
alternative (issue 32.5) reads it from the checkpointer: build (or take cached) the
design's compiled graph, ``get_state`` its thread, project it with ``System.snapshot``.
This measures, on offline runs of the default design on a fresh home, the time of one
read each way (a Run page refresh reads one run; the History list reads a page of runs),
and the step timings the page draws from the state events' timestamps, which the
checkpointer gives only as ``get_state_history`` (every checkpoint of the thread).
Prints medians; asserts nothing.
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
_HOME = tempfile.TemporaryDirectory(prefix="stepwise-bench-")
os.environ.setdefault("STEPWISE_HOME", _HOME.name)

from graph.kernel.design import Design  # noqa: E402
from graph.kernel.system import get_system  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402

QUESTIONS = [
    "What was Apple's revenue in 2023?",
    "Compare Microsoft and Apple revenue in 2023.",
    "What caused the dot-com crash?",
]


def median_ms(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    settings = Settings(home=Path(_HOME.name))
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0, claim_orphans=False)
    design = Design()
    ids = [service.start(QUESTIONS[i % len(QUESTIONS)], design) for i in range(args.runs)]
    for run_id in ids:
        service.wait(run_id, timeout=300)
    compiled, _, _ = service.prepare(service.with_active_model(design))
    system = get_system(design.system)
    one = ids[0]

    def from_checkpoint(run_id: str) -> dict:
        values = compiled.get_state({"configurable": {"thread_id": run_id}}).values
        return system.snapshot(values or {})

    def timings_from_checkpoints(run_id: str) -> list:
        config = {"configurable": {"thread_id": run_id}}
        return [s.created_at for s in compiled.get_state_history(config)]

    states = len(store.events(one, kinds=("state",)))
    rows = [
        ("one run's snapshot, event log (store.snapshot)", lambda: store.snapshot(one)),
        ("one run's snapshot, checkpointer (get_state + snapshot)", lambda: from_checkpoint(one)),
        (
            f"{args.runs} runs' snapshots, event log",
            lambda: [store.snapshot(r) for r in ids],
        ),
        (
            f"{args.runs} runs' snapshots, checkpointer",
            lambda: [from_checkpoint(r) for r in ids],
        ),
        (
            f"one run's {states} state events (step timings), event log",
            lambda: store.events(one, kinds=("state",)),
        ),
        (
            "one run's checkpoints (step timings), get_state_history",
            lambda: timings_from_checkpoints(one),
        ),
    ]
    print(f"{args.runs} offline runs of the default design; median of {args.repeats} reads")
    for label, action in rows:
        print(f"{median_ms(action, args.repeats):9.2f} ms  {label}")
    service.shutdown()
    store.close()


if __name__ == "__main__":
    main()
