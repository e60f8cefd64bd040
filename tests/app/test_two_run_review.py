"""The History page's blind review of any two runs (issue 27, point 3): two runs picked,
their answers judged side by side without their ids in the Evals page's pair view, the
judgement kept with the preferred run as winner whichever side it was drawn on, and the
run preferred said afterwards. A missing or repeated pick is refused in words."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.service.human_reviews import HumanReviews
from tests.app.support import open_page, texts
from ui.model_text import demote_headings

TESLA = "How did Tesla's stock do in 2008?"
IBM = "Why did IBM sell its PC division to Lenovo?"
PAGE = "app_pages/history.py"


def _runs(services, *questions: str) -> list[str]:
    store, service = services
    ids = []
    for question in questions:
        run_id = service.start(question, Design())
        assert service.wait(run_id, timeout=60).status == "done"
        ids.append(run_id)
    return ids


def _pick(at, first: str, second: str):
    at.selectbox(key="history:blind:first").set_value(first)
    at.selectbox(key="history:blind:second").set_value(second)
    return at.run()


def _pair_view(at) -> list[str]:
    """The markdown of the pair view, from its question to answer B."""
    shown = [md.value for md in at.markdown]
    start = next(i for i, v in enumerate(shown) if v.startswith("**Question"))
    return shown[start : shown.index("#### Answer B") + 2]


@pytest.mark.parametrize("preferred", [0, 1])
def test_two_runs_of_different_questions_are_judged_blind_and_the_preferred_run_wins(
    services, preferred
):
    store, _ = services
    runs = _runs(services, TESLA, IBM)
    answers = {r: demote_headings(store.run(r).final_answer) for r in runs}
    assert answers[runs[0]] != answers[runs[1]]
    at = _pick(open_page(PAGE), *runs)
    assert "The two runs answer different questions" in texts(at)
    at.button(key="history:blind:start").click().run()
    assert not at.exception, [e.value for e in at.exception]

    view = _pair_view(at)
    for run_id in runs:  # no id of either run in the pair view
        assert not any(run_id[:8] in v for v in view), view
    keys = [b.proto.shortcut for b in at.button if b.key.startswith("history:blind:")]
    assert keys[-4:] == ["a", "b", "t", "x"]
    shown_a, shown_b = view[view.index("#### Answer A") + 1], view[-1]
    assert {shown_a, shown_b} == set(answers.values())
    side = "A" if shown_a == answers[runs[preferred]] else "B"  # as a reviewer reads it
    at.text_input(key="history:blind:note").input("names the figures")
    at.button(key=f"history:blind:{side}").click().run()
    assert not at.exception, [e.value for e in at.exception]

    (judgement,) = HumanReviews(store).pair_judgements()
    assert judgement.winner == runs[preferred]
    assert judgement.choice == side
    assert {judgement.run_a, judgement.run_b} == set(runs)
    assert (judgement.experiment_id, judgement.note) == (None, "names the figures")
    assert judgement.question == f"{store.run(judgement.run_a).question} | " + (
        store.run(judgement.run_b).question
    )
    assert f"You preferred run `{runs[preferred][:8]}…` (answer {side})" in texts(at)
    assert not any(b.key == "history:blind:A" for b in at.button)  # the pair is put away


def test_two_runs_of_one_question_are_judged_under_that_question(services):
    store, _ = services
    runs = _runs(services, TESLA, TESLA)
    at = _pick(open_page(PAGE), *runs)
    assert "different questions" not in texts(at)
    at.button(key="history:blind:start").click().run()
    assert f"**Question:** {TESLA}" in _pair_view(at)
    at.button(key="history:blind:tie").click().run()
    (judgement,) = HumanReviews(store).pair_judgements()
    assert (judgement.question, judgement.choice, judgement.winner) == (TESLA, "tie", None)
    assert "Kept. You judged a tie" in texts(at)


def test_a_missing_or_repeated_pick_is_refused_and_nothing_is_kept(services):
    store, _ = services
    (run_id,) = _runs(services, TESLA)
    at = open_page(PAGE)
    at.button(key="history:blind:start").click().run()
    assert "Pick two runs first: a first and a second run." in texts(at)
    at = _pick(at, run_id, run_id)
    at.button(key="history:blind:start").click().run()
    assert "Pick two different runs: a run is not compared with itself." in texts(at)
    assert not any(b.key == "history:blind:A" for b in at.button)
    assert HumanReviews(store).pair_judgements() == []


def test_a_run_deleted_during_the_review_is_named_and_nothing_is_kept(services):
    store, _ = services
    runs = _runs(services, TESLA, IBM)
    at = _pick(open_page(PAGE), *runs)
    at.button(key="history:blind:start").click().run()
    store.delete_run(runs[1])
    at.button(key="history:blind:A").click().run()
    assert f"Not kept: There is no run '{runs[1]}' to judge (deleted?)." in texts(at)
    assert HumanReviews(store).pair_judgements() == []
