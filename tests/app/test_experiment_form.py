"""The experiment form (issue 16, points 1 and 2): who decides approvals, shown with the
run count (decide automatically by default), and a model picked per variant; the
results say what ran on which model and count the runs that wait for a person."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.models.modes import PROCESS_MODES
from graph.models.scripted import ScriptedChatModel
from graph.service.eval_sets import Check, EvalQuestion, EvalSet
from graph.service.experiment_comparison import compare
from graph.service.experiments import ExperimentRunner
from graph.settings import Settings
from tests.app.support import open_page, texts
from tests.support_procs.fake_server import LocalOpenAIServer
from ui import moved_tabs

PAGE = "app_pages/evals.py"
TWO = EvalSet(
    name="two",
    questions=[
        EvalQuestion(
            question="How did Tesla's stock do in 2008?",
            checks=[Check(kind="uses_agents", value=["data_researcher"])],
        ),
        EvalQuestion(question="Why did IBM sell its PC division to Lenovo?"),
    ],
)


@pytest.fixture
def server():
    PROCESS_MODES.forget()
    with LocalOpenAIServer(ScriptedChatModel, model_name="served-model") as running:
        yield running
    PROCESS_MODES.forget()


def test_approvals_default_to_automatic_next_to_the_run_count(home, services):
    store, service = services
    store.save_eval_set(TWO)
    store.save_design(Design(approvals={"data_researcher": "always"}))
    at = open_page(PAGE)
    approvals = at.radio(key="evals:approvals")
    assert approvals.value == "auto"
    assert approvals.options[0].startswith("Decide automatically: read-only steps approved")
    assert [o.split(":")[0] for o in approvals.options] == [
        "Decide automatically",
        "Ask a human",
        "The design's policy",
    ]
    shown = texts(at)
    assert "= **4 runs**" in shown and "none of the 4 runs waits for a person" in shown

    at.button(key="evals:start").click().run()
    (record,) = store.experiments()
    assert record.approvals == "auto"
    assert ExperimentRunner.of(service).wait(record.id, timeout=120).status == "done"
    assert service.pending_approvals() == []
    at.run()
    assert not at.exception
    assert "Status: done" in texts(at) and "approvals: decide automatically" in texts(at)


def test_ask_a_human_shows_the_waiting_runs_and_then_done(home, services):
    store, service = services
    store.save_eval_set(TWO)
    store.save_design(Design(approvals={"data_researcher": "always"}))
    at = open_page(PAGE)
    at.radio(key="evals:approvals").set_value("human").run()
    assert "waits on the Approvals page until someone decides" in texts(at)
    at.button(key="evals:start").click().run()
    (record,) = store.experiments()
    assert ExperimentRunner.of(service).wait(record.id, timeout=120).status == "waiting"
    at.run()
    shown = texts(at)
    assert "Status: waiting (2 runs wait for a decision)" in shown
    assert "2 run(s) of this experiment wait for a decision on the Approvals page" in shown
    assert compare(store, record.id, "A").summary["A"]["runs"] == 1  # its Tesla run waits

    for item in service.pending_approvals():
        service.decide(item["run_id"], item["id"], "approve")
    for run in store.experiment_runs(record.id):
        service.wait(run["run_id"], timeout=60)
    at.run()
    assert "Status: done" in texts(at) and "wait for a decision" not in texts(at)
    assert compare(store, record.id, "A").summary["A"]["runs"] == 2  # counted once decided


def test_each_variant_picks_its_model(home, services, server):
    store, service = services
    store.save_eval_set(TWO)
    service.modes.learn(server.base_url, "served-model", structured="json_schema")
    at = open_page(PAGE)
    picker = at.selectbox(key="evals:variant:1:model")
    served = f"served-model @ {server.base_url}"
    assert picker.options == ["the model in use (offline scripted model)", served]
    assert picker.value == "the model in use (offline scripted model)"
    at.text_input(key="evals:variant:0:name").input("offline")
    at.text_input(key="evals:variant:1:name").input("served")
    picker.set_value(served).run()
    at.button(key="evals:start").click().run()
    assert not at.exception

    (record,) = store.experiments()
    assert [v["model"] for v in record.variants] == [
        None,
        {"endpoint": server.base_url, "model": "served-model"},
    ]
    assert ExperimentRunner.of(service).wait(record.id, timeout=120).status == "done"
    labels = {
        r["variant"]: store.run(r["run_id"]).model_label for r in store.experiment_runs(record.id)
    }
    assert labels == {"offline": "offline scripted model", "served": served}
    assert server.requests  # the served variant's calls went over HTTP
    at.run()
    (variants,) = [t for t in at.table if "Model" in t.value.columns]
    assert list(variants.value["Model"]) == ["offline scripted model", served]


def test_the_offline_note_holds_when_a_variant_ran_on_the_offline_model(home, services):
    """The model in use is a server, but one variant named the offline model: the
    comparison of its prompts still says what the rules read."""
    store, _ = services
    planner = "plan_execute/planner"
    on_server = Settings(home=home, openai_base_url="http://127.0.0.1:9/v1")
    store.create_experiment(
        "e1",
        "prompts on the rules",
        TWO,
        [
            {"name": "A", "prompts": {planner: "one"}, "model": {"endpoint": "", "model": ""}},
            {"name": "B", "prompts": {planner: "two"}, "model": {"endpoint": "", "model": ""}},
        ],
        1,
        1,
        Design(),
        on_server,
    )
    store.set_experiment_status("e1", "stopped")  # no runs to wait for
    at = open_page(PAGE)
    at.session_state[moved_tabs.drawn_key("evals:tab", at.session_state)] = "Compare variants"
    at.run()
    assert not at.exception
    assert "Runs use the **offline scripted model**" in texts(at)
