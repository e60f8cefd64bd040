"""Tests for the run service (graph/run_service.py): real engine, offline scripted model,
real SQLite files under a temporary STEPWISE_HOME."""

from __future__ import annotations

import time

import pytest

from graph.kernel.design import Design
from graph.kernel.system import register, unregister
from graph.models.scripted import ScriptedChatModel
from graph.prompts import PromptError, default_text
from graph.service.run_service import RunService
from graph.service.store import INTERRUPTED_REASON
from tests.fourth import SYSTEM as RELAY

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


class SlowScriptedModel(ScriptedChatModel):
    """The scripted model, slowed down so a run is still going when the test acts."""

    delay_s: float = 0.05

    def _generate(self, *args, **kwargs):
        time.sleep(self.delay_s)
        return super()._generate(*args, **kwargs)


class BrokenModel(ScriptedChatModel):
    """A model whose every call fails with a multi-line error, like a client traceback."""

    def _generate(self, *args, **kwargs):
        raise RuntimeError(
            "The model server exploded.\nTraceback (most recent call last):\n"
            '  File "client.py", line 1, in call\nRuntimeError: boom'
        )


@pytest.fixture
def make_service(store, settings):
    services: list[RunService] = []

    def make(**kwargs) -> RunService:
        service = RunService(store, settings, **kwargs)
        services.append(service)
        return service

    yield make
    for service in services:
        service.shutdown()


def design() -> Design:
    return Design(max_replans=2, recursion_limit=60)


def test_the_example_question_ends_done_with_an_answer_a_chart_and_planner_first(
    make_service, store, settings
):
    service = make_service()
    run_id = service.start(QUESTION, design())
    assert store.run(run_id).model_label == "offline scripted model"
    run = service.wait(run_id, timeout=30)
    assert (run.status, run.reason) == ("done", "Finished: the synthesizer wrote the final answer.")
    assert run.final_answer and "AAPL" in run.final_answer
    assert run.started_at <= run.finished_at and run.duration_s >= 0
    assert run.counts["steps"] >= 3
    snap = store.snapshot(run_id)
    assert snap["chart_spec"]["data"]["values"]
    assert snap["outcome"] == "done"
    nodes = store.nodes_run(run_id)
    assert nodes[0] == "planner" and nodes[-1] == "synthesizer"
    events = store.events(run_id)
    assert events[-1]["kind"] == "end" and events[-1]["data"]["status"] == "done"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert store.messages(run_id, agent="synthesizer")
    assert not service.is_live(run_id) and service.live_runs() == []
    assert (settings.home / "checkpoints.sqlite").exists()
    assert service.checkpointer.get_tuple({"configurable": {"thread_id": run_id}}) is not None


def test_three_runs_started_at_once_all_finish_done_and_overlap(make_service, store):
    service = make_service(model_factory=lambda role: SlowScriptedModel(delay_s=0.01))
    run_ids = [service.start(QUESTION, design()) for _ in range(3)]
    assert len(set(run_ids)) == 3
    runs = [service.wait(r, timeout=60) for r in run_ids]
    assert [r.status for r in runs] == ["done"] * 3
    assert all(r.final_answer for r in runs)
    assert max(r.started_at for r in runs) < min(r.finished_at for r in runs)  # in parallel
    for r in run_ids:
        assert store.nodes_run(r)[-1] == "synthesizer"


def test_a_cancelled_run_keeps_its_events_and_adds_none_after(make_service, store):
    service = make_service(model_factory=lambda role: SlowScriptedModel(delay_s=0.05))
    run_id = service.start(QUESTION, design())
    deadline = time.time() + 20
    while not store.nodes_run(run_id) and time.time() < deadline:
        time.sleep(0.01)
    assert store.nodes_run(run_id), "the run never got going"
    assert service.is_live(run_id)
    assert service.cancel(run_id)
    run = service.wait(run_id, timeout=30)
    assert run.status == "cancelled"
    assert "Cancelled" in run.reason and run.finished_at is not None
    events = store.events(run_id)
    assert events[-1]["kind"] == "end" and events[-1]["data"]["status"] == "cancelled"
    assert any(e["kind"] == "update" for e in events)
    assert "synthesizer" not in store.nodes_run(run_id)
    seq = store.latest_seq(run_id)
    time.sleep(0.3)
    assert store.latest_seq(run_id) == seq
    assert store.run(run_id).status == "cancelled"
    assert service.cancel(run_id) is False  # no longer live


def test_a_run_whose_model_raises_fails_with_a_readable_reason_and_no_traceback(
    make_service, store
):
    service = make_service(model_factory=lambda role: BrokenModel())
    run_id = service.start(QUESTION, design())
    run = service.wait(run_id, timeout=30)
    assert run.status == "failed"
    assert "The model server exploded." in run.reason
    assert "Traceback" not in run.reason and "\n" not in run.reason
    assert store.events(run_id)[-1]["kind"] == "end"


def test_a_worker_error_outside_the_run_fails_the_run_in_words(make_service, store, monkeypatch):
    service = make_service()

    def broken(*args, **kwargs):
        raise OSError("disk full\nTraceback (most recent call last): ...")

    monkeypatch.setattr("graph.service.run_service.continue_run", broken)
    run = service.wait(service.start(QUESTION, design()), timeout=30)
    assert (run.status, run.reason) == ("failed", "disk full")


def test_a_new_service_marks_a_left_over_running_run_interrupted(make_service, store):
    store.create_run("left-over", QUESTION, design(), "offline scripted model")
    store.set_run_status("left-over", "running")
    store.create_run("finished", QUESTION, design(), "offline scripted model")
    store.set_run_status("finished", "done", "Finished.")
    service = make_service()
    assert service.interrupted_at_start == 1
    run = store.run("left-over")
    assert (run.status, run.reason) == ("interrupted", INTERRUPTED_REASON)
    assert store.run("finished").status == "done"
    assert not service.is_live("left-over")


def test_an_empty_question_is_refused_before_anything_is_recorded(make_service, store):
    service = make_service()
    with pytest.raises(ValueError, match="question is empty"):
        service.start("   \n", design())
    assert store.runs() == []


def test_a_design_with_a_broken_prompt_is_refused_naming_it(make_service, store):
    service = make_service()
    bad = Design(prompts={"plan_execute/planner": "Plan {user_qeury}"})
    with pytest.raises(PromptError, match=r"\{user_qeury\}"):
        service.start(QUESTION, bad)
    assert store.runs() == []


@pytest.fixture
def relay():
    """The fourth system of the tests, whose graph is built without reading a prompt:
    with a model factory (no model reads one either), a broken prompt text in its
    design is refused by ``start``'s own check alone."""
    register(RELAY)
    yield RELAY
    unregister(RELAY.name)


def test_a_broken_prompt_is_refused_every_time_even_after_a_sound_one_passed(
    make_service, store, relay
):
    """``start`` remembers the prompt sets it found sound, by their texts; never a
    refusal, so the next click on a broken one is refused again."""
    service = make_service(model_factory=lambda role: ScriptedChatModel())
    sound = Design(
        system=relay.name,
        prompts={"plan_execute/synthesizer": default_text("plan_execute/synthesizer") + "\n"},
    )
    kept = service.wait(service.start(QUESTION, sound))
    assert kept.status == "done", kept.reason
    bad = Design(system=relay.name, prompts={"plan_execute/planner": "Plan {user_qeury}"})
    for _ in range(2):  # the same set again: not remembered as sound
        with pytest.raises(PromptError, match=r"\{user_qeury\}"):
            service.start(QUESTION, bad)
    assert [r.id for r in store.runs()] == [kept.id]
    again = service.wait(service.start(QUESTION, sound))  # the sound one still starts
    assert again.status == "done", again.reason


def test_a_run_records_the_active_prompt_versions_it_used(make_service, store):
    name = "plan_execute/synthesizer"
    from graph.prompts import default_text

    version = store.save_prompt_version(name, "", default_text(name) + "\nBe concise.")
    store.set_active_prompt(name, version.id)
    service = make_service()
    run_id = service.start(QUESTION, Design(max_replans=2, prompts=store.active_prompt_texts()))
    assert service.wait(run_id, timeout=30).prompt_versions == {name: version.id}
    assert service.wait(service.start(QUESTION, design()), timeout=30).prompt_versions == {}


def test_a_node_whose_writes_were_saved_but_not_applied_still_counts_as_work_to_resume(settings):
    """A process killed after a node finished but before the next checkpoint leaves the
    node's writes pending: ``next`` is empty, the task is not. Stopping a stream right
    after a node's update reproduces that state without a kill."""
    from graph.plan_execute import SYSTEM

    build_graph, initial_state = SYSTEM.build_graph, SYSTEM.initial_state
    from graph.kernel.checkpoints import pending_nodes
    from graph.service.run_storage import checkpointer_for
    from graph.service.runs import continue_run

    graph = build_graph(design(), settings=settings, checkpointer=checkpointer_for(settings))
    config = {"configurable": {"thread_id": "t-pending"}}
    for namespace, mode, chunk in graph.stream(
        initial_state(QUESTION, design()),
        config,
        subgraphs=True,
        stream_mode=["updates", "custom", "values"],
    ):
        if mode == "updates" and not namespace and "executor" in chunk:
            break
    snapshot = graph.get_state(config)
    assert snapshot.next == () and pending_nodes(snapshot)  # the trap the Run page fell in
    outcome = continue_run(graph, None, "t-pending", design(), settings=settings)
    assert outcome.status == "done" and outcome.state["final_answer"]


def test_a_heartbeat_that_cannot_reach_the_store_says_so_once_then_when_it_can(tmp_path, caplog):
    from graph.service.store import Store
    from graph.settings import Settings
    from tests.unit.conftest import wait_for

    settings = Settings(home=tmp_path, provider="scripted", run_lease_s=0.3)  # a beat each 0.1 s
    store = Store.open(settings)
    service = RunService(
        store, settings, timeout_tick_s=0, model_factory=lambda r: ScriptedChatModel()
    )

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if "heartbeat" in r.getMessage()]

    store.close()  # the store gone from under the service: each beat fails
    wait_for(said, timeout=10, what="the heartbeat's failure to be logged")
    time.sleep(1.0)  # ten more beats, failing the same way
    (failed,) = said()
    assert "could not reach the store" in failed and "tried again each 0.1 s" in failed
    service.store = Store.open(settings)
    wait_for(lambda: len(said()) == 2, timeout=10, what="the heartbeat to say it works again")
    assert said()[1] == "The runs' heartbeat reaches the store again."
    service.shutdown()
