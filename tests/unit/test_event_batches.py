"""How a run hands its events to the store: in batches, one transaction each.

Node updates (a subgraph's too), states, tool timings and streamed custom events wait a
moment (at most ``EVENT_LINGER_S``) to share a transaction with what follows; a model
call (a crash must not lose a call that happened) and the run's end are handed over at
once with whatever waits before them. Nothing waits for a slow node to end, and a paced
run hands each update over before its pause.
"""

from __future__ import annotations

import operator
import sqlite3
import threading
import time
from typing import Annotated, TypedDict

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service import runs
from graph.service.run_records import RunEvent
from graph.service.runs import continue_run


class S(TypedDict, total=False):
    seen: Annotated[list, operator.add]


def _graph(tmp_path):
    """ask (a model call) -> inner (a subgraph) -> left and right in parallel -> join."""
    inner = StateGraph(S)
    inner.add_node("deep", lambda s: {"seen": ["deep"]})
    inner.add_edge(START, "deep")
    inner.add_edge("deep", END)

    def ask(state: S, config) -> dict:
        ScriptedChatModel().invoke("Say hello.", config)
        return {"seen": ["ask"]}

    builder = StateGraph(S)
    builder.add_node("ask", ask)
    builder.add_node("inner", inner.compile())
    for name in ("left", "right", "join"):
        builder.add_node(name, lambda s, name=name: {"seen": [name]})
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "inner")
    builder.add_edge("inner", "left")
    builder.add_edge("inner", "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", END)
    saver = SqliteSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))
    return builder.compile(checkpointer=saver)


def _team(tmp_path, slow):
    """team (a subgraph: first -> slow) as the only node; ``slow`` is the second node."""
    inner = StateGraph(S)
    inner.add_node("first", lambda s: {"seen": ["first"]})
    inner.add_node("slow", slow)
    inner.add_edge(START, "first")
    inner.add_edge("first", "slow")
    inner.add_edge("slow", END)
    builder = StateGraph(S)
    builder.add_node("team", inner.compile())
    builder.add_edge(START, "team")
    builder.add_edge("team", END)
    saver = SqliteSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))
    return builder.compile(checkpointer=saver)


@tool
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


def _tool_then_model(tmp_path):
    """use: runs a tool (as a model's tool call), then calls a model."""

    def use(state: S, config) -> dict:
        shout.invoke(
            {"name": "shout", "args": {"text": "hi"}, "id": "c1", "type": "tool_call"}, config
        )
        ScriptedChatModel().invoke("Say hello.", config)
        return {"seen": ["use"]}

    builder = StateGraph(S)
    builder.add_node("use", use)
    builder.add_edge(START, "use")
    builder.add_edge("use", END)
    saver = SqliteSaver(sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False))
    return builder.compile(checkpointer=saver)


def _run(tmp_path, design: Design, graph=None, last: str = "join") -> list[list[RunEvent]]:
    batches: list[list[RunEvent]] = []
    graph = graph if graph is not None else _graph(tmp_path)
    outcome = continue_run(graph, {"seen": ["in"]}, "t", design, on_events=batches.append)
    assert outcome.state["seen"][-1] == last
    events = [e for batch in batches for e in batch]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # in order, none lost
    return batches


def _batch_of(batches, test) -> list[RunEvent]:
    (batch,) = [b for b in batches if any(test(e) for e in b)]
    return batch


def _update(node: str):
    return lambda e: e.kind == "update" and e.node == node


def test_states_and_updates_wait_for_the_next_model_call_or_the_end(tmp_path, monkeypatch):
    # What is handed over at once, not what the linger's timer happens to flush: on a loaded
    # machine the 0.2 s timer fired between the subgraph's update and its node's.
    monkeypatch.setattr(runs, "EVENT_LINGER_S", 60.0)
    batches = _run(tmp_path, Design())
    # The input's state waited for the first model call, handed over when it ended.
    call = _batch_of(batches, lambda e: e.kind == "custom" and "llm_call" in e.data)
    assert [e.kind for e in call] == ["state", "custom"]
    # Every superstep after it (a subgraph's own updates, a parallel one's) went as the
    # stream ended, in order: one transaction, not one per superstep; then the end.
    assert len(batches) == 3 and [e.kind for e in batches[-1]] == ["end"]
    went = [(e.kind, e.node, bool(e.namespace)) for e in batches[1]]
    # The parallel pair's updates come in the order their threads finished.
    assert sorted(went[5:7]) == [("update", "left", False), ("update", "right", False)]
    assert went[:5] + went[7:] == [
        ("update", "ask", False),
        ("state", "", False),
        ("update", "deep", True),
        ("update", "inner", False),
        ("state", "", False),
        ("state", "", False),
        ("update", "join", False),
        ("state", "", False),
    ]


def test_a_tool_timing_waits_for_the_model_call_after_it(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "EVENT_LINGER_S", 60.0)
    batches = _run(tmp_path, Design(), _tool_then_model(tmp_path), last="use")
    timed = _batch_of(batches, lambda e: e.kind == "custom" and "tool_call" in e.data)
    assert [next(iter(e.data)) if e.kind == "custom" else e.kind for e in timed] == [
        "state",
        "tool_call",
        "llm_call",
    ]
    assert timed[1].data["tool_call"]["tool_call_id"] == "c1"


def test_an_update_is_handed_over_while_a_slow_node_after_it_still_runs(tmp_path):
    """A subgraph logs its first node's update, then its second node takes long: the
    update reaches the store while the second node runs, not when the superstep ends."""
    handed = threading.Event()

    def slow(state: S) -> dict:
        # Waits until the first node's update has been handed over (at most 20 s).
        return {"seen": ["saw it" if handed.wait(20) else "never saw it"]}

    graph = _team(tmp_path, slow)

    def on_events(batch: list[RunEvent]) -> None:
        if any(e.kind == "update" and e.node == "first" for e in batch):
            handed.set()

    outcome = continue_run(graph, {}, "t", Design(), on_events=on_events)
    assert outcome.state["seen"] == ["first", "saw it"]


def test_a_paced_run_hands_over_each_update_before_its_pause(tmp_path):
    batches = _run(tmp_path, Design(pace_s=0.01))
    assert [e.kind for e in _batch_of(batches, _update("ask"))] == ["update"]
    assert not [b for b in batches if {e.kind for e in b} >= {"update", "state"}]


def test_events_the_store_could_not_take_are_kept_and_written_by_the_next_hand_over(tmp_path):
    """The flusher's write fails (the store busy a moment): its events stay held, go with
    the run's next hand-over, and the run goes on; nothing is lost or written twice."""
    batches: list[list[RunEvent]] = []

    def on_events(batch: list[RunEvent]) -> None:
        if threading.current_thread().name.endswith(":events") and not getattr(
            on_events, "refused", False
        ):
            on_events.refused = True
            raise RuntimeError("database is locked")
        batches.append(batch)

    graph = _team(tmp_path, lambda s: time.sleep(1.0) or {"seen": ["slow"]})
    outcome = continue_run(graph, {}, "t", Design(), on_events=on_events)
    assert getattr(on_events, "refused", False), "the flusher never tried"
    assert outcome.state["seen"] == ["first", "slow"]
    events = [e for batch in batches for e in batch]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.node for e in events if e.kind == "update"] == ["first", "slow", "team"]
