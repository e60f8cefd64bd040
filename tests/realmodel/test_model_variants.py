"""Models are variants too, on a real model: one experiment compares the offline scripted
model and the real llama.cpp server (SmolLM2-135M) as two variants of one prompt, one
question, one repeat. The experiment decides its approvals itself, so nothing waits."""

from __future__ import annotations

import pytest

from graph.kernel.accounting import model_modes
from graph.models.choice import SCRIPTED, ModelChoice
from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.experiment_comparison import compare
from graph.service.experiment_variants import Variant
from graph.service.experiments import ExperimentRunner
from tests.realmodel.conftest import assert_done, design_for
from tests.support_procs import llama_server

# a run on the 135M model takes minutes: more than the suite's default test timeout
pytestmark = pytest.mark.timeout(1500)
QUESTION = "Why did IBM sell its PC division to Lenovo?"


def _models_called(store, run_id: str) -> set[str]:
    return {
        e["data"]["llm_call"]["model"]
        for e in store.events(run_id, kinds=("custom",))
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    }


def test_the_offline_model_and_the_real_server_are_two_variants_of_one_experiment(
    llama, real_service, real_store
):
    # On two busy cores one call of the 135M model can take over the default 120 s a call.
    real_service.settings = real_service.settings.model_copy(update={"model_call_deadline_s": 900})
    real = ModelChoice(endpoint=llama.base_url, model=llama_server.MODEL_NAME)
    runner = ExperimentRunner.of(real_service)
    experiment_id = runner.start(
        "offline vs real",
        EvalSet(name="one", questions=[EvalQuestion(question=QUESTION)]),
        [Variant(name="offline", model=ModelChoice()), Variant(name="real", model=real)],
        design=design_for("plan_execute", max_replans=1),
        max_workers=1,
    )
    record = runner.wait(experiment_id, timeout=1200)
    assert record.status == "done"  # the experiment decided any approval: nothing waits

    runs = {r["variant"]: r["run_id"] for r in real_store.experiment_runs(experiment_id)}
    offline, on_server = real_store.run(runs["offline"]), real_store.run(runs["real"])
    assert offline.status == "done" and offline.model_label == SCRIPTED
    assert _models_called(real_store, runs["offline"]) == {SCRIPTED}
    assert on_server.model_label == f"{llama_server.MODEL_NAME} @ {llama.base_url}"
    assert_done(on_server)
    assert _models_called(real_store, runs["real"]) == {llama_server.MODEL_NAME}, (
        on_server.status,
        on_server.reason,
    )
    modes = model_modes(real_store.events(runs["real"]))
    assert set(modes["structured"]) == {"json_object"}, modes  # the real server's refusal

    comparison = compare(real_store, experiment_id, "offline")
    assert comparison.progress == (2, 2) and comparison.waiting == 0
    assert comparison.summary["offline"]["runs"] == comparison.summary["real"]["runs"] == 1
    assert comparison.summary["real"]["llm_calls"]["mean"] >= 1
    assert set(comparison.differences["real"]) >= {"pass_rate", "llm_calls", "tokens"}
