"""The PostgreSQL store's connections (graph/service/postgres_database.py): a pool, so one
thread's open transaction (a run's write waiting on its commit) does not hold up another
thread's reads and writes; a thread inside a transaction keeps its own connection; a
lone write costs one round trip. A real PostgreSQL server (the ``postgres`` fixture)."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from psycopg import pq

from graph.kernel.design import Design
from graph.service.store import Store
from graph.settings import Settings

# A deadlock guard, not a timing: with one connection under a lock, the other thread's
# read waits for the transaction, which waits for that read, until this runs out.
GUARD_S = 20


@pytest.fixture
def store(tmp_path, postgres_url) -> Store:
    s = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    s.create_run("r1", "question?", Design(), "offline scripted model")
    yield s
    s.close()


def test_another_thread_reads_and_writes_while_a_transaction_is_open(store):
    """A page reading the runs table, or another run writing its events, while a run's
    transaction is open: each on a connection of its own, the open transaction's
    writes unseen until it commits."""
    opened, others_done = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def writer() -> None:
        with store.database.transaction() as tx:
            tx.execute("UPDATE runs SET reason = ? WHERE id = ?", ("uncommitted", "r1"))
            opened.set()
            seen["others_done_first"] = others_done.wait(GUARD_S)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert opened.wait(GUARD_S)
        seen["reason_meanwhile"] = store.run("r1").reason
        store.create_run("r2", "another?", Design(), "offline scripted model")
    finally:
        others_done.set()
        thread.join()
    assert seen == {"others_done_first": True, "reason_meanwhile": ""}
    assert store.run("r1").reason == "uncommitted"  # committed once the block ended
    assert store.run("r2").question == "another?"


def test_what_a_thread_asks_inside_its_transaction_sees_the_transaction_s_writes(store):
    """A read (or a nested write) asked inside an open transaction goes on the
    transaction's own connection: it sees what the transaction wrote, and a failed
    transaction takes back everything asked inside it."""
    with store.database.transaction() as tx:
        tx.execute("UPDATE runs SET reason = ? WHERE id = ?", ("inside", "r1"))
        assert store.run("r1").reason == "inside"
    assert store.run("r1").reason == "inside"

    with pytest.raises(RuntimeError, match="given up"):
        with store.database.transaction() as tx:
            tx.execute("UPDATE runs SET reason = ? WHERE id = ?", ("taken back", "r1"))
            store.database.execute("UPDATE runs SET model_label = ? WHERE id = ?", ("x", "r1"))
            raise RuntimeError("given up")
    record = store.run("r1")
    assert (record.reason, record.model_label) == ("inside", "offline scripted model")


def test_a_single_write_costs_one_round_trip_and_is_committed(store, postgres_url, tmp_path):
    """A write on its own needs no BEGIN and COMMIT of its own (PostgreSQL commits a
    lone statement): one wait for the server, counted in libpq's trace of the messages
    sent, and committed (another connection reads it)."""
    trace = tmp_path / "libpq.trace"
    with store.database.connection() as conn, trace.open("w") as sink:
        conn.pgconn.trace(sink.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            changed = store.database.execute(
                "UPDATE runs SET reason = ? WHERE id = ?", ("written", "r1")
            )
        finally:
            conn.pgconn.untrace()
    sent = [line.split("\t")[2].split()[0] for line in trace.read_text().splitlines()]
    assert changed.rowcount == 1
    assert [m for m in sent if m in ("Sync", "Flush", "Query")] == ["Sync"], sent
    with psycopg.connect(postgres_url) as other:
        row = other.execute("SELECT reason FROM runs WHERE id = 'r1'").fetchone()
    assert row == ("written",)


def test_connections_the_server_closed_are_replaced_for_each_thread(store, postgres):
    """A server restart closes every pooled connection: each is replaced before it is
    handed out again, for reads and writes, from any thread."""
    opened, read = threading.Event(), threading.Event()

    def hold_one() -> None:  # a second connection: this one's, while the main thread reads
        with store.database.transaction():
            opened.set()
            read.wait(GUARD_S)

    holder = threading.Thread(target=hold_one)
    holder.start()
    try:
        assert opened.wait(GUARD_S)
        store.run("r1")
    finally:
        read.set()
        holder.join()
    with psycopg.connect(postgres.admin_url, autocommit=True) as admin:
        database = store.database.url.rsplit("/", 1)[1]
        cut = admin.execute(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (database,),
        ).fetchall()
        # pg_terminate_backend only signals: a backend still exiting has not yet said so
        # on its socket, and its connection would look idle and alive. A restart is over
        # when the old backends are gone (what "closed" means here); wait for that.
        pids = [pid for pid, _ in cut]
        deadline = time.monotonic() + GUARD_S
        while admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)
        ).fetchone() != (0,):
            assert time.monotonic() < deadline, "the terminated backends did not exit"
            time.sleep(0.05)
    assert len(cut) >= 2
    results: list[str] = []

    def use() -> None:
        store.set_run_status("r1", "running")
        results.append(store.run("r1").status)

    threads = [threading.Thread(target=use) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["running"] * 3


def test_a_lease_renewal_costs_two_round_trips_and_says_which_runs_it_kept(store, tmp_path):
    """The lease holder's heartbeat: one statement renewing its runs and naming them, its
    BEGIN sent with it and its COMMIT after (it was BEGIN, UPDATE, SELECT, COMMIT)."""
    store.create_run("mine", "q", Design(), "m", owner="a", lease_s=60)
    store.create_run("theirs", "q", Design(), "m", owner="b", lease_s=60)
    before = {r: store.run_lease(r)[1] for r in ("mine", "theirs")}
    trace = tmp_path / "libpq.trace"
    with store.database.connection() as conn, trace.open("w") as sink:
        conn.pgconn.trace(sink.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            kept = store.keep_leases("a", ["mine", "theirs", "r1", "gone"], 600)
        finally:
            conn.pgconn.untrace()
    messages = [
        tuple(line.split("\t")[i] for i in (0, 2)) for line in trace.read_text().splitlines()
    ]
    sent = [name.split()[0] for side, name in messages if side == "F"]
    waits = [
        m for i, m in enumerate(sent) if m in ("Query", "Sync", "Flush") and sent[i - 1] != "Sync"
    ]
    assert kept == {"mine"}
    assert waits == ["Flush", "Sync"], sent  # (the server's clock was read before)
    assert store.run_lease("mine")[1] > before["mine"] + 500
    assert store.run_lease("theirs")[1] == before["theirs"]


def test_the_server_s_clock_is_read_once_and_carried_on_between_reads(store, tmp_path):
    """Each lease write asks the time by the server's clock: read from the server once,
    then carried on by this process's monotonic clock (no round trip), agreeing with the
    server's."""
    trace = tmp_path / "libpq.trace"
    with store.database.connection() as conn, trace.open("w") as sink:
        conn.pgconn.trace(sink.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            times = [store.lease_clock() for _ in range(3)]
        finally:
            conn.pgconn.untrace()
        server = conn.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())").fetchone()[0]
    sent = [line.split("\t")[2].split()[0] for line in trace.read_text().splitlines()]
    assert [m for m in sent if m in ("Query", "Sync", "Flush")] == ["Query"], sent
    assert times == sorted(times)
    assert abs(float(server) - times[-1]) < 1.0


def test_with_every_pooled_connection_busy_a_statement_opens_one_of_its_own(
    tmp_path, postgres_url, monkeypatch
):
    """More runs at once than the pool has connections, each inside a transaction: a
    statement that waited its time for one opens a connection of its own instead of
    failing as if the database had gone away."""
    from graph.service import postgres_database

    monkeypatch.setattr(postgres_database, "POOL_SIZE", 2)
    monkeypatch.setattr(postgres_database, "POOL_WAIT_S", 0.2)
    store = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    store.create_run("r1", "question?", Design(), "offline scripted model")
    opened = [threading.Event() for _ in range(2)]
    release = threading.Event()

    def hold(event: threading.Event) -> None:
        with store.database.transaction():
            event.set()
            release.wait(GUARD_S)

    holders = [threading.Thread(target=hold, args=(e,)) for e in opened]
    for t in holders:
        t.start()
    try:
        assert all(e.wait(GUARD_S) for e in opened)
        store.set_run_status("r1", "running")
        status = store.run("r1").status
    finally:
        release.set()
        for t in holders:
            t.join()
        store.close()
    assert status == "running"
