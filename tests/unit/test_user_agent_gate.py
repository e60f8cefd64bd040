"""A user agent's side-effecting MCP tool goes through the approval gate inside a real
plan_execute run (issue 30, point 3 meeting point 1): the counting MCP server over
streamable HTTP on loopback (tests/mcp_support.py), the Tools page's stored policies, real
SQLite checkpoints and side-effect ledger. The worker model proposes the tool call (the
offline scripted model calls only read-only tools, so it never reaches the gate); the
Planner is the offline scripted model, routing the step to the agent by its description."""

from __future__ import annotations

import pytest
from langgraph.types import Command

from graph.plan_execute import SYSTEM
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
        SYSTEM,
        store,
        settings,
        server.url,
        tmp_path / "checkpoints.sqlite",
        ["notary", "synthesizer"],
    ) as built:
        yield built


def _start(graph, design, thread: str) -> dict:
    config = {"configurable": {"thread_id": thread}}
    graph[0].invoke(SYSTEM.initial_state(QUESTION, design), config)
    return config


def test_the_side_effecting_tool_asks_first_and_is_called_once_approved(graph, server):
    before = server.calls["send_note"]
    config = _start(graph, graph[1], "gated")
    (asked,) = graph[0].get_state(config).interrupts
    request = asked.value
    assert request["tool_call"] == {"server": "notes", "tool": "send_note", "args": NOTE}
    assert request["action_requests"][0]["name"] == "send_note"
    assert server.calls["send_note"] == before  # nothing called before a person says so
    graph[0].invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    state = graph[0].get_state(config)
    assert not state.interrupts and state.values["outcome"] == "done", state.values.get(
        "outcome_reason"
    )
    assert server.calls["send_note"] == before + 1


def test_a_policy_chosen_read_only_on_the_tools_page_runs_without_asking(graph, server, store):
    store.mcp_servers.set_policy("notes", "send_note", "read_only", chosen_by="ada")
    before = server.calls["send_note"]
    config = _start(graph, graph[1], "chosen")
    state = graph[0].get_state(config)
    assert not state.interrupts and state.values["outcome"] == "done", state.values.get(
        "outcome_reason"
    )
    assert server.calls["send_note"] == before + 1
