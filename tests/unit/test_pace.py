"""Pace: each node's result stays on screen for the design's pace before the next node
starts (issue #15 point 1), and Stop still ends the run at once."""

from __future__ import annotations

import threading
import time

from graph.kernel.design import Design
from graph.service.run_controls import StopSignal
from graph.service.runs import run_question

QUESTION = "How did Tesla's stock do in 2008?"


def _root_updates(events: list) -> list:
    return [e for e in events if e.kind == "update" and not e.namespace]


def test_each_nodes_result_is_held_for_the_pace_before_the_next_node_starts():
    events: list = []
    outcome = run_question(QUESTION, Design(pace_s=0.3), on_event=events.append)
    assert outcome.status == "done", outcome.reason
    updates = _root_updates(events)
    assert len(updates) >= 4
    gaps = [b.ts - a.ts for a, b in zip(updates, updates[1:])]
    assert min(gaps) >= 0.3, gaps
    paced = [e.data["paced"] for e in events if e.kind == "custom" and "paced" in e.data]
    assert len(paced) == len(updates) and all(p["seconds"] >= 0.29 for p in paced)

    fast: list = []
    run_question(QUESTION, Design(), on_event=fast.append)
    assert not any(e.kind == "custom" and "paced" in e.data for e in fast)


def test_stop_during_a_long_pace_ends_the_run_cancelled_at_once():
    cancel = StopSignal()
    events: list = []

    def stop_after_first_node(event) -> None:
        events.append(event)
        if event.kind == "update" and not event.namespace:
            threading.Timer(0.2, cancel.set).start()

    started = time.monotonic()
    outcome = run_question(
        QUESTION, Design(pace_s=10), on_event=stop_after_first_node, cancel=cancel
    )
    assert outcome.status == "cancelled", outcome.reason
    assert time.monotonic() - started < 3
    assert len(_root_updates(events)) == 1


def test_the_next_node_really_waits_not_only_the_screen():
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from graph.service.runs import continue_run

    class S(TypedDict, total=False):
        first_done: float
        second_started: float

    builder = StateGraph(S)
    builder.add_node("first", lambda s: {"first_done": time.time()})
    builder.add_node("second", lambda s: {"second_started": time.time()})
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    outcome = continue_run(graph, {}, "pace-1", Design(pace_s=0.4))
    assert outcome.state["second_started"] - outcome.state["first_done"] >= 0.4
