"""A person's score and note of a run, from the Run and the History page (issue 27, point
3): kept in the store on the scale of the run's eval set (the judge's 1-5 when it is in
none, said so), shown again when the run is opened, an older score on another scale left
on its own, and a score left unpicked refused in words with nothing kept."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.human_reviews import HumanReviews
from graph.service.run_to_eval import add_question
from graph.service.score_scales import JUDGE_SCALE, ScoreScale
from tests.app.support import open_page, texts
from tests.review_support import QUESTIONS, recorded_experiment

TESLA = "How did Tesla's stock do in 2008?"
PAGES = {"run": "app_pages/run.py", "history": "app_pages/history.py"}
PASS_FAIL = ScoreScale(labels=("fail", "pass"))


def _done_run(services) -> str:
    _, service = services
    run_id = service.start(TESLA, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    return run_id


def _submit(at, key: str, run_id: str):
    button = next(b for b in at.button if b.label == "Keep the score")
    assert f"{key}:score:{run_id}" in button.key
    return button.click().run()


@pytest.mark.parametrize("key", list(PAGES))
def test_a_run_is_scored_with_a_note_and_shows_the_score_when_opened_again(services, key):
    store, _ = services
    run_id = _done_run(services)
    at = open_page(PAGES[key], run=run_id)
    assert any(e.label == "Score this run" for e in at.expander)
    at.radio(key=f"{key}:score:{run_id}:value").set_value(4)
    at.text_area(key=f"{key}:score:{run_id}:note").input("right figures, slow")
    _submit(at, key, run_id)
    assert not at.exception, [e.value for e in at.exception]
    assert "Kept: 4 of 5." in texts(at)
    kept = HumanReviews(store).annotation(run_id)
    assert (kept.score, kept.note, kept.reviewer) == (4, "right figures, slow", None)
    again = open_page(PAGES[key], run=run_id)
    assert any(e.label == "Your score of this run: 4" for e in again.expander)
    assert again.radio(key=f"{key}:score:{run_id}:value").value == 4


def test_keeping_without_a_score_says_so_and_keeps_nothing(services):
    store, _ = services
    run_id = _done_run(services)
    at = open_page(PAGES["history"], run=run_id)
    at.text_area(key=f"history:score:{run_id}:note").input("forgot the score")
    _submit(at, "history", run_id)
    assert "Not kept: pick a score first." in texts(at)
    assert HumanReviews(store).annotations() == []


def test_the_judge_s_overall_score_is_shown_beside_the_person_s(services):
    store, _ = services
    run_id = _done_run(services)
    scores = {"score": 4, "reason": "r"}
    store.save_judgement(
        run_id,
        "judge-model",
        {
            "plan_quality": scores,
            "plan_adherence": scores,
            "execution_efficiency": {"score": 3, "reason": "r"},
            "logical_consistency": {"score": 3, "reason": "r"},
        },
    )
    assert "The judge's overall score: 4." in texts(open_page(PAGES["run"], run=run_id))


def _radio(at, key: str, run_id: str):
    return at.radio(key=f"{key}:score:{run_id}:value")


@pytest.mark.parametrize("key", list(PAGES))
def test_a_run_added_to_an_eval_set_is_scored_on_that_set_s_scale(services, key):
    store, _ = services
    run_id = _done_run(services)
    saved, _ = add_question(
        store, "yes or no", EvalQuestion(question=TESLA), new_set=True, run_id=run_id
    )
    store.save_eval_set(saved.model_copy(update={"scale": PASS_FAIL}))
    at = open_page(PAGES[key], run=run_id)
    assert _radio(at, key, run_id).options == ["fail", "pass"]
    assert "On the scale of the eval set “yes or no”: fail or pass." in texts(at)
    _radio(at, key, run_id).set_value(2)
    _submit(at, key, run_id)
    assert "Kept: pass." in texts(at)
    kept = HumanReviews(store).annotation(run_id)
    assert (kept.score, kept.scale) == (2, PASS_FAIL)


def test_a_run_of_an_experiment_offers_its_set_s_scale_and_an_old_score_stays_on_its_own(
    services,
):
    store, _ = services
    runs = recorded_experiment(store, repeats=1)
    run_id = runs[("default", 0, 0)]
    store.save_eval_set(
        EvalSet(
            name="review",
            questions=[EvalQuestion(question=q) for q in QUESTIONS],
            scale=ScoreScale(low=0, high=10, high_word="perfect"),
        )
    )
    HumanReviews(store).annotate(run_id, 4, "before the change", scale=JUDGE_SCALE)
    at = open_page(PAGES["history"], run=run_id)
    shown = texts(at)
    assert (
        "On the scale of the eval set “review” (the experiment “review me” ran it): 0 to 10 "
        "(perfect)." in shown
    )
    assert (
        "Your earlier score, 4, was given on 1 (poor) to 5 (good), the scale of that time, "
        "and stays on it" in shown
    )
    assert any(e.label == "Your score of this run: 4" for e in at.expander)
    radio = _radio(at, "history", run_id)
    assert radio.options[0] == "0" and radio.options[-1] == "10 perfect"
    assert radio.value is None  # the old 4 is not read as a 4 of 0-10
    assert HumanReviews(store).annotation(run_id).scale == JUDGE_SCALE


def test_a_run_in_no_eval_set_says_it_uses_the_default_scale(services):
    run_id = _done_run(services)
    at = open_page(PAGES["run"], run=run_id)
    assert (
        "This run is in no eval set, so it is scored on the default scale, the model judge's: "
        "1 (poor) to 5 (good)." in texts(at)
    )
    assert _radio(at, "run", run_id).options == ["1 poor", "2", "3", "4", "5 good"]
