"""What a run asks PostgreSQL, on the real server: nothing the run's own process already
knows is read back, and the runs row is written once per event batch.

Counted, not timed: row versions by a trigger of the test's own on ``runs``, statements
by libpq's trace of the store's connection."""

from __future__ import annotations

import threading
import time

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from psycopg import pq
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from graph.kernel.design import Design
from graph.kernel.postgres_checkpoints import open_postgres_checkpointer
from graph.kernel.postgres_saver import BatchedPostgresSaver
from graph.service.leases import LeaseGuardedSaver, LeaseLost, Leases
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.test_postgres_prepared import waits_of
from tests.unit.test_postgres_saver import _sent_while
from tests.unit.test_store import design, state_record, update_record

# A row of ``runs_written`` for each row version an UPDATE of ``runs`` makes.
_COUNT_UPDATES = """
CREATE TABLE runs_written (run_id TEXT);
CREATE FUNCTION runs_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runs_written VALUES (NEW.id);
    RETURN NEW;
END $$;
CREATE TRIGGER runs_written AFTER UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION runs_written();
"""


@pytest.fixture
def pg_store(tmp_path, postgres_url):
    store = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    store.create_run("r1", "question?", design(), "offline scripted model", owner="a", lease_s=60)
    with store.database.connection() as conn:
        conn.execute(_COUNT_UPDATES)
    yield store
    store.close()


@pytest.fixture
def saver(postgres_url):
    made = open_postgres_checkpointer(postgres_url)  # its tables made
    yield made
    made.conn.close()


@pytest.fixture
def one_connection(postgres_url):
    """A pool of one connection, as the checkpointer's: libpq's trace of it sees all."""
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    pool = ConnectionPool(postgres_url, min_size=1, max_size=1, kwargs=kwargs, open=True)
    yield pool
    pool.close()


def _written(store: Store) -> int:
    return int(store.database.query("SELECT count(*) FROM runs_written")[0][0])


def test_an_event_batch_writes_the_runs_row_once(pg_store):
    """A batch of a run held by its writer locks the runs row until its commit, as the
    fence does, and writes it once: the check's UPDATE sets the snapshot its last state
    carries (it also wrote a version of its own before, ``owner = owner``). A batch with
    no state only locks it. A batch of a run held by another is refused, nothing
    stored, the row unchanged."""
    batch = [{**update_record(1, "n1", []), "key": "update:n1"}, state_record(2, 3, {})]
    assert pg_store.append_events("r1", batch, owner="a") == [1, 2]
    assert _written(pg_store) == 1
    assert pg_store.run("r1").counts == {"steps": 3, "replans": 0}  # its snapshot, set
    assert pg_store.append_events("r1", [update_record(3, "n2", [])], owner="a") == [3]
    assert _written(pg_store) == 1  # locked, not written
    with pytest.raises(LeaseLost):
        pg_store.append_events("r1", [state_record(4, 5, {})], owner="b")
    assert _written(pg_store) == 1
    assert [e["seq"] for e in pg_store.events("r1")] == [1, 2, 3]
    assert pg_store.run("r1").counts == {"steps": 3, "replans": 0}


def _waits(trace) -> int:
    """The waits for the server in libpq's trace (``trace``, a file): each Query, Sync or
    Flush the client sent (a Flush right after a Sync: the same wait)."""
    return len(waits_of(trace))


def _traced(store: Store, trace, action):
    """``action()`` on this thread's connection of the store's pool (what the store asks
    from this thread goes on it), traced by libpq into ``trace``; what it returned."""
    with store.database.connection() as conn, trace.open("w") as sink:
        conn.pgconn.trace(sink.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            return action()
        finally:
            conn.pgconn.untrace()


def test_a_new_run_s_record_is_not_read_back(pg_store, tmp_path):
    """Recording a run is its INSERT alone (one wait): the record returned is made from
    the values written, as the database stores them (a NUL as U+FFFD), equal to the one
    read afterwards."""
    pg_store.database.clock()  # the server's clock read: not what is counted
    trace = tmp_path / "libpq.trace"
    made = _traced(
        pg_store,
        trace,
        lambda: pg_store.create_run(
            "r2",
            "what\x00now?",
            design(),
            "offline scripted model",
            prompt_versions={"planner": 3},
            parent_run="r1",
            parent_checkpoint="c1",
            owner="a",
            lease_s=60,
        ),
    )
    assert _waits(trace) == 1
    assert made == pg_store.run("r2")
    assert made.question == "what\ufffdnow?" and made.prompt_versions == {"planner": 3}


def test_a_lease_just_taken_here_is_not_asked_for_again(pg_store, tmp_path):
    """The worker of a run this process just recorded, owned and leased, counts that as
    its lease's first confirmation: its first check asks nothing of the store (it renewed
    the lease just taken, a synced commit). A lease not taken here, or taken more than
    half a lease ago, is asked for, and one another owner holds is lost."""
    leases = Leases(pg_store, "a", lease_s=60)
    trace = tmp_path / "libpq.trace"
    pg_store.create_run("r2", "q?", design(), "offline", owner="a", lease_s=60)
    leases.claimed("r2", "a", time.monotonic())
    leases.hold("r2")
    _traced(pg_store, trace, lambda: leases.check("r2"))
    assert _waits(trace) == 0
    leases.hold("r1")  # held, not claimed here: asked
    _traced(pg_store, trace, lambda: leases.check("r1"))
    assert _waits(trace) == 2  # the renewal, pipelined with BEGIN, then COMMIT
    pg_store.create_run("r3", "q?", design(), "offline", owner="a", lease_s=60)
    leases.claimed("r3", "a", time.monotonic() - 31)  # half a lease ago: asked again
    leases.hold("r3")
    _traced(pg_store, trace, lambda: leases.check("r3"))
    assert _waits(trace) == 2
    pg_store.create_run("r4", "q?", design(), "offline", owner="b", lease_s=60)
    leases.claimed("r4", "b", time.monotonic())
    leases.hold("r4")  # as this process's owner, not the one that took it: asked, lost
    with pytest.raises(LeaseLost):
        leases.check("r4")


def test_a_run_reads_back_nothing_its_process_just_wrote(tmp_path):
    """A whole run recorded and driven by one service, every statement of its store
    traced (SQLite's own trace; the code is the same on PostgreSQL): its runs row read
    once as it ends (by ``wait``, the caller's), neither at its record, nor for its
    prompt versions, nor its first seq (a run just recorded has no event), and its lease
    not renewed by its worker as it starts (just taken), nor for the status its end
    event, stored here, has just set; its checkpoints read once, at
    its end (its thread and its subgraphs' hold nothing when they start: ``NewThreads``)."""
    settings = Settings(home=tmp_path, provider="scripted")
    service = RunService(Store.open(settings), settings, timeout_tick_s=0)
    seen: list[tuple[str, str]] = []
    read: list[str] = []
    try:
        conn = service.store.database._conn
        conn.set_trace_callback(
            lambda sql: seen.append((threading.current_thread().name, " ".join(sql.split())))
        )
        checkpoints = service.checkpointer.conn
        checkpoints.set_trace_callback(lambda sql: read.append(sql) if "SELECT" in sql else None)
        run_id = service.start("How did Tesla's stock do in 2008?", Design())
        assert service.wait(run_id, timeout=120).status == "done"
        conn.set_trace_callback(None)
        checkpoints.set_trace_callback(None)
    finally:
        service.shutdown()
    # the run's worker and the threads storing its events, not the heartbeat's renewals
    by_worker = [sql for thread, sql in seen if thread not in ("MainThread", "stepwise-run-leases")]
    reads = [sql for _, sql in seen if sql.startswith("SELECT id, question")]
    assert len(reads) == 1, reads  # wait's
    assert not [sql for sql in by_worker if sql.startswith("SELECT MAX(seq)")]
    assert not [sql for sql in by_worker if "lease_until" in sql and "owner = NULL" not in sql]
    statuses = [sql for sql in by_worker if sql.startswith("UPDATE runs SET status")]
    assert any("'running'" in sql for sql in statuses), statuses  # the worker's, traced
    # one checkpoint read: its end's state; not its stream's start nor its subgraphs'
    assert len([sql for sql in read if sql.startswith("SELECT thread_id, checkpoint_ns")]) == 1


def test_a_new_run_s_checkpoint_namespaces_are_not_read_until_written(
    pg_store, saver, one_connection, tmp_path
):
    """While a new run's first leg is driven (``NewThreads.driving``), LangGraph's read
    of a namespace of its thread nothing has been written to (the stream's start, each
    subgraph's) is answered with nothing, no statement sent; a namespace once written,
    the same thread after the leg, and a thread not new are read from the database."""
    guarded = LeaseGuardedSaver(
        BatchedPostgresSaver(one_connection, serde=saver.serde), Leases(pg_store, "a", 60)
    )
    trace = tmp_path / "libpq.trace"

    def where(thread: str, ns: str = "") -> dict:
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}

    with guarded.new_threads.driving("t1"):
        for ns in ("", "researcher:task-1"):
            sent, found = _sent_while(
                one_connection, trace, lambda ns=ns: guarded.get_tuple(where("t1", ns))
            )
            assert (sent, found) == ([], None)
        stored = guarded.put(where("t1"), empty_checkpoint(), {"source": "input", "step": -1}, {})
        sent, found = _sent_while(one_connection, trace, lambda: guarded.get_tuple(where("t1")))
        assert sent and found is not None and found.config == stored  # read: written
        sent, _ = _sent_while(
            one_connection, trace, lambda: guarded.get_tuple(where("t1", "researcher:task-1"))
        )
        assert sent == []
    sent, found = _sent_while(
        one_connection, trace, lambda: guarded.get_tuple(where("t1", "researcher:task-1"))
    )
    assert sent and found is None  # after the leg: asked
    guarded.put(where("t2"), empty_checkpoint(), {"source": "input", "step": -1}, {})
    with guarded.new_threads.driving("t2", new=False):
        sent, found = _sent_while(one_connection, trace, lambda: guarded.get_tuple(where("t2")))
        assert sent and found is not None
