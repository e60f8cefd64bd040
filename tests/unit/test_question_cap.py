"""Questions are capped where runs start (graph/service/questions.py): a run, a follow-up
message and an experiment past STEPWISE_MAX_QUESTION_CHARS are refused in a sentence
giving the cap, and nothing is stored for them."""

import pytest

from graph.kernel.design import Design
from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.experiment_variants import ExperimentError, Variant
from graph.service.experiments import ExperimentRunner
from graph.service.run_service import RunService

CAP_WORDS = "a question may have at most 20,000 (STEPWISE_MAX_QUESTION_CHARS)."


def test_a_question_past_the_cap_is_refused_with_the_cap_and_nothing_is_stored(service, store):
    with pytest.raises(ValueError) as refused:
        service.start("q" * 20_001, Design())
    assert str(refused.value) == "The question is 20,001 characters long; " + CAP_WORDS
    assert store.runs() == []
    run_id = service.start("  " + "q" * 19_999 + "?  ", Design())  # at the cap: runs
    assert service.wait(run_id, timeout=60).question == "q" * 19_999 + "?"


def test_the_cap_is_a_setting(store, settings):
    service = RunService(store, settings.model_copy(update={"max_question_chars": 100}))
    try:
        with pytest.raises(ValueError, match="at most 100 "):
            service.start("q" * 101, Design())
    finally:
        service.shutdown()


def test_a_follow_up_message_past_the_cap_is_refused(service, store):
    run_id = service.start("How did Tesla's stock do in 2008?", Design())
    service.wait(run_id, timeout=60)
    events = len(store.events(run_id))
    with pytest.raises(ValueError, match=r"The message is 20,001 characters long; a message"):
        service.send_message(run_id, "m" * 20_001)
    assert len(store.events(run_id)) == events and store.queued_redirects(run_id) == []


def test_an_experiment_with_a_question_past_the_cap_is_refused_before_any_run(service, store):
    eval_set = EvalSet(
        name="long",
        questions=[
            EvalQuestion(question="How did Tesla's stock do in 2008?"),
            EvalQuestion(question="q" * 20_001),
        ],
    )
    with pytest.raises(ExperimentError) as refused:
        ExperimentRunner.of(service).start("x", eval_set, [Variant(name="a")])
    assert str(refused.value).startswith("Question 2 of the eval set: The question is 20,001")
    assert store.runs() == [] and store.experiments() == []
