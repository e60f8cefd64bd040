"""The judge calibrated against people (issue 27, point 4): agreement, Cohen's kappa and the
runs they disagree on, on labels whose values are worked out by hand below."""

from __future__ import annotations

import pytest

from graph.service.judge_agreement import (
    NEITHER,
    Disagreement,
    agreement,
    human_preference,
    judge_preference,
    judge_score_label,
)


def gpa(*scores: int) -> dict:
    names = ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")
    return {name: {"score": s, "reason": ""} for name, s in zip(names, scores, strict=True)}


def test_agreement_and_kappa_match_the_values_worked_out_by_hand():
    # Six runs both scored, one scored by a person only (r7), one by the judge only (r8).
    #   run:    r1 r2 r3 r4 r5 r6
    #   person:  5  4  4  2  2  5
    #   judge:   5  4  2  2  4  4
    # Agreeing: r1, r2, r4 -> po = 3/6 = 0.5
    # Person's labels: 5 x2, 4 x2, 2 x2; the judge's: 5 x1, 4 x3, 2 x2.
    # pe = (2*1 + 2*3 + 2*2) / 6^2 = 12/36 = 1/3
    # kappa = (1/2 - 1/3) / (1 - 1/3) = (1/6) / (2/3) = 0.25
    human = {"r1": 5, "r2": 4, "r3": 4, "r4": 2, "r5": 2, "r6": 5, "r7": 3}
    judge = {"r1": 5, "r2": 4, "r3": 2, "r4": 2, "r5": 4, "r6": 4, "r8": 1}
    found = agreement(human, judge)
    assert (found.pairs, found.agreeing) == (6, 3)
    assert found.share == pytest.approx(0.5)
    assert found.kappa == pytest.approx(0.25)
    assert found.no_kappa is None
    assert found.disagreements == [
        Disagreement("r3", 4, 2),
        Disagreement("r5", 2, 4),
        Disagreement("r6", 5, 4),
    ]
    assert (found.human_only, found.judge_only) == (1, 1)


def test_two_labels_kappa_worked_out_by_hand():
    # person: G G G G G G B B B B ; judge: G G G G B B B B B G
    # agreeing: the first four and 7-9 -> po = 7/10
    # person G 6, B 4; judge G 5, B 5 -> pe = (6*5 + 4*5) / 100 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    human = {f"r{i}": label for i, label in enumerate("GGGGGGBBBB")}
    judge = {f"r{i}": label for i, label in enumerate("GGGGBBBBBG")}
    found = agreement(human, judge)
    assert found.share == pytest.approx(0.7)
    assert found.kappa == pytest.approx(0.4)
    assert [d.item for d in found.disagreements] == ["r4", "r5", "r9"]


def test_no_run_labelled_by_both_has_no_share_and_no_kappa_and_says_why():
    found = agreement({"r1": 4}, {"r2": 4})
    assert (found.pairs, found.share, found.kappa, found.no_kappa) == (0, None, None, "no_overlap")
    assert (found.human_only, found.judge_only) == (1, 1)
    assert agreement({}, {}).no_kappa == "no_overlap"


def test_one_label_used_by_both_leaves_kappa_undefined_instead_of_dividing_by_zero():
    # Both always say 4: po = 1, pe = (3*3)/9 = 1, so 1 - pe = 0: kappa is undefined.
    found = agreement({"a": 4, "b": 4, "c": 4}, {"a": 4, "b": 4, "c": 4})
    assert (found.share, found.kappa, found.no_kappa) == (1.0, None, "one_label")


def test_one_rater_with_one_label_still_has_a_kappa_of_zero():
    # person: 4 4 4 4; judge: 4 4 2 5 -> po = 2/4; pe = (4*2)/16 = 0.5; kappa = 0.
    found = agreement({"a": 4, "b": 4, "c": 4, "d": 4}, {"a": 4, "b": 4, "c": 2, "d": 5})
    assert found.kappa == pytest.approx(0.0)
    assert found.no_kappa is None


def test_the_judge_s_scores_become_one_label_on_the_person_s_scale_and_a_preference():
    assert judge_score_label(gpa(4, 4, 3, 3)) == 4  # mean 3.5 rounds up
    assert judge_score_label(gpa(4, 3, 3, 3)) == 3  # mean 3.25
    assert judge_preference(gpa(5, 5, 5, 4), gpa(4, 4, 4, 4)) == "A"
    assert judge_preference(gpa(2, 2, 2, 2), gpa(4, 4, 4, 4)) == "B"
    assert judge_preference(gpa(4, 3, 4, 3), gpa(3, 4, 3, 4)) == NEITHER
    assert [human_preference(c) for c in ("A", "B", "tie", "both bad")] == [
        "A",
        "B",
        NEITHER,
        NEITHER,
    ]
