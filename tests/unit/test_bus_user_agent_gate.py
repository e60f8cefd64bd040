"""A bus user agent's side-effecting MCP tool goes through the approval gate inside a real
supervisor_bus run (issue 30, points 1 and 3), as in plan_execute: the counting MCP server
over streamable HTTP on loopback (tests/mcp_support.py), the Tools page's stored policies,
real SQLite checkpoints and side-effect ledger. The worker model proposes the tool call (the
offline scripted model calls only read-only tools, so it never reaches the gate); the
supervisor is the offline scripted model, routing the request to the agent by its
description."""

from __future__ import annotations

import pytest
from langgraph.types import Command

from graph.supervisor_bus import SYSTEM
from tests.mcp_support import counting_server
from tests.user_agent_support import NOTE, QUESTION, notary_graph


@pytest.fixture(scope="module")
def server():
    running = counting_server()
    yield running
    running.stop()


@pytest.fixture
def graph(store, settings, server, tmp_path):
    with notary_graph(
        SYSTEM, store, settings, server.url, tmp_path / "checkpoints.sqlite", ["notary"]
    ) as built:
        yield built


def _start(graph, design, thread: str) -> dict:
    config = {"configurable": {"thread_id": thread}}
    graph.invoke(SYSTEM.initial_state(QUESTION, design), config)
    return config


def _answers_from_notary(state) -> list[str]:
    return [
        m.payload.get("text", "")
        for m in state.values["bus"]
        if m.from_ == "notary" and m.type == "result"
    ]


def test_the_bus_agents_side_effecting_tool_asks_first_and_is_called_once_approved(graph, server):
    compiled, design = graph
    before = server.calls["send_note"]
    config = _start(compiled, design, "bus-gated")
    state = compiled.get_state(config)
    (asked,) = state.interrupts
    request = asked.value
    assert request["agent"] == "notary"
    assert request["tool_call"] == {"server": "notes", "tool": "send_note", "args": NOTE}
    assert request["action_requests"][0]["name"] == "send_note"
    assert state.next == ("notary",)  # the worker waits, its request still in its inbox
    assert server.calls["send_note"] == before  # nothing called before a person says so
    compiled.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    state = compiled.get_state(config)
    assert not state.interrupts and state.values["outcome"] == "done", state.values.get(
        "outcome_reason"
    )
    assert server.calls["send_note"] == before + 1
    (answer,) = _answers_from_notary(state)
    assert answer.startswith("The tool said:")


def test_a_rejected_call_is_not_made_and_the_bus_run_goes_on(graph, server):
    compiled, design = graph
    before = server.calls["send_note"]
    config = _start(compiled, design, "bus-rejected")
    compiled.invoke(
        Command(resume={"decisions": [{"type": "reject", "message": "not today"}]}), config
    )
    state = compiled.get_state(config)
    assert not state.interrupts and state.values["outcome"] == "done", state.values.get(
        "outcome_reason"
    )
    assert server.calls["send_note"] == before
    (answer,) = _answers_from_notary(state)
    assert "declined" in answer and "nothing was done" in answer
