"""The checkpointer on LangGraph's public ``BaseCheckpointSaver`` interface (issue #32,
point 4): its own tables and SQL, none of ``SqliteSaver``'s connection, lock or helpers,
and what LangGraph relies on a saver for (metadata filters, pending writes in order, files
from older savers) kept. Real SQLite files throughout."""

from __future__ import annotations

import sqlite3

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.types import ERROR

from graph.kernel.checkpoints import open_checkpointer


def _checkpoint(checkpoint_id, notes: list[str]) -> dict:
    return {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": {"notes": notes},
        "channel_versions": {"notes": "1"},
        "versions_seen": {},
        "updated_channels": ["notes"],
    }


TOP = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def test_the_checkpointer_is_built_on_langgraphs_base_saver_alone(tmp_path):
    saver = open_checkpointer(tmp_path / "c.sqlite")
    from_langgraph = [c for c in type(saver).__mro__ if c.__module__.startswith("langgraph")]
    assert from_langgraph == [BaseCheckpointSaver]


def test_a_checkpoint_that_fails_to_save_leaves_nothing_half_written(tmp_path):
    path = tmp_path / "c.sqlite"
    saver = open_checkpointer(path)
    with pytest.raises(sqlite3.IntegrityError):  # checkpoint_id is NOT NULL
        saver.put(TOP, _checkpoint(None, ["a"]), {}, {"notes": "1"})
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM checkpoint_blobs").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 0
    saver.put(TOP, _checkpoint("1", ["a"]), {}, {"notes": "1"})  # the file is still usable
    assert saver.get_tuple(TOP).checkpoint["channel_values"] == {"notes": ["a"]}


def test_listing_filters_on_metadata_and_refuses_a_key_that_is_not_a_plain_name(tmp_path):
    saver = open_checkpointer(tmp_path / "c.sqlite")
    saver.put(TOP, _checkpoint("1", ["a"]), {"stepwise_redirect": "r-1"}, {"notes": "1"})
    saver.put(
        {"configurable": {**TOP["configurable"], "checkpoint_id": "1"}},
        _checkpoint("2", ["a"]),
        {"stepwise_redirect": None, "step": 2},
        {},
    )
    found = [t.config["configurable"]["checkpoint_id"] for t in saver.list(TOP)]
    assert found == ["2", "1"]
    matched = saver.list(TOP, filter={"stepwise_redirect": "r-1"})
    assert [t.config["configurable"]["checkpoint_id"] for t in matched] == ["1"]
    assert [t.metadata["step"] for t in saver.list(TOP, filter={"step": 2})] == [2]
    older = saver.list(TOP, before={"configurable": {"checkpoint_id": "2"}})
    assert [t.config["configurable"]["checkpoint_id"] for t in older] == ["1"]
    with pytest.raises(ValueError, match="only letters, digits"):
        list(saver.list(TOP, filter={"step') OR 1=1 --": 2}))


def test_pending_writes_read_back_in_step_order_and_an_error_replaces_the_last(tmp_path):
    saver = open_checkpointer(tmp_path / "c.sqlite")
    at = saver.put(TOP, _checkpoint("1", ["a"]), {}, {"notes": "1"})
    saver.put_writes(at, [("notes", ["from b"])], "task-b", task_path="~b")
    saver.put_writes(at, [("notes", ["from a"]), ("notes", ["again a"])], "task-a", "~a")
    saver.put_writes(at, [("notes", ["written twice"])], "task-a", "~a")  # kept as first saved
    saver.put_writes(at, [(ERROR, "first")], "task-c", "~c")
    saver.put_writes(at, [(ERROR, "second")], "task-c", "~c")
    writes = saver.get_tuple(TOP).pending_writes
    assert writes == [
        ("task-a", "notes", ["from a"]),
        ("task-a", "notes", ["again a"]),
        ("task-b", "notes", ["from b"]),
        ("task-c", ERROR, "second"),
    ]


def test_a_file_from_before_writes_had_a_task_path_gets_one_and_goes_on(tmp_path):
    path = tmp_path / "c.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL "
            "DEFAULT '', checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER "
            "NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB, "
            "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx))"
        )
    saver = open_checkpointer(path)
    at = saver.put(TOP, _checkpoint("1", ["a"]), {}, {"notes": "1"})
    saver.put_writes(at, [("notes", ["b"])], "task", "~t")
    assert saver.get_tuple(TOP).pending_writes == [("task", "notes", ["b"])]
