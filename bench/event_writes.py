"""What storing a run's events costs, alone and beside a busy thread, one per transaction
and in batches. Prints figures, never a test.

    python bench/event_writes.py [--events 2000] [--batch 5]

A run's events are written while its other threads (LangGraph's node and checkpoint
threads) want the interpreter. Every SQLite call, and the write lock's ``flock``, lets go
of the GIL, so each transaction hands the interpreter over several times: this is why
``continue_run`` hands events to the store in batches (``Store.append_events``). The
bench stores ``--events`` small events (a tool call's timing, as a run logs one per tool
run) into a fresh SQLite store, in four ways: one per transaction or ``--batch`` per
transaction, with nothing else running or beside a thread that keeps the interpreter
busy. Figures: CPU and wall time per event of the writing thread.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graph.kernel.design import Design  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402


def tool_event(seq: int) -> dict:
    return {
        "seq": seq,
        "ts": time.time(),
        "kind": "custom",
        "node": "",
        "namespace": "web_researcher:1",
        "step": 1,
        "data": {"tool_call": {"tool_call_id": f"call_{seq}", "name": "search", "latency_s": 0.01}},
        "key": None,
    }


class Busy:
    """A thread that keeps the interpreter busy (pure Python) until stopped."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)

    def _spin(self) -> None:
        while not self._stop.is_set():
            sum(range(200))

    def __enter__(self) -> Busy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def write(store: Store, events: int, batch: int) -> tuple[float, float]:
    """CPU and wall seconds of this thread per event, ``events`` stored ``batch`` at a time."""
    run_id = uuid.uuid4().hex
    store.create_run(run_id, "q", Design(), "bench")
    records = [tool_event(seq) for seq in range(1, events + 1)]
    cpu, wall = time.thread_time(), time.perf_counter()
    for start in range(0, events, batch):
        store.append_events(run_id, records[start : start + batch])
    return (time.thread_time() - cpu) / events, (time.perf_counter() - wall) / events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stepwise-bench-") as home:
        store = Store.open(Settings(home=Path(home)))
        try:
            write(store, 200, 1)  # warm-up: tables, indexes, the write lock's file
            print(
                f"{args.events} small events into a SQLite store; CPU and wall time of the "
                "writing thread per event"
            )
            print(f"{'':34s} {'CPU us/event':>12} {'wall us/event':>13}")
            for busy in (False, True):
                for batch in (1, args.batch):
                    if busy:
                        with Busy():
                            cpu, wall = write(store, args.events, batch)
                    else:
                        cpu, wall = write(store, args.events, batch)
                    label = (
                        f"{'beside a busy thread' if busy else 'alone':20s} "
                        f"{'1' if batch == 1 else batch} per commit"
                    )
                    print(f"{label:34s} {cpu * 1e6:12.0f} {wall * 1e6:13.0f}")
        finally:
            store.close()


if __name__ == "__main__":
    main()
