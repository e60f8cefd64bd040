"""An eval set's score scale set on the Evals page (issue 27, point 3): changed from the
judge's 1-5 to labels and saved; a bad scale said under the fields, with saving refused and
the set left as it was; the JSON and table editors keep the scale they do not show."""

from __future__ import annotations

from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.score_scales import JUDGE_SCALE, ScoreScale
from tests.app.support import open_page, texts

SMALL = EvalSet(name="small", questions=[EvalQuestion(question="Who is AAPL?")])
KEY = "evals:scale:{}:small:{}"


def test_a_set_s_scale_is_changed_to_labels_on_the_evals_page(home, services):
    store, _ = services
    store.save_eval_set(SMALL)
    at = open_page("app_pages/evals.py")
    assert any(e.label == "Score scale: 1 (poor) to 5 (good)" for e in at.expander)
    at.radio(key=KEY.format("kind", 0)).set_value("Labels").run()
    at.text_input(key=KEY.format("labels", 0)).input("bad, fine, great").run()
    assert "Valid: bad, fine or great. Not saved yet." in texts(at)
    at.button(key="evals:scale-save:small").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(
        "The score scale of “small” is now bad, fine or great." in s.value for s in at.success
    )
    assert store.load_eval_set("small").scale == ScoreScale(labels=("bad", "fine", "great"))
    assert store.load_eval_set("small").questions == SMALL.questions
    assert any(e.label == "Score scale: bad, fine or great" for e in at.expander)
    # The table editor shows no scale, and saving it keeps the one set here.
    at.button(key="evals:table-save").click().run()
    assert store.load_eval_set("small").scale == ScoreScale(labels=("bad", "fine", "great"))


def test_a_bad_scale_is_said_under_the_fields_and_nothing_is_saved(home, services):
    store, _ = services
    store.save_eval_set(SMALL)
    at = open_page("app_pages/evals.py")
    at.number_input(key=KEY.format("low", 0)).set_value(0).run()
    at.number_input(key=KEY.format("high", 0)).set_value(20).run()
    assert [e.value for e in at.error] == [
        "Not valid: The score scale is not usable: 21 points from 0 to 20 are too many to "
        "score by eye: keep it to 11 (e.g. 0 to 10)."
    ]
    assert at.button(key="evals:scale-save:small").disabled
    at.number_input(key=KEY.format("high", 0)).set_value(10).run()
    assert not at.error
    assert at.number_input(key=KEY.format("low", 0)).value == 0  # what was typed stays
    assert store.load_eval_set("small").scale == JUDGE_SCALE
    at.radio(key=KEY.format("kind", 0)).set_value("Labels").run()
    at.text_input(key=KEY.format("labels", 0)).input("pass, Pass").run()
    assert "the label 'pass' is given twice" in at.error[0].value
    assert at.button(key="evals:scale-save:small").disabled
    assert store.load_eval_set("small").scale == JUDGE_SCALE
