"""Checkpoint durability: a run on a worker process saves each checkpoint before its next
step starts (``durability="sync"``), so that no second thread of the worker holds the
checkpoint file's write lock, shared with the other workers, while the node's thread has
the core; a run in the app keeps LangGraph's default ("async")."""

from __future__ import annotations

import sqlite3
import time
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.run_worker import worker_service
from graph.service.runs import continue_run
from graph.service.store import Store
from graph.settings import Settings


class SlowSaver(SqliteSaver):
    """A real SQLite checkpointer whose saves take 0.3 s (a busy disk)."""

    def put(self, config, checkpoint, metadata, new_versions):
        time.sleep(0.3)
        return super().put(config, checkpoint, metadata, new_versions)


class S(TypedDict, total=False):
    saved_steps_seen: list


def _graph(tmp_path):
    saver = SlowSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))

    def second(state: S, config) -> dict:
        # What this node finds saved when it starts: the step of the latest checkpoint.
        latest = saver.get_tuple(
            {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        )
        return {"saved_steps_seen": [latest.metadata["step"] if latest else None]}

    builder = StateGraph(S)
    builder.add_node("first", lambda s: {"saved_steps_seen": []})
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(checkpointer=saver)


def test_sync_durability_saves_a_step_s_checkpoint_before_the_next_step_starts(tmp_path):
    outcome = continue_run(_graph(tmp_path), {}, "t", Design(), durability="sync")
    assert outcome.state["saved_steps_seen"] == [1]  # step 1: after "first"
    # LangGraph's default saves on another thread: the node did not wait for the save.
    outcome = continue_run(_graph(tmp_path), {}, "t2", Design(), durability="async")
    assert outcome.state["saved_steps_seen"] != [1]


def test_the_app_saves_asynchronously_and_worker_processes_synchronously(tmp_path):
    settings = Settings(home=tmp_path, provider="scripted")
    for service, durability in (
        (RunService(Store.open(settings), settings, timeout_tick_s=0), "async"),
        (worker_service(settings), "sync"),
    ):
        try:
            assert service.durability == durability
        finally:
            service.shutdown()
