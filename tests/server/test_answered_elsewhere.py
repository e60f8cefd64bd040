"""A question of the app's server run answered by another client on the server (one that
knows only LangChain's standard decisions, as Agent Inbox does) shows in the Approvals
inbox as decided, and the app follows the run on, on a real ``langgraph dev``."""

from __future__ import annotations

import time

import pytest
from langgraph_sdk import get_sync_client

from graph.kernel.design import Design
from graph.service.server_runs import ServerRunService, thread_of
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.conftest import wait_status
from ui.inbox_view import build_inbox

REPORT = "What caused the dot-com crash? Save a report."


@pytest.fixture
def runs(tmp_path, langgraph_server):
    settings = Settings(home=tmp_path, provider="scripted", server_url=langgraph_server.url)
    store = Store.open(settings)
    service = ServerRunService(store, settings, timeout_tick_s=0)
    yield service
    service.shutdown()
    store.close()


def test_a_question_answered_by_another_client_shows_decided_and_the_run_goes_on(
    runs, langgraph_server
):
    since = time.time()
    run_id = runs.start(REPORT, Design(approval_timeout_s=0))
    assert runs.wait(run_id, timeout=60).status == "waiting"
    [pending] = runs.pending_approvals()

    other = get_sync_client(url=langgraph_server.url)  # no Stepwise code on this side
    thread = thread_of(run_id)
    [asked] = other.threads.get_state(thread)["interrupts"]
    assert asked["id"] == pending["id"] and asked["value"]["action_requests"]
    answer = {"decisions": [{"type": "approve"}]}
    run = other.runs.create(thread, "plan_execute", command={"resume": answer})
    other.runs.join(thread, run["run_id"])

    runs.elsewhere_checked_at = 0.0  # look now, not in 2 s
    assert runs.pending_approvals() == []  # the card is no longer waiting...
    decided = runs.recent_decisions(since)
    assert [(d["id"], d["decided"]["decision"], d["decided"]["by"]) for d in decided] == [
        (pending["id"], "approve", "human")
    ]  # ...it is decided, as the run's own record says
    inbox = build_inbox(runs.pending_approvals(), decided)
    assert (inbox.waiting, inbox.decided) == (0, 1)
    record = wait_status(runs, run_id, "done", timeout=60)  # followed to its end
    assert record.final_answer
