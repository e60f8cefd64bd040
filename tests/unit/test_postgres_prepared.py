"""A running run's event batch on PostgreSQL as EXECUTEs of statements prepared on the
connection (``graph/service/postgres_prepared.py``), on the real server: planned once
per connection, and stored whole after each way the connection's prepared statements
can differ from what the store knew (a rollback's ``DEALLOCATE ALL``, a batch refused
after its ``PREPARE``s ran, a connection the server closed)."""

from __future__ import annotations

import psycopg
import pytest

from graph.service.store import Store
from graph.settings import Settings
from tests.unit.conftest import wait_for
from tests.unit.test_store import design, state_record, update_record


@pytest.fixture
def pg_store(tmp_path, postgres_url):
    store = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    store.create_run("r1", "question?", design(), "offline scripted model", owner="a", lease_s=60)
    yield store
    store.close()


def held(conn) -> dict[str, int]:
    """The connection's prepared batch statements: name -> plans made or reused."""
    rows = conn.execute(
        "SELECT name, generic_plans + custom_plans AS plans FROM pg_prepared_statements "
        "WHERE starts_with(name, 'stepwise_')"
    ).fetchall()
    return {row["name"]: row["plans"] for row in rows}


def keyed(seq: int, node: str) -> dict:
    return {**update_record(seq, node, []), "key": f"update:{node}"}


def test_a_batch_s_statements_are_planned_once_per_connection(pg_store):
    """Each statement text of the batches is prepared once on the connection and its plan
    kept (one entry per text, its plan made or reused once per execution), where the
    simple protocol parsed and planned each statement of each batch. A refused batch
    leaves them prepared, and the store knows it."""
    with pg_store.database.connection() as conn:
        for first in (1, 3, 5, 7):
            batch = [keyed(first, f"n{first}"), state_record(first + 1, 1, {})]
            assert pg_store.append_events("r1", batch, owner="a") == [first, first + 1]
        behind = [keyed(2, "late")]
        assert pg_store.append_events("r1", behind, owner="a") == [9]  # refused, read first
        plans = held(conn)
    # the check that the run is held, carrying the runs row's snapshot (the four batches
    # with a state), the check only locking the row (the refused batch, no state), the
    # events' INSERT (two events each in the four stored)
    assert sorted(plans.values()) == [1, 4, 8], plans
    assert pg_store.nodes_run("r1") == ["n1", "n3", "n5", "n7", "late"]


def test_a_batch_after_a_rollback_deallocated_everything_is_stored_whole(pg_store):
    """psycopg sends DEALLOCATE ALL after a rollback on a connection where it prepared a
    statement of its own: the batch statements the store knew held are gone. The next
    batch, with a statement text new to the connection beside known ones, is stored
    once, whole (it failed with DuplicatePreparedStatement when the store forgot every
    name after the first try but the new one had been prepared by it)."""
    with pg_store.database.connection() as conn:
        first = [state_record(1, 1, {})]  # the check (with the snapshot) without keys, the INSERT
        assert pg_store.append_events("r1", first, owner="a") == [1]
        before = set(held(conn))
        conn.execute("SELECT 1", prepare=True)  # psycopg's own prepared statement
        with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
            conn.execute("SELECT 1 / 0")  # rolled back: psycopg deallocates all
        assert held(conn) == {}
        second = [keyed(2, "n2"), state_record(3, 2, {})]  # the check with keys: new
        assert pg_store.append_events("r1", second, owner="a") == [2, 3]
        after = set(held(conn))  # the INSERT again, the new check
        assert len(after) == 2 and len(after & before) == 1, (before, after)
    assert [e["seq"] for e in pg_store.events("r1")] == [1, 2, 3]
    assert pg_store.nodes_run("r1") == ["n2"]
    assert pg_store.run("r1").counts == {"steps": 2, "replans": 0}


def waits_of(trace) -> list[str]:
    """The messages of libpq's trace (``trace``, a file) the client waited on the server
    after: each Query, Sync or Flush (a Flush right after a Sync: the same wait)."""
    messages = [
        (m[0], m[2].split()[0]) for m in (x.split("\t") for x in trace.read_text().splitlines())
    ]
    return [
        name
        for i, (side, name) in enumerate(messages)
        if side == "F" and name in ("Query", "Sync", "Flush") and messages[i - 1] != ("F", "Sync")
    ]


def test_a_batch_refused_after_its_statements_were_prepared_leaves_the_next_one_stored(
    pg_store, tmp_path, postgres_url
):
    """A batch's PREPAREs go in its own message, before its EXECUTEs, and PostgreSQL
    keeps them when a later statement fails (not transactional): a first batch refused
    (behind the log) leaves its statements held, and the store, not knowing which ran,
    reads them from the server before the connection's next batch, which sends no
    PREPARE of them again: two waits, none failing, and it is stored."""
    from psycopg import pq

    other = Store.open(Settings(home=tmp_path, provider="scripted", database_url=postgres_url))
    note = {**update_record(1, "", []), "kind": "custom", "data": {"note": "from elsewhere"}}
    assert other.append_events("r1", [note], owner="a") == [1]  # on another connection
    other.close()
    pg_store.create_run(
        "r2", "question?", design(), "offline scripted model", owner="a", lease_s=60
    )
    trace = tmp_path / "libpq.trace"
    with pg_store.database.connection() as conn, trace.open("w") as sink:
        assert held(conn) == {}
        behind = [keyed(1, "n1"), state_record(2, 1, {})]
        assert pg_store.append_events("r1", behind, owner="a") == [2, 3]  # refused, read first
        assert sorted(held(conn).values()) == [0, 1]  # the check ran, refusing the rest
        conn.pgconn.trace(sink.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            batch = [keyed(1, "m1"), state_record(2, 1, {})]  # r1's next go the other way
            assert pg_store.append_events("r2", batch, owner="a") == [1, 2]
        finally:
            conn.pgconn.untrace()
        assert sorted(held(conn).values()) == [2, 2]  # the check refused once, then ran
    assert waits_of(trace) == ["Sync", "Query"]  # what the connection holds; the batch
    assert pg_store.nodes_run("r1") == ["n1"]
    assert pg_store.nodes_run("r2") == ["m1"]


def test_a_connection_the_server_closed_is_prepared_again(pg_store, postgres_url):
    """The server closes the store's connections (a restart, an administrator): the next
    batch goes on a new connection, which holds none of the statements, and is stored,
    its statements prepared there."""
    assert pg_store.append_events("r1", [keyed(1, "n1"), state_record(2, 1, {})], owner="a") == [
        1,
        2,
    ]
    others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert admin.execute(f"SELECT count(pg_terminate_backend(pid)) {others}").fetchone()[0]
        wait_for(  # gone, their farewell sent: not a statement in flight cut off
            lambda: admin.execute(f"SELECT count(*) {others}").fetchone()[0] == 0,
            timeout=30,
            what="the store's connections to be closed",
        )
    with pg_store.database.connection() as conn:
        assert pg_store.append_events(
            "r1", [keyed(3, "n2"), state_record(4, 2, {})], owner="a"
        ) == [
            3,
            4,
        ]
        assert sorted(held(conn).values()) == [1, 2]  # prepared on this connection
    assert pg_store.nodes_run("r1") == ["n1", "n2"]


def test_a_batch_inside_a_transaction_goes_as_its_statements(pg_store):
    """On a connection inside a transaction of this thread, a failed EXECUTE would end
    that transaction, and the batch could not be sent again: its statements go as
    themselves, nothing prepared, stored with the transaction."""
    with pg_store.database.connection() as conn, pg_store.database.transaction():
        batch = [keyed(1, "n1"), state_record(2, 1, {})]
        assert pg_store.append_events("r1", batch, owner="a") == [1, 2]
        assert held(conn) == {}
    assert pg_store.nodes_run("r1") == ["n1"]
