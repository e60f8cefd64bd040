"""A person's score and note of a run, from the Run and the History page (issue 27, point
3): kept in the store on the judge's 1-5 scale, shown again when the run is opened, and a
score left unpicked refused in words with nothing kept."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.service.human_reviews import HumanReviews
from tests.app.support import open_page, texts

TESLA = "How did Tesla's stock do in 2008?"
PAGES = {"run": "app_pages/run.py", "history": "app_pages/history.py"}


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
