"""What the store costs on SQLite and on PostgreSQL, and whole runs on each, with both
durable: SQLite at ``synchronous=FULL`` (a disk sync per commit) and PostgreSQL with
``fsync=on``. Prints figures, never a test.

    python bench/store_backends.py [--events 1000] [--runs 4] [--repeats 5]
    STEPWISE_DATABASE_URL=postgresql://... python bench/store_backends.py   # a server of yours

Without STEPWISE_DATABASE_URL it starts a throwaway PostgreSQL on loopback with fsync on
(``tests/support_procs/postgres_server.py``; the tests run theirs with fsync off). The
settings each side runs with are read back from the live connections and printed.

For each backend: appending ``--events`` events (one transaction each, as a lone event
is written), reading them back, listing runs. Then whole offline runs through one run
service per backend (store and checkpoints on it), one run at a time, the backends
interleaved in ``--repeats`` rounds of ``--runs`` runs: the median time per run on each,
their spread, and the ratio. Target (issue 33.9): PostgreSQL <= 1.3x SQLite at FULL.
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
from bench.fairness import load, spread, sqlite_settings  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402

QUESTION = "How did Tesla's stock do in 2008?"
TARGET = 1.3


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


def durable_sqlite(service: RunService) -> dict[str, str]:
    """Both of a SQLite service's files synced at each commit (the product runs them at
    NORMAL); their settings as the live connections report them."""
    store_conn = service.store.database._conn  # type: ignore[attr-defined]
    saver_conn = service.checkpointer.conn
    for conn in (store_conn, saver_conn):
        conn.execute("PRAGMA synchronous=FULL")
    store, saver = sqlite_settings(store_conn), sqlite_settings(saver_conn)
    return {f"store {k}": v for k, v in store.items()} | {
        f"checkpoints {k}": v for k, v in saver.items()
    }


def postgres_settings(store: Store) -> dict[str, str]:
    return {
        name: str(store.database.query(f"SHOW {name}")[0][0])
        for name in ("fsync", "synchronous_commit", "wal_sync_method", "server_version")
    }


def micro(name: str, store: Store, events: int) -> None:
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
    print(
        f"  {name:<11} append {events} events one by one: {append_s / events * 1e3:5.2f} ms "
        f"each | read them: {read_s * 1e3:5.0f} ms | list 50 runs: {list_s * 1e3:5.1f} ms"
    )


def one_round(service: RunService, runs: int) -> tuple[float, int]:
    """Seconds per run over ``runs`` runs taken one at a time, and how many finished."""
    done = 0
    start = time.perf_counter()
    for _ in range(runs):
        run_id = service.start(QUESTION, Design())
        done += service.wait(run_id, timeout=300).status == "done"
    return (time.perf_counter() - start) / runs, done


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=4, help="runs per backend per round")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args()
    url = os.environ.pop("STEPWISE_DATABASE_URL", None)
    server = None
    if not url:
        from tests.support_procs import postgres_server

        server = postgres_server.start(fsync=True)
        url = server.create_database()
    try:
        with tempfile.TemporaryDirectory() as home:
            os.environ["STEPWISE_HOME"] = home
            base = {"home": Path(home), "provider": "scripted"}
            lite = Settings(**base)
            pg = Settings(**base, database_url=url)
            services = {
                "SQLite": RunService(Store.open(lite), lite, timeout_tick_s=0),
                "PostgreSQL": RunService(Store.open(pg), pg, timeout_tick_s=0),
            }
            try:
                print(f"load average before: {load()}")
                print("settings:")
                print(
                    "  SQLite      "
                    + ", ".join(f"{k}={v}" for k, v in durable_sqlite(services["SQLite"]).items())
                )
                pg_settings = postgres_settings(services["PostgreSQL"].store)
                print("  PostgreSQL  " + ", ".join(f"{k}={v}" for k, v in pg_settings.items()))
                for name, service in services.items():
                    micro(name, service.store, args.events)
                for service in services.values():
                    one_round(service, 1)  # warm: imports, first compile, first connections
                times: dict[str, list[float]] = {name: [] for name in services}
                finished = dict.fromkeys(services, 0)
                for _ in range(args.repeats):
                    for name, service in services.items():
                        per_run, done = one_round(service, args.runs)
                        times[name].append(per_run)
                        finished[name] += done
                total = args.repeats * args.runs
                for name, values in times.items():
                    s = spread(values)
                    print(
                        f"  {name:<11} a whole offline run: median {s['median'] * 1e3:6.1f} ms "
                        f"(IQR {s['q1'] * 1e3:.1f}-{s['q3'] * 1e3:.1f}, min {s['min'] * 1e3:.1f}, "
                        f"max {s['max'] * 1e3:.1f}; {finished[name]}/{total} done)"
                    )
                ratios = [p / q for p, q in zip(times["PostgreSQL"], times["SQLite"])]
                r = spread(ratios)
                print(
                    f"PostgreSQL / SQLite (fsync on both), per round: median {r['median']:.2f}x "
                    f"(min {r['min']:.2f}, max {r['max']:.2f}); target <= {TARGET}x: "
                    + ("met" if r["median"] <= TARGET else "NOT met")
                )
                print(f"load average after: {load()} (no claim at a load of 2 or more)")
            finally:
                for service in services.values():
                    service.shutdown()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
