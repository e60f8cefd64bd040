"""How the Run page says a model call in progress: a wait behind other calls, a call
sent and waiting for its first token, a reply being written with its rate."""

from __future__ import annotations

from graph.models.call_progress import CallRegistry
from ui.model_calls import call_line


def test_a_call_in_progress_is_said_in_words_at_each_of_its_stages():
    registry = CallRegistry()
    call = registry.begin("run-1", "http://server/v1", "m", "plan")
    registry.waiting(call, 2)
    now = call.started + 3
    assert call_line(call, now) == "Waiting for the model server: 2 calls ahead (a plan call, 3 s)."
    registry.waiting(call, 1)
    assert call_line(call, now).startswith("Waiting for the model server: 1 call ahead (")
    registry.sent(call)
    assert call_line(call, now) == (
        "The model server has a plan call: waiting for its first token (3 s)."
    )
    for _ in range(5):
        registry.token(call)
    call.first_token_at, call.last_token_at = call.started + 1, call.started + 3
    assert call_line(call, call.started + 4) == (
        "The model is writing a plan call: 5 tokens so far, 2.0 tokens/s (4 s)."
    )
    assert [c.call_id for c in registry.for_run("run-1")] == [call.call_id]
    registry.end(call)
    assert registry.for_run("run-1") == []
