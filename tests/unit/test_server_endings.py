"""How a LangGraph Server run's end reads, and what its stream is sent, without a server
(tests/server/ runs both on a real ``langgraph dev``)."""

from __future__ import annotations

from langgraph.types import Command

from graph.served import stream_payload
from graph.service.server_endings import server_ending
from graph.settings import Settings


def test_a_cancel_wins_over_a_failure_and_the_state():
    snap = {"interrupts": [{"id": "i1", "value": {"step": 1}}], "next": ["worker"]}
    status, reason, extra = server_ending(snap, {"outcome": "done"}, True, "boom", Settings())
    assert (status, extra) == ("cancelled", {})
    assert "Cancelled by the user" in reason


def test_a_failure_is_said_with_the_servers_message():
    status, reason, _ = server_ending({}, {}, False, "no such node", Settings())
    assert status == "failed"
    assert reason == "The server run failed: no such node"


def test_a_thread_at_an_interrupt_waits_and_says_what_it_asks():
    snap = {
        "interrupts": [
            {"id": "i1", "value": {"step": 2, "agent": "coder", "reason": "runs code"}},
            {"id": "i2", "value": "plain"},
        ]
    }
    status, reason, extra = server_ending(snap, {}, False, "", Settings())
    assert status == "waiting"
    assert reason == "Waiting for a human: step 2 (coder): runs code; step None (None): "
    assert extra == {
        "interrupts": [
            {"id": "i1", "step": 2, "agent": "coder", "reason": "runs code"},
            {"id": "i2", "value": "plain"},
        ]
    }


def test_a_thread_before_nodes_is_paused_else_its_outcome_is_the_systems():
    status, reason, extra = server_ending({"next": ["a", "b"]}, {}, False, "", Settings())
    assert (status, reason, extra) == (
        "paused",
        "Paused before a, b (step mode).",
        {"next": ["a", "b"]},
    )
    values = {"outcome": "done", "outcome_reason": "Answered."}
    assert server_ending({}, values, False, "", Settings()) == ("done", "Answered.", {})
    assert server_ending({}, {}, False, "", Settings()) == (
        "failed",
        "The server run ended without an outcome.",
        {},
    )


def test_a_stream_is_sent_an_input_a_command_or_nothing():
    assert stream_payload(None) == {}
    assert stream_payload({"request": "q", "tags": {"x"}}) == {
        "input": {"request": "q", "tags": ["x"]}
    }
    command = Command(resume={"decision": "approve"}, goto="worker")
    assert stream_payload(command) == {
        "command": {"resume": {"decision": "approve"}, "goto": "worker"}
    }
