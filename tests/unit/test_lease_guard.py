"""The lease guard checks inside the checkpoint write, after the values are serialized.

A process frozen (or simply slow) while it serialized a checkpoint used to write it
though its lease ran out meanwhile: the only check was before the serialization. The
frozen-owner test (``test_frozen_owner``) caught it now and then under load (33
checkpoints for 32). Here the lease is lost *during* the serialization, on purpose.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest
from langchain_core.messages import HumanMessage

from graph.kernel.checkpoints import open_checkpointer
from graph.service.leases import LeaseGuardedSaver, LeaseLost, Leases
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.test_checkpoint_versions import _loop


def _checkpoints(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]


def test_a_lease_lost_while_a_checkpoint_is_serialized_refuses_that_write(tmp_path):
    store = Store.open(Settings(home=tmp_path, provider="scripted"))
    leases = Leases(store, "this-process", lease_s=60)
    path = tmp_path / "checkpoints.sqlite"
    inner = open_checkpointer(path)
    saver = LeaseGuardedSaver(inner, leases)
    dumps, put = inner.serde.dumps_typed, inner.put
    calls = {"n": 0, "written_at_loss": None}
    # Counted only while a checkpoint is being put: LangGraph also serializes a step's
    # pending writes on another thread, and a loss counted there could fall while the
    # previous checkpoint's put was past its check and writing, which lands (the window
    # graph.service.leases documents), so the count read at the loss was one short.
    putting = threading.local()

    def put_counted(*args, **kwargs):
        putting.on = True
        try:
            return put(*args, **kwargs)
        finally:
            putting.on = False

    def losing_midway(value):
        if not getattr(putting, "on", False):
            return dumps(value)
        calls["n"] += 1
        if calls["n"] == 12:  # a few checkpoints in: the run's lease runs out now
            calls["written_at_loss"] = _checkpoints(path)
            leases.hold("t")
            leases.lose("t")
        return dumps(value)

    inner.serde.dumps_typed = losing_midway  # type: ignore[method-assign]
    inner.put = put_counted  # type: ignore[method-assign]
    graph = _loop(20).compile(checkpointer=saver)
    try:
        with pytest.raises(LeaseLost):
            graph.invoke(
                {"messages": [HumanMessage("go")]},
                {"configurable": {"thread_id": "t"}, "recursion_limit": 40},
                durability="sync",  # each checkpoint written before the next step: counted
            )
        # the write whose values were being serialized when the lease was lost is not
        # there: every checkpoint kept was written before the loss
        assert calls["written_at_loss"], "the lease was never lost mid-run"
        assert _checkpoints(path) == calls["written_at_loss"]
        ids = [c.checkpoint["id"] for c in inner.list({"configurable": {"thread_id": "t"}})]
        with pytest.raises(LeaseLost):
            saver.put_writes(
                {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": ids[0]}},
                [("notes", ["late"])],
                "task",
            )
    finally:
        inner.conn.close()
        store.close()
