"""A follow-up message sent to a live run survives the process stopping before the run
takes it: it is recorded in the store when accepted and applied, once, on resume.

Real engine, scripted model, real SQLite store and checkpoints; the "crash" is a service
shut down before its run reached the superstep boundary where it would apply the message
(what a kill in that window leaves behind), and a new service on the same home.
"""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.conftest import wait_for

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
FOLLOW_UP = "How did IBM's stock do in 2008?"


class SlowModel(ScriptedChatModel):
    delay_s: float = 0.15


@pytest.fixture
def home_settings(tmp_path, settings) -> Settings:
    return Settings(home=tmp_path, provider="scripted", run_lease_s=0.5)


def service_on(settings: Settings) -> RunService:
    return RunService(
        Store.open(settings), settings, timeout_tick_s=0, model_factory=lambda role: SlowModel()
    )


def human_texts(service: RunService, run_id: str) -> list[str]:
    return [m.content for m in service.state(run_id)["messages"] if m.type == "human"]


def test_a_follow_up_queued_on_a_live_run_is_applied_on_resume_after_the_app_stopped(
    home_settings,
):
    first = service_on(home_settings)
    run_id = first.start(QUESTION, Design(max_replans=2, recursion_limit=80))
    wait_for(lambda: first.store.nodes_run(run_id), what="the run to get going")
    first.send_message(run_id, FOLLOW_UP)
    first.shutdown()  # the app stops before the run reached its next boundary
    assert first.store.run(run_id).status == "cancelled"

    second = service_on(home_settings)
    try:
        assert FOLLOW_UP not in human_texts(second, run_id)  # the first never applied it
        second.resume(run_id)
        finished = second.wait(run_id, timeout=120)
        assert finished.status == "done", finished.reason
        assert human_texts(second, run_id).count(FOLLOW_UP) == 1
        turns = second.store.snapshot(run_id)["conversation"]["turns"]
        assert [t["text"] for t in turns] == [QUESTION, FOLLOW_UP]
        assert second.store.queued_redirects(run_id) == []  # applied, so forgotten
    finally:
        second.shutdown()


def test_a_recorded_follow_up_that_was_applied_before_the_crash_is_not_applied_again(
    home_settings,
):
    first = service_on(home_settings)
    run_id = first.start(QUESTION, Design(max_replans=2, recursion_limit=80))
    wait_for(lambda: first.store.nodes_run(run_id), what="the run to get going")
    first.cancel(run_id)
    first.wait(run_id, timeout=60)
    # What a kill right after the checkpoint write and before the record was forgotten
    # leaves: the redirect applied in the checkpointer, still listed in the store.
    spec = {"kind": "message", "text": FOLLOW_UP}
    redirect_id = first.store.queue_redirect(run_id, spec, "Follow-up message")
    compiled, _, _ = first.models.graph(Design(max_replans=2, recursion_limit=80))
    plan = first.redirects.plan_of(spec, Design(max_replans=2, recursion_limit=80), compiled)
    first.redirects.apply_redirect(run_id, compiled, plan, "Follow-up message", redirect_id)
    first.shutdown()

    second = service_on(home_settings)
    try:
        second.resume(run_id)
        assert second.wait(run_id, timeout=120).status == "done"
        assert human_texts(second, run_id).count(FOLLOW_UP) == 1
        assert second.store.queued_redirects(run_id) == []
    finally:
        second.shutdown()


def test_a_follow_up_taken_by_the_live_run_is_forgotten_once_applied(home_settings):
    service = service_on(home_settings)
    try:
        run_id = service.start(QUESTION, Design(max_replans=2, recursion_limit=80))
        wait_for(lambda: service.store.nodes_run(run_id), what="the run to get going")
        service.send_message(run_id, FOLLOW_UP)
        assert service.wait(run_id, timeout=120).status == "done"
        assert human_texts(service, run_id).count(FOLLOW_UP) == 1
        assert service.store.queued_redirects(run_id) == []
    finally:
        service.shutdown()
