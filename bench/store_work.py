"""Where a whole offline run's store and checkpoint work goes, on PostgreSQL and on SQLite:
counted, not timed. Prints figures, never a test.

    python bench/store_work.py [--runs 5] [--top 25]

On PostgreSQL (a throwaway server, fsync on, ``pg_stat_statements`` loaded): per run, each
statement's calls, plans, plan and execution time, rows and WAL records; the database's
commits (``pg_stat_database.xact_commit``, read-only ones included) and WAL syncs
(``pg_stat_wal.wal_sync``); the CPU time of the server's processes. On SQLite (WAL,
``synchronous=FULL`` as ``store_backends.py`` runs it): per run, the statements each of
the two files' connections runs and the commits (writes), read from SQLite's own trace
of the statements it runs.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import graph.registry  # noqa: E402,F401
from bench.fairness import load  # noqa: E402
from bench.store_backends import QUESTION, durable_sqlite  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402
from tests.support_procs import postgres_server  # noqa: E402

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def runs(service: RunService, count: int) -> None:
    for _ in range(count):
        run_id = service.start(QUESTION, Design())
        assert service.wait(run_id, timeout=300).status == "done"


def server_cpu(server: postgres_server.PostgresServer) -> dict[int, float]:
    """CPU seconds (user + system) of each of the server's processes now."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid == postmaster or ppid == postmaster:
            found[pid] = (int(fields[11]) + int(fields[12])) / tick
    return found


def admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def pg_side(count: int, top: int, home: Path) -> None:
    server = postgres_server.start(fsync=True)
    try:
        with admin(server.admin_url) as db:
            db.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        server.halt()
        server.restart()
        with admin(server.admin_url) as db:
            db.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
            db.execute("SELECT pg_reload_conf()")
        url = server.create_database()
        with admin(url) as db:
            db.execute("CREATE EXTENSION pg_stat_statements")
        settings = Settings(home=home, provider="scripted", database_url=url)
        service = RunService(Store.open(settings), settings, timeout_tick_s=0)
        try:
            runs(service, 1)  # warm: first compile, connections, statements prepared
            with admin(url) as db:
                db.execute("SELECT pg_stat_statements_reset()")
                db.execute("SELECT pg_stat_reset_shared('wal')")
                before = db.execute(
                    "SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                    (url.rsplit("/", 1)[1],),
                ).fetchone()
            cpu_before = server_cpu(server)
            start, own = time.perf_counter(), time.process_time()
            runs(service, count)
            wall, own = time.perf_counter() - start, time.process_time() - own
            cpu_after = server_cpu(server)
        finally:
            service.shutdown()  # its backends exit: their statistics are flushed
        time.sleep(1.5)
        cpu = sum(v - cpu_before.get(pid, 0.0) for pid, v in cpu_after.items())
        with admin(url) as db:
            commits = db.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                (url.rsplit("/", 1)[1],),
            ).fetchone()
            wal = db.execute("SELECT wal_records, wal_write, wal_sync FROM pg_stat_wal").fetchone()
            rows = db.execute(
                "SELECT calls, plans, total_plan_time, total_exec_time, rows, wal_records, query "
                "FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat%%' "
                "ORDER BY total_exec_time + total_plan_time DESC"
            ).fetchall()
        print(f"PostgreSQL, per run over {count} runs ({wall / count * 1e3:.1f} ms a run):")
        print(
            f"  this process's CPU {own / count * 1e3:.1f} ms, the server's {cpu / count * 1e3:.1f} ms"
        )
        print(
            f"  commits {(commits[0] - before[0]) / count:.1f}"
            f" (read-only ones included); WAL records {wal[0] / count:.1f}, writes "
            f"{wal[1] / count:.1f}, syncs {wal[2] / count:.1f}"
        )
        calls = sum(r[0] for r in rows)
        plans = sum(r[1] for r in rows)
        plan_ms = sum(r[2] for r in rows)
        exec_ms = sum(r[3] for r in rows)
        print(
            f"  statements {calls / count:.1f}, plans {plans / count:.1f}; plan {plan_ms / count:.2f}"
            f" ms, execution {exec_ms / count:.2f} ms"
        )
        print("  calls  plans  plan ms  exec ms   rows  wal  statement")
        for c, p, pt, et, n, w, q in rows[:top]:
            text = " ".join(q.split())[:110]
            print(
                f"  {c / count:5.1f} {p / count:6.1f} {pt / count:8.3f} {et / count:8.3f} "
                f"{n / count:6.1f} {w / count:4.0f}  {text}"
            )
    finally:
        server.stop()


def sqlite_side(count: int, home: Path) -> None:
    settings = Settings(home=home, provider="scripted")
    service = RunService(Store.open(settings), settings, timeout_tick_s=0)
    try:
        durable_sqlite(service)
        runs(service, 1)
        seen: dict[str, Counter[str]] = {"store": Counter(), "checkpoints": Counter()}
        conns: dict[str, sqlite3.Connection] = {
            "store": service.store.database._conn,  # type: ignore[attr-defined]
            "checkpoints": service.checkpointer.conn,
        }
        start, own = time.perf_counter(), time.process_time()
        runs(service, count)  # timed untraced, then counted
        wall, own = time.perf_counter() - start, time.process_time() - own
        for name, conn in conns.items():
            conn.set_trace_callback(tracer(seen[name]))
        runs(service, count)
        for conn in conns.values():
            conn.set_trace_callback(None)
    finally:
        service.shutdown()
    print(
        f"SQLite (synchronous=FULL), per run over {count} runs ({wall / count * 1e3:.1f} ms a "
        f"run; this process's CPU {own / count * 1e3:.1f} ms):"
    )
    for name, counts in seen.items():
        print(
            f"  {name}: statements {counts['statements'] / count:.1f}, commits "
            f"{counts['commits'] / count:.1f} (of them lone writes {counts['lone'] / count:.1f})"
        )


def tracer(counts: Counter[str]) -> Any:
    """A trace callback counting statements, and commits: COMMIT, or a write outside a
    transaction (its own)."""
    state = {"open": False}

    def trace(sql: str) -> None:
        word = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        counts["statements"] += 1
        if word == "BEGIN":
            state["open"] = True
        elif word in ("COMMIT", "END"):
            state["open"] = False
            counts["commits"] += 1
        elif word == "ROLLBACK":
            state["open"] = False
        elif word in WRITES and not state["open"]:
            counts["commits"] += 1
            counts["lone"] += 1

    return trace


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    os.environ.pop("STEPWISE_DATABASE_URL", None)
    print(f"load average before: {load()}")
    with tempfile.TemporaryDirectory() as home:
        os.environ["STEPWISE_HOME"] = home
        pg_side(args.runs, args.top, Path(home) / "pg")
        sqlite_side(args.runs, Path(home) / "lite")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
