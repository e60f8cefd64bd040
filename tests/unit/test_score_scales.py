"""An eval set's own score scale (issue 27, point 3): the judge's 1-5 by default, a bad
scale refused in a sentence, and the scale carried through Stepwise's JSON and the
LangSmith/Langfuse JSONL shapes (in metadata, so a file without one gets the default and
an imported file still goes back out byte for byte)."""

from __future__ import annotations

import json

import pytest

from graph.service.eval_formats import FormatError, export_jsonl, import_jsonl
from graph.service.eval_sets import (
    EvalQuestion,
    EvalSet,
    EvalSetError,
    export_eval_set,
    import_eval_set,
    load_starter,
    with_kept_fields,
)
from graph.service.judge_agreement import judge_score_label
from graph.service.score_scales import JUDGE_SCALE, ScaleError, ScoreScale, scale_from
from ui.evals.scale_form import LABELS, NUMBERS, scale_from_fields

PASS_FAIL = ScoreScale(labels=("fail", "pass"))
TEN = ScoreScale(low=0, high=10, low_word="useless", high_word="perfect")


def one_question(scale: ScoreScale | None = None) -> EvalSet:
    found = {} if scale is None else {"scale": scale}
    return EvalSet(name="s", questions=[EvalQuestion(question="Who is AAPL?")], **found)


def gpa(*scores: int) -> dict:
    names = ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")
    return {name: {"score": s, "reason": ""} for name, s in zip(names, scores, strict=True)}


def test_an_eval_set_without_a_scale_is_scored_on_the_judge_s_one_to_five():
    assert one_question().scale == JUDGE_SCALE
    assert load_starter().scale == JUDGE_SCALE
    assert JUDGE_SCALE.points == [1, 2, 3, 4, 5]
    assert JUDGE_SCALE.describe() == "1 (poor) to 5 (good)"
    assert [JUDGE_SCALE.label(p) for p in (1, 3, 5)] == ["1 poor", "3", "5 good"]


def test_a_scale_of_labels_numbers_them_from_one_lowest_first():
    scale = scale_from({"labels": [" fail ", "pass"]})
    assert scale == PASS_FAIL and (scale.low, scale.high) == (1, 2)
    assert [scale.label(p) for p in scale.points] == ["fail", "pass"]
    assert scale.describe() == "fail or pass"
    assert scale.document() == {"labels": ["fail", "pass"]}
    assert TEN.describe() == "0 (useless) to 10 (perfect)"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"low": 5, "high": 3}, "the lowest score (5) must be below the highest (3)"),
        ({"low": 3, "high": 3}, "the lowest score (3) must be below the highest (3)"),
        (
            {"low": 0, "high": 20},
            "21 points from 0 to 20 are too many to score by eye: keep it to 11",
        ),
        ({"low": -5000, "high": 1}, "the ends of a scale are whole numbers from -1000 to 1000"),
        ({"low": "1", "high": 5}, "low: Input should be a valid integer"),
        ({"low": 1.5, "high": 5}, "low: Input should be a valid integer"),
        ({"labels": []}, "a scale of labels needs two at least (e.g. fail, pass)"),
        ({"labels": ["pass"]}, "a scale of labels needs two at least"),
        ({"labels": ["fail", " ", "pass"]}, "label 2 is empty: give every point a word"),
        ({"labels": ["pass", "Pass"]}, "the label 'pass' is given twice"),
        ({"labels": [str(n) for n in range(12)]}, "12 labels are too many to score by eye"),
        ({"labels": ["fail", "pass"], "high": 5}, "numbers its points 1 to 2: leave low and high"),
        ({"low_word": "x" * 41}, "the word for the low end is too long: keep it to 40"),
        ({"steps": 3}, "steps: Extra inputs are not permitted"),
    ],
)
def test_a_bad_scale_is_refused_in_a_sentence_saying_why(fields, said):
    with pytest.raises(ScaleError) as caught:
        scale_from(fields)
    message = str(caught.value)
    assert message.startswith("The score scale is not usable: ") and said in message, message


def test_the_evals_page_fields_make_a_scale_or_say_what_is_wrong():
    assert scale_from_fields(LABELS, 0, 0, "", "", "fail, pass") == PASS_FAIL
    assert scale_from_fields(NUMBERS, 0, 10, "useless", "perfect", "ignored") == TEN
    with pytest.raises(ScaleError, match="label 3 is empty"):
        scale_from_fields(LABELS, 0, 0, "", "", "fail, pass,")
    with pytest.raises(ScaleError, match=r"lowest score \(4\) must be below the highest \(2\)"):
        scale_from_fields(NUMBERS, 4, 2, "", "", "")


def test_stepwise_json_carries_a_scale_and_an_old_file_without_one_gets_the_default():
    document = export_eval_set(one_question(PASS_FAIL))
    assert document["eval_set"]["scale"] == {"labels": ["fail", "pass"]}
    back = import_eval_set(json.dumps(document))
    assert back.scale == PASS_FAIL and back == one_question(PASS_FAIL)
    assert import_eval_set(export_eval_set(one_question(TEN))).scale == TEN
    old = export_eval_set(one_question())  # the default is left out: files stay as they were
    assert "scale" not in old["eval_set"]
    assert import_eval_set(old).scale == JUDGE_SCALE


def test_a_bad_scale_in_a_stepwise_file_is_named_and_refused():
    document = export_eval_set(one_question(TEN))
    document["eval_set"]["scale"] = {"low": 4, "high": 2}
    with pytest.raises(EvalSetError, match=r"scale: the lowest score \(4\) must be below"):
        import_eval_set(document)


def test_an_edit_that_shows_no_scale_keeps_the_set_s_scale():
    before = one_question(PASS_FAIL)
    assert with_kept_fields(one_question(), before).scale == PASS_FAIL
    assert with_kept_fields(one_question(TEN), before).scale == TEN  # an edit that gave one


@pytest.mark.parametrize("shape", ["langsmith", "langfuse"])
def test_the_jsonl_shapes_carry_the_scale_in_metadata_and_back(shape):
    starter = load_starter().model_copy(update={"scale": PASS_FAIL})
    text = export_jsonl(starter, shape)
    lines = [json.loads(row) for row in text.splitlines()]
    assert all(line["metadata"]["stepwise_scale"] == {"labels": ["fail", "pass"]} for line in lines)
    back = import_jsonl(text, "starter", starter.description)
    assert back.scale == PASS_FAIL
    assert all("stepwise_scale" not in q.metadata for q in back.questions)
    assert export_jsonl(back, shape) == text
    # Without a scale (the default): no stepwise_scale written, and none read.
    plain = export_jsonl(load_starter(), shape)
    assert "stepwise_scale" not in plain
    assert import_jsonl(plain, "starter").scale == JUDGE_SCALE


def test_a_line_s_own_spelling_of_the_scale_goes_back_out_and_a_line_without_gains_it():
    lines = [
        {
            "input": "Who is AAPL?",
            "metadata": {"stepwise_scale": {"high": 10, "low": 0}, "topic": "tickers"},
            "status": "ACTIVE",
        },
        {"input": "Who is IBM?", "metadata": {"topic": "tickers"}},  # another tool's line
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    imported = import_jsonl(text, "x")
    assert imported.scale == ScoreScale(low=0, high=10)
    assert export_jsonl(imported, "langfuse") == text.replace(
        '{"topic": "tickers"}}', '{"topic": "tickers", "stepwise_scale": {"low": 0, "high": 10}}}'
    )


def test_a_line_with_a_bad_or_another_scale_is_named_and_nothing_imported():
    good = {"inputs": {"question": "q1"}, "metadata": {"stepwise_scale": {"labels": ["no", "yes"]}}}
    bad = {"inputs": {"question": "q2"}, "metadata": {"stepwise_scale": {"low": 9, "high": 1}}}
    other = {"inputs": {"question": "q3"}, "metadata": {"stepwise_scale": {"low": 1, "high": 3}}}
    with pytest.raises(FormatError) as caught:
        import_jsonl(json.dumps(good) + "\n" + json.dumps(bad) + "\n", "x")
    assert str(caught.value).startswith(
        "line 2, field metadata.stepwise_scale: the lowest score (9) must be below"
    )
    with pytest.raises(FormatError) as caught:
        import_jsonl(json.dumps(good) + "\n" + json.dumps(other) + "\n", "x")
    assert str(caught.value) == (
        "line 2, field metadata.stepwise_scale: 1 to 3 differs from line 1's no or yes; an "
        "eval set has one scale."
    )


def test_the_judge_s_mean_lands_on_another_scale_at_the_same_share_worked_by_hand():
    # The judge's 1-5 mean m is at share (m - 1) / 4 of its range; on a scale low..high
    # that share is low + share * (high - low), rounded to the nearest point, a half up.
    #   m = 3.75 -> share 0.6875: on 0-10, 6.875 -> 7; on fail/pass (1-2), 1.6875 -> 2 pass
    #   m = 3    -> share 0.5:    on 0-10, 5;            on fail/pass, 1.5 -> 2 pass
    #   m = 2.75 -> share 0.4375: on 0-10, 4.375 -> 4;   on fail/pass, 1.4375 -> 1 fail
    #   m = 1    -> share 0:      on 0-10, 0;            on fail/pass, 1 fail
    cases = [((4, 4, 4, 3), 7, 2), ((3, 3, 3, 3), 5, 2), ((3, 3, 3, 2), 4, 1), ((1, 1, 1, 1), 0, 1)]
    for scores, on_ten, on_pass_fail in cases:
        assert judge_score_label(gpa(*scores), TEN) == on_ten, scores
        assert judge_score_label(gpa(*scores), PASS_FAIL) == on_pass_fail, scores
    # On 1-5 itself the mean is only rounded, as before scales existed.
    assert judge_score_label(gpa(4, 4, 3, 3), JUDGE_SCALE) == 4  # 3.5
    assert judge_score_label(gpa(4, 3, 3, 3), JUDGE_SCALE) == 3  # 3.25
