"""A run made on the real llama.cpp server, replayed from its recording with no server:
the same plan, step statuses, routing and answer, and not one request to the server."""

from __future__ import annotations

import socket

import pytest

from graph.service.run_service import RunService
from tests.realmodel.conftest import design_for, drive

QUESTION = "How did Tesla's stock do in 2008?"

# a run on the 135M model takes minutes: more than the suite's default test timeout
pytestmark = pytest.mark.timeout(2400)


def _requests(llama) -> int:
    """Chat completions the server has answered so far (its access log)."""
    return llama.log.read_text(errors="replace").count("POST /v1/chat/completions")


def _routing(store, run_id: str) -> list[str]:
    """The top-level nodes in the order they ran."""
    return [e["node"] for e in store.events(run_id, kinds=("update",)) if not e["namespace"]]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_real_run_replayed_with_no_server_ends_the_same_and_asks_nothing(
    real_service, real_store, real_settings, llama
):
    design = design_for(
        "plan_execute", enabled_agents=["data_researcher", "synthesizer"], max_replans=1
    )
    run_id = real_service.start(QUESTION, design)
    original = drive(real_service, run_id)
    assert original.status == "done", original.reason
    asked = _requests(llama)
    assert asked > 0

    # The replay runs in a service whose configured server is not there at all.
    gone = real_settings.model_copy(
        update={"openai_base_url": f"http://127.0.0.1:{_closed_port()}/v1"}
    )
    offline = RunService(real_store, gone, timeout_tick_s=0)
    try:
        replay_id = offline.replay(run_id)
        replayed = drive(offline, replay_id)
    finally:
        offline.shutdown()
    assert replayed.status == "done", replayed.reason
    assert _requests(llama) == asked, "the replay sent a request to the model server"
    assert replayed.parent_run == run_id
    before, after = real_store.snapshot(run_id), real_store.snapshot(replay_id)
    assert after["plan"] == before["plan"]
    assert [(r["agent"], r["status"]) for r in after["rows"]] == [
        (r["agent"], r["status"]) for r in before["rows"]
    ]
    assert _routing(real_store, replay_id) == _routing(real_store, run_id)
    assert replayed.final_answer == original.final_answer
