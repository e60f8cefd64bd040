"""What the store costs on SQLite and on PostgreSQL, and whole runs on each. Prints
figures, never a test.

    python bench/store_backends.py [--events 2000] [--runs 6]
    STEPWISE_DATABASE_URL=postgresql://... python bench/store_backends.py   # a server of yours

Without STEPWISE_DATABASE_URL it starts a throwaway PostgreSQL on loopback (as the tests
do, ``tests/support_procs/postgres_server.py``; fsync off there, so it flatters
PostgreSQL's writes). For each backend: appending ``--events`` events (one transaction
each, as a run's worker does), reading them back, listing runs; then ``--runs`` offline
runs through one run service (store and checkpoints on that backend), wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import graph.registry  # noqa: E402,F401
from graph.kernel.design import Design  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402


def event(seq: int) -> dict:
    return {
        "seq": seq,
        "ts": time.time(),
        "kind": "update",
        "node": "executor",
        "namespace": "",
        "step": 1,
        "data": {"messages": [{"id": f"m{seq}", "content": "x" * 400, "step": 1}]},
        "key": f"update:{seq}",
    }


def measure(name: str, settings: Settings, events: int, runs: int) -> None:
    store = Store.open(settings)
    store.create_run("bench", "q", Design(), "m")
    start = time.perf_counter()
    for seq in range(1, events + 1):
        store.append_event("bench", event(seq))
    append_s = time.perf_counter() - start
    start = time.perf_counter()
    assert len(store.events("bench")) == events
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(100):
        store.runs(limit=50)
    list_s = (time.perf_counter() - start) / 100
    service = RunService(store, settings, timeout_tick_s=0)
    start = time.perf_counter()
    ids = [service.start("How did Tesla's stock do in 2008?", Design()) for _ in range(runs)]
    statuses = [service.wait(run_id, timeout=300).status for run_id in ids]
    runs_s = time.perf_counter() - start
    service.shutdown()
    print(
        f"{name:<11} append {events} events: {append_s:6.2f} s ({append_s / events * 1e3:5.2f} ms "
        f"each) | read them: {read_s * 1e3:6.0f} ms | list 50 runs: {list_s * 1e3:5.1f} ms | "
        f"{runs} offline runs: {runs_s:5.1f} s ({statuses.count('done')} done)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    url = os.environ.pop("STEPWISE_DATABASE_URL", None)
    server = None
    if not url:
        from tests.support_procs import postgres_server

        server = postgres_server.start()
        url = server.create_database()
    try:
        with tempfile.TemporaryDirectory() as home:
            os.environ["STEPWISE_HOME"] = home
            base = {"home": Path(home), "provider": "scripted"}
            measure("SQLite", Settings(**base), args.events, args.runs)
            measure("PostgreSQL", Settings(**base, database_url=url), args.events, args.runs)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
