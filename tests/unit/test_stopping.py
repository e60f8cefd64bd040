"""The Stop signal reaches work in progress inside a node (graph/stopping.py)."""

from __future__ import annotations

import threading
import time
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from graph.kernel.design import Design
from graph.service.run_controls import StopSignal
from graph.service.runs import continue_run
from graph.stopping import Stopped, check_stop, stop_event, stop_requested, stoppable


class _State(TypedDict, total=False):
    answer: str


def _waiting_graph(seen: list):
    """One node that waits (like a model call that never answers) until Stop."""

    def slow(state: _State) -> dict:
        event = stop_event()
        seen.append(event)
        deadline = time.monotonic() + 5
        while not stop_requested() and time.monotonic() < deadline:
            time.sleep(0.02)
        check_stop("a model call")
        return {"answer": "never"}

    builder = StateGraph(_State)
    builder.add_node("slow", slow)
    builder.add_edge(START, "slow")
    builder.add_edge("slow", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_stop_interrupts_a_node_in_progress_and_the_run_ends_cancelled():
    seen: list = []
    cancel = StopSignal()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    outcome = continue_run(_waiting_graph(seen), {}, "t1", Design(), cancel=cancel)
    assert outcome.status == "cancelled"
    assert time.monotonic() - started < 2.0
    assert seen == [cancel]  # the node saw the run's own signal


def test_a_redirect_is_not_a_stop():
    event = StopSignal()
    event.redirecting = True
    event.set()
    with stoppable(event):
        assert not stop_requested()
    plain = threading.Event()
    plain.set()
    with stoppable(plain):
        assert stop_requested()
        try:
            check_stop("a query")
        except Stopped as exc:
            assert "a query" in str(exc)
        else:
            raise AssertionError("check_stop did not raise")
    assert stop_event() is None  # the block restored the outer context
