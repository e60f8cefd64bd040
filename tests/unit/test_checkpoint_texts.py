"""Long texts are stored once in the checkpoint file, not copied into every checkpoint
(issue #14, item 6).

Real parts: LangGraph's SQLite checkpointer on a file, the run service, the scripted
model padded to long replies (under the reply cap, so they are kept whole).
"""

from __future__ import annotations

import sqlite3

from langchain_core.messages import AIMessage, HumanMessage

from graph.kernel.checkpoints import REFERENCE, checkpoint_serializer, open_checkpointer
from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.supervisor_bus.state import Message

REPLY_CHARS = 200_000
QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


class LongReplyModel(ScriptedChatModel):
    """The scripted model, every prose reply padded to about 200,000 characters."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        text = message.content if isinstance(message.content, str) else ""
        if text and not text.lstrip().startswith("{"):
            message.content = text + " And more." * (REPLY_CHARS // 10)
        return result


def _column_bytes(path, table: str, column: str, how: str = "SUM") -> int:
    with sqlite3.connect(path) as conn:
        sql = f"SELECT COALESCE({how}(LENGTH({column})), 0) FROM {table}"
        return conn.execute(sql).fetchone()[0]


def test_a_runs_long_replies_are_stored_once_and_come_back_whole(store, settings):
    service = RunService(
        store,
        settings.model_copy(update={"max_reply_chars": 1_000_000}),
        timeout_tick_s=0,
        model_factory=lambda role: LongReplyModel(),
    )
    try:
        run_id = service.start(QUESTION, Design(max_replans=2, recursion_limit=60))
        record = service.wait(run_id, timeout=120)
        config = {"configurable": {"thread_id": run_id}}
        checkpoints = list(service.checkpointer.list(config))
        latest = service.checkpointer.get_tuple(config)
    finally:
        service.shutdown()
    assert record.status == "done", record.reason
    long_replies = [
        m
        for m in latest.checkpoint["channel_values"]["messages"]
        if isinstance(m, AIMessage) and len(str(m.content)) > REPLY_CHARS
    ]
    assert len(long_replies) >= 3 and len(checkpoints) >= 10
    assert all(REFERENCE not in str(m.content) for m in long_replies)  # whole again
    # Each long reply is in the checkpoint file's text table once; no checkpoint and no
    # pending write holds a copy of one (only references to them).
    path = settings.home / "checkpoints.sqlite"
    texts = _column_bytes(path, "stepwise_texts", "text")
    kept = sum(len(str(m.content)) for m in long_replies)
    assert kept <= texts < 3 * kept
    assert _column_bytes(path, "checkpoints", "checkpoint", "MAX") < REPLY_CHARS / 2
    assert _column_bytes(path, "writes", "value", "MAX") < REPLY_CHARS / 2
    held = _column_bytes(path, "checkpoints", "checkpoint") + _column_bytes(path, "writes", "value")
    assert held < kept, f"checkpoints hold {held:,} bytes for {kept:,} of replies"


def test_texts_round_trip_through_the_checkpointer_in_every_container(tmp_path):
    saver = open_checkpointer(tmp_path / "c.sqlite", [("graph.supervisor_bus.state", "Message")])
    long = "x" * 5000
    tricky = REFERENCE + "not a reference"  # a text that looks like one stays itself
    value = {
        "messages": [HumanMessage(content=long), AIMessage(content="short", name=long)],
        "bus": [Message(id="m1", from_="a", to="b", type="result", payload={"text": long})],
        "nested": {"list": [long, ("t", long)], "set": {long, "s"}, "tricky": tricky},
    }
    kind, data = saver.serde.dumps_typed(value)
    assert long.encode() not in data and len(data) < 2000
    # The same as LangGraph's own serializer gives back (which makes tuples lists).
    plain = checkpoint_serializer([("graph.supervisor_bus.state", "Message")])
    assert saver.serde.loads_typed((kind, data)) == plain.loads_typed(plain.dumps_typed(value))
    assert value["messages"][0].content == long  # the state itself is never changed


def test_only_values_holding_a_long_text_are_walked(tmp_path, monkeypatch):
    """A value long only as a whole (many short messages) is stored as LangGraph would
    store it, without walking it; a long text is found wherever it sits, in any script."""
    from graph.kernel import checkpoints

    saver = open_checkpointer(tmp_path / "c.sqlite")
    walks = []
    real = checkpoints._map_strings
    monkeypatch.setattr(
        checkpoints, "_map_strings", lambda value, change: walks.append(1) or real(value, change)
    )
    plain = checkpoint_serializer()
    many = [HumanMessage(content=f"message {i} " + "é" * 100) for i in range(60)]
    assert saver.serde.dumps_typed(many) == plain.dumps_typed(many) and walks == []

    under = "é" * 2047  # 4,094 bytes, under the cut in characters: kept inline
    long = "é" * 2048
    for text, stored in ((under, False), (long, True), ("x" * 70_000, True)):
        value = [*many, AIMessage(content="short", additional_kwargs={"note": [text]})]
        kind, data = saver.serde.dumps_typed(value)
        assert (text.encode() not in data) is stored
        assert saver.serde.loads_typed((kind, data)) == plain.loads_typed(plain.dumps_typed(value))
