"""How a run hands its events to the store: in batches, one transaction each.

A superstep that runs one node runs it on the stream's thread, so LangGraph hands over
all of its updates (a subgraph's included) only when it has ended: they are held until
the superstep's state, a moment later, and written with it. A model call is handed over
as it ends (a crash must not lose a call that happened); a superstep running nodes in
parallel, and a paced run, hand over each update as it comes (shown while they run).
"""

from __future__ import annotations

import operator
import sqlite3
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.runs import RunEvent, continue_run


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


def _run(tmp_path, design: Design) -> list[list[RunEvent]]:
    batches: list[list[RunEvent]] = []
    outcome = continue_run(_graph(tmp_path), {}, "t", design, on_events=batches.append)
    assert outcome.state["seen"][-1] == "join"
    events = [e for batch in batches for e in batch]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))  # in order, none lost
    return batches


def _batch_of(batches, test) -> list[RunEvent]:
    (batch,) = [b for b in batches if any(test(e) for e in b)]
    return batch


def _update(node: str):
    return lambda e: e.kind == "update" and e.node == node


def test_a_one_node_superstep_is_written_with_its_state_and_a_model_call_at_once(tmp_path):
    batches = _run(tmp_path, Design())
    ask = _batch_of(batches, _update("ask"))
    assert [e.kind for e in ask][-2:] == ["update", "state"]
    # The model call was handed over when it ended, before its node's update.
    call = _batch_of(batches, lambda e: e.kind == "custom" and "llm_call" in e.data)
    assert call[-1].kind == "custom" and call is not ask
    # A subgraph's own updates come with its node's update and the superstep's state.
    inner = _batch_of(batches, _update("inner"))
    assert [(e.kind, e.node, bool(e.namespace)) for e in inner] == [
        ("update", "deep", True),
        ("update", "inner", False),
        ("state", "", False),
    ]
    assert [e.kind for e in batches[-1]] == ["end"]


def test_nodes_running_in_parallel_hand_over_each_update_as_it_comes(tmp_path):
    batches = _run(tmp_path, Design())
    for node in ("left", "right"):
        assert [e.kind for e in _batch_of(batches, _update(node))] == ["update"]


def test_a_paced_run_hands_over_each_update_before_its_pause(tmp_path):
    batches = _run(tmp_path, Design(pace_s=0.01))
    assert [e.kind for e in _batch_of(batches, _update("ask"))] == ["update"]
    assert not [b for b in batches if {e.kind for e in b} >= {"update", "state"}]
