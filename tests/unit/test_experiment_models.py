"""Models are variants too (issue 16, point 2): one experiment runs one prompt on the
offline scripted model and on an OpenAI-compatible server (the project's fake server on
loopback, answered over real HTTP), each run on its variant's model, even after a pause
for a person; no key is stored with the experiment or sent to a server it was not
configured for."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from graph.kernel.design import Design
from graph.models.choice import SCRIPTED, ModelChoice, configured_choice
from graph.models.modes import PROCESS_MODES
from graph.models.scripted import ScriptedChatModel
from graph.service.eval_sets import Check, EvalQuestion, EvalSet
from graph.service.experiment_comparison import compare
from graph.service.experiment_variants import Variant
from graph.service.experiments import ExperimentRunner
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer
from tests.unit.conftest import wait_for

QUESTION = "How did Tesla's stock do in 2008?"
KEY = "sk-configured-for-another-server-only"


@pytest.fixture
def server():
    PROCESS_MODES.forget()
    with LocalOpenAIServer(ScriptedChatModel, model_name="served-model") as running:
        yield running
    PROCESS_MODES.forget()


def _calls(store: Store, run_id: str) -> list[str]:
    """The model each LLM call of the run went to, from its events."""
    return [
        e["data"]["llm_call"]["model"]
        for e in store.events(run_id, kinds=("custom",))
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    ]


def test_one_prompt_on_two_models_is_one_experiment_of_two_variants(tmp_path, server):
    # The configured model is elsewhere, with a key: neither variant may use that key.
    settings = Settings(
        home=tmp_path,
        openai_base_url="http://127.0.0.1:9/v1",
        openai_api_key=KEY,
        max_retries=0,
        request_timeout_s=30,
    )
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        served = ModelChoice(endpoint=server.base_url, model="served-model")
        eval_set = EvalSet(
            name="one",
            questions=[
                EvalQuestion(
                    question=QUESTION,
                    checks=[Check(kind="uses_agents", value=["data_researcher"])],
                )
            ],
        )
        runner = ExperimentRunner.of(service)
        experiment_id = runner.start(
            "offline vs served",
            eval_set,
            [Variant(name="offline", model=ModelChoice()), Variant(name="served", model=served)],
        )
        assert runner.wait(experiment_id, timeout=120).status == "done"

        runs = {r["variant"]: r["run_id"] for r in store.experiment_runs(experiment_id)}
        offline, on_server = store.run(runs["offline"]), store.run(runs["served"])
        assert offline.status == on_server.status == "done"
        assert offline.model_label == SCRIPTED
        assert on_server.model_label == f"served-model @ {server.base_url}"
        assert set(_calls(store, runs["offline"])) == {SCRIPTED}
        served_calls = _calls(store, runs["served"])
        assert served_calls and set(served_calls) == {"served-model"}
        assert len(server.requests) == len(served_calls)  # every call went over HTTP

        comparison = compare(store, experiment_id, "offline")
        assert comparison.variants == ["offline", "served"]
        assert comparison.summary["served"]["llm_calls"]["mean"] == len(served_calls)
        record = store.experiment(experiment_id)
        assert [v["model"] for v in record.variants] == [
            {"endpoint": "", "model": ""},
            {"endpoint": server.base_url, "model": "served-model"},
        ]
        # The configured model's settings differ, yet a rerun runs the recorded models.
        rerun = runner.rerun(experiment_id)
        assert runner.wait(rerun, timeout=120).status == "done"
        assert {store.run(r["run_id"]).model_label for r in store.experiment_runs(rerun)} == {
            SCRIPTED,
            f"served-model @ {server.base_url}",
        }
    finally:
        service.shutdown()
        store.close()
    for path in tmp_path.glob("stepwise.sqlite*"):
        assert KEY.encode() not in path.read_bytes()


def test_a_decided_run_goes_on_on_its_variants_model(service, store, server):
    served = ModelChoice(endpoint=server.base_url, model="served-model")
    runner = ExperimentRunner.of(service)
    experiment_id = runner.start(
        "ask",
        EvalSet(name="one", questions=[EvalQuestion(question=QUESTION)]),
        [Variant(name="served", model=served)],
        design=Design(approvals={"data_researcher": "always"}),
        approvals="human",
    )
    assert runner.wait(experiment_id, timeout=120).status == "waiting"
    (item,) = service.pending_approvals()
    asked = len(server.requests)
    service.decide(item["run_id"], item["id"], "approve")
    wait_for(lambda: runner.is_finished(experiment_id), what="the decided run to end")
    assert store.run(item["run_id"]).status == "done"
    assert len(server.requests) > asked  # the rest of the run went to the server too
    assert set(_calls(store, item["run_id"])) == {"served-model"}


def test_a_choice_names_a_model_and_never_carries_a_key():
    base = Settings(openai_base_url="http://127.0.0.1:8000/v1", openai_api_key=KEY)
    same = ModelChoice(endpoint="http://127.0.0.1:8000/v1/", model="m").settings(base)
    assert same.openai_api_key.get_secret_value() == KEY  # the server it was set for
    other = ModelChoice(endpoint="http://127.0.0.1:9000/v1", model="m").settings(base)
    assert other.openai_api_key is None and other.model_label == "m @ http://127.0.0.1:9000/v1"
    assert ModelChoice().settings(base).resolved_provider == "scripted"
    assert configured_choice(base) == ModelChoice(
        endpoint="http://127.0.0.1:8000/v1", model="gpt-4.1-mini"
    )
    assert configured_choice(Settings(provider="scripted")) == ModelChoice()
    with pytest.raises(ValidationError, match="not an http"):
        ModelChoice(endpoint="localhost:8000", model="m")
    with pytest.raises(ValidationError):
        ModelChoice(endpoint="http://x/v1", model="m", api_key=KEY)
