"""The PostgreSQL checkpointer's writes (graph/kernel/postgres_saver.py): a task's writes
are one INSERT, in one round trip, read back as LangGraph's own saver reads them, a
special channel's write replacing the one before. A real PostgreSQL server (the
``postgres`` fixture) and the checkpointer the run service opens."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import ERROR, INTERRUPT, empty_checkpoint
from psycopg import pq
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from graph.kernel.postgres_checkpoints import open_postgres_checkpointer
from graph.kernel.postgres_saver import BatchedPostgresSaver, many_rows
from tests.unit.conftest import wait_for


@pytest.fixture
def saver(postgres_url):
    made = open_postgres_checkpointer(postgres_url)
    yield made
    made.conn.close()


@pytest.fixture
def one_connection(postgres_url):
    """A pool of one connection, as the checkpointer's (a real pool): libpq's trace of it
    sees every message the saver sends."""
    pool = ConnectionPool(
        postgres_url,
        min_size=1,
        max_size=1,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    yield pool
    pool.close()


def _sent_while(pool: ConnectionPool, trace: Path, action: Callable[[], Any]) -> tuple[list, Any]:
    """The frontend messages sent on ``pool``'s one connection while ``action`` ran (libpq's
    trace, written to ``trace``), and what ``action`` returned."""
    with trace.open("w") as sink:
        with pool.connection() as conn:
            conn.pgconn.trace(sink.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        result = action()
        with pool.connection() as conn:
            conn.pgconn.untrace()
    lines = [line.split("\t") for line in trace.read_text().splitlines()]
    return [m[2].split()[0] for m in lines if len(m) > 2 and m[0] == "F"], result


def test_a_task_s_writes_are_one_insert_in_one_round_trip(saver, one_connection, tmp_path):
    """Counted in libpq's trace of the messages sent on the one connection of a pool of
    one (as the checkpointer's, a real pool): LangGraph's saver binds one statement per
    write. The statement is prepared at its first use on a connection (one round trip
    more, once): the second task's writes are the ones counted."""
    traced = BatchedPostgresSaver(one_connection, serde=saver.serde)
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    stored = traced.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    writes = [("messages", ["hello"]), ("plan", {"steps": [1, 2]}), ("final_answer", "done")]
    traced.put_writes(stored, writes, task_id="task-0")
    sent, _ = _sent_while(
        one_connection,
        tmp_path / "libpq.trace",
        lambda: traced.put_writes(stored, writes, task_id="task-1"),
    )
    found = traced.get_tuple(stored)
    assert sent.count("Bind") == 1, sent
    assert [m for m in sent if m in ("Sync", "Flush", "Query")] == ["Sync"], sent
    assert found is not None
    assert found.pending_writes == [
        (task, channel, value) for task in ("task-0", "task-1") for channel, value in writes
    ]


def test_a_task_s_one_write_is_one_statement_in_one_round_trip(saver, one_connection, tmp_path):
    """A task that wrote one channel: LangGraph's saver sends its row in a pipeline under
    its lock (a Flush, then a Sync); here it is LangGraph's statement as it is, one Bind
    and one Sync, as a task's several writes are."""
    traced = BatchedPostgresSaver(one_connection, serde=saver.serde)
    config = {"configurable": {"thread_id": "t7", "checkpoint_ns": ""}}
    stored = traced.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    traced.put_writes(stored, [("messages", ["first"])], task_id="task-0")  # prepared here
    sent, _ = _sent_while(
        one_connection,
        tmp_path / "libpq.trace",
        lambda: traced.put_writes(stored, [("plan", {"steps": [1]})], task_id="task-1"),
    )
    assert sent.count("Bind") == 1, sent
    assert [m for m in sent if m in ("Sync", "Flush", "Query")] == ["Sync"], sent
    found = traced.get_tuple(stored)
    assert found is not None
    assert found.pending_writes == [
        ("task-0", "messages", ["first"]),
        ("task-1", "plan", {"steps": [1]}),
    ]


def test_a_special_channel_written_again_replaces_the_write_before(saver):
    config = {"configurable": {"thread_id": "t2", "checkpoint_ns": ""}}
    stored = saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    saver.put_writes(stored, [(ERROR, "first"), (INTERRUPT, ["asked"])], task_id="task-1")
    saver.put_writes(stored, [(ERROR, "second"), (INTERRUPT, ["asked again"])], task_id="task-1")
    saver.put_writes(stored, [("messages", ["written twice"])] * 2, task_id="task-2")
    saver.put_writes(stored, [(ERROR, "a"), (ERROR, "b")], task_id="task-3")  # the last kept
    found = saver.get_tuple(stored)
    assert found is not None
    assert sorted(found.pending_writes, key=str) == sorted(
        [
            ("task-1", ERROR, "second"),
            ("task-1", INTERRUPT, ["asked again"]),
            ("task-2", "messages", ["written twice"]),
            ("task-2", "messages", ["written twice"]),
            ("task-3", ERROR, "b"),
        ],
        key=str,
    )


def test_a_statement_of_another_shape_is_left_to_langgraph():
    one_row = "INSERT INTO t (a, b) VALUES (%s, %s) ON CONFLICT (a) DO NOTHING"
    assert many_rows(one_row, 3) == (
        "INSERT INTO t (a, b) VALUES (%s, %s), (%s, %s), (%s, %s) ON CONFLICT (a) DO NOTHING"
    )
    assert many_rows("INSERT INTO t (a) SELECT unnest(%s)", 3) is None
    assert many_rows("INSERT INTO t VALUES (%s), (%s)", 3) is None


def test_a_checkpoint_and_its_blobs_are_one_statement_in_one_round_trip(
    saver, one_connection, tmp_path
):
    """Counted in libpq's trace on a pool of one connection: LangGraph's saver binds one
    INSERT per blob and one for the checkpoint. Read back by LangGraph's own reader:
    the blobs, the inlined values, the parent and the metadata as it stores them. A
    statement is prepared at its first use on a connection (one round trip more, once):
    the second checkpoint, of as many blobs, is the one counted."""
    traced = BatchedPostgresSaver(one_connection, serde=saver.serde)
    config = {"configurable": {"thread_id": "t3", "checkpoint_ns": ""}}
    first = empty_checkpoint()
    first["channel_values"] = {"messages": ["hi"], "plan": {"steps": [1]}, "n": 1}
    versions = {"messages": "1", "plan": "1", "n": "1"}
    first["channel_versions"] = versions
    stored = traced.put(config, first, {"source": "input", "step": -1}, versions)
    second = empty_checkpoint()
    second["channel_values"] = {"messages": ["hi", "there"], "plan": {"steps": [2]}, "n": 2}
    second["channel_versions"] = {"messages": "2", "plan": "2", "n": "2"}
    sent, latest = _sent_while(
        one_connection,
        tmp_path / "libpq.trace",
        lambda: traced.put(
            stored, second, {"source": "loop", "step": 0}, second["channel_versions"]
        ),
    )
    assert sent.count("Bind") == 1, sent
    assert [m for m in sent if m in ("Sync", "Flush", "Query")] == ["Sync"], sent
    found = saver.get_tuple(latest)
    assert found is not None
    assert found.checkpoint["channel_values"] == second["channel_values"]
    assert found.parent_config == stored
    assert found.metadata["source"] == "loop" and found.metadata["step"] == 0
    earlier = saver.get_tuple(stored)
    assert earlier is not None
    assert earlier.checkpoint["channel_values"] == first["channel_values"]


def test_each_statement_is_planned_once_on_a_connection(saver):
    """The checkpointer's statements are prepared by psycopg at their first use on a
    connection and planned once there (a generic plan), not at each of their first five
    executions as PostgreSQL does by default: ``pg_prepared_statements`` of the pool's
    connections, after eight checkpoints and their tasks' writes, each read back: eight
    executions of each statement on its generic plan, none planned with its values."""
    config = {"configurable": {"thread_id": "t4", "checkpoint_ns": ""}}
    for step in range(8):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": ["hi"] * (step + 1), "plan": {"step": step}}
        versions = {"messages": str(step + 1), "plan": str(step + 1)}
        checkpoint["channel_versions"] = versions
        config = saver.put(config, checkpoint, {"source": "loop", "step": step}, versions)
        saver.put_writes(config, [("messages", ["x"]), ("plan", {"n": step})], task_id="t")
        assert saver.get_tuple(config) is not None
    plans: dict[str, dict[str, int]] = {}  # each statement's plans, summed over the pool
    with ExitStack() as held:
        for _ in range(saver.conn.max_size):  # every connection of the pool, at once
            conn = held.enter_context(saver.conn.connection())
            for row in conn.execute(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
            ).fetchall():
                seen = plans.setdefault(" ".join(row["statement"].split())[:27].upper(), {})
                for kind in ("generic_plans", "custom_plans"):
                    seen[kind] = seen.get(kind, 0) + row[kind]
    for text in (
        "WITH BLOBS AS (INSERT INTO ",
        "INSERT INTO CHECKPOINT_WRIT",
        "SELECT THREAD_ID, CHECKPOIN",
    ):
        # the checkpoint with its blobs, the task's writes, the checkpoint's read
        assert plans[text]["generic_plans"] == 8, plans
    assert all(seen["custom_plans"] == 0 for seen in plans.values()), plans


def test_a_checkpoint_is_stored_while_a_task_s_writes_wait_on_another_connection(
    saver, postgres_url
):
    """The saver's writes take a connection of the pool each and nothing else: a task's
    writes held up on the server (here by another transaction's uncommitted row of the
    same key) do not hold up a checkpoint of another thread, stored meanwhile on a second
    connection. LangGraph's saver takes its one lock around every statement, pool or not,
    so that a run's checkpoint puts and its tasks' writes, which LangGraph sends from
    several threads, took turns. Once the other transaction is gone the writes are
    stored."""
    import psycopg

    config = {"configurable": {"thread_id": "t5", "checkpoint_ns": ""}}
    stored = saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    head = ("t5", "", stored["configurable"]["checkpoint_id"], "task-0", "", 0, "messages")
    writes = [("messages", ["x"]), ("plan", {"n": 1})]
    results: dict[str, Any] = {}

    def run(name: str, action: Callable[[], Any]) -> threading.Thread:
        thread = threading.Thread(target=lambda: results.update({name: action()}), daemon=True)
        thread.start()
        return thread

    watcher = psycopg.connect(postgres_url, autocommit=True)  # sees the server as it is now
    with watcher, psycopg.connect(postgres_url) as blocker:  # a transaction, left open
        blocker.execute(
            "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,"
            " task_path, idx, channel, type, blob) VALUES (%s, %s, %s, %s, %s, %s, %s, 'null', '')",
            head,
        )
        writing = run("writes", lambda: saver.put_writes(stored, writes, task_id="task-0"))
        wait_for(
            lambda: watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%%checkpoint_writes%%'"
            ).fetchone()[0],
            what="the task's writes to wait for the other transaction",
        )
        other = empty_checkpoint()
        other["channel_values"] = {"messages": ["hi"]}
        other["channel_versions"] = {"messages": "1"}
        where = {"configurable": {"thread_id": "t6", "checkpoint_ns": ""}}
        putting = run(
            "put",
            lambda: saver.put(where, other, {"source": "loop", "step": 0}, {"messages": "1"}),
        )
        putting.join(timeout=30)  # a bound for a hang, not a time target
        stored_meanwhile = not putting.is_alive()
        assert writing.is_alive()  # still held up
        blocker.rollback()
    writing.join(timeout=60)
    putting.join(timeout=60)
    assert stored_meanwhile, "the checkpoint waited for the other thread's held-up writes"
    found = saver.get_tuple(results["put"])
    assert found is not None and found.checkpoint["channel_values"] == {"messages": ["hi"]}
    pending = saver.get_tuple(stored).pending_writes
    assert [(task, channel) for task, channel, _ in pending] == [
        ("task-0", "messages"),
        ("task-0", "plan"),
    ]
