"""How far the model judge agrees with people on the same runs (issue 27, point 4).

A judge is only worth its scores if it says what people say. Where a person and the judge
have both labelled the same items (runs scored on one scale, or pairs of runs with a
preferred side), this gives the share of items they agree on, Cohen's kappa (agreement
beyond what two raters with those label frequencies would reach by chance), and the items
they disagree on, so the judge's prompt can be improved on exactly those.

Kappa is ``(po - pe) / (1 - pe)``: ``po`` the share agreeing, ``pe`` the chance agreement,
the sum over labels of the two raters' shares of that label. It is undefined (``kappa`` is
None, ``no_kappa`` says why) with no item labelled by both, or when both raters used one
and the same label throughout (``pe`` is 1: no room for agreement beyond chance). Pure
functions over plain values, and two readers of the labels a store holds
(``score_agreement``, ``pair_agreement``); the words are the page's.

People score on their eval set's scale (``score_scales``), the judge on 1-5. The judge's
mean is put on the person's scale at the same share of the range (1 is the lowest point,
5 the highest) and rounded to the nearest point, a half up: on 1-5 it is the mean
rounded; on fail/pass a 3 or more is pass; on 0-10 a 3.75 is 7. Each score is compared on
the scale it was given on, so a scale changed later changes no agreement already seen.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Literal, Mapping

from graph.service.evals import GPA_METRICS
from graph.service.human_reviews import HumanReviews
from graph.service.score_scales import JUDGE_SCALE, ScoreScale
from graph.service.store import Store

log = logging.getLogger(__name__)

NoKappa = Literal["no_overlap", "one_label"]
# The labels of a pair of runs compared by preference: a person's "tie" and "both bad"
# both say neither side is better, which is all a judge's two scores can say.
A_BETTER, B_BETTER, NEITHER = "A", "B", "neither"


@dataclass(frozen=True)
class ScalePoint:
    """A score as a label to agree on: a 2 of fail/pass is not a 2 of 1-5."""

    point: int
    scale: ScoreScale

    def __str__(self) -> str:
        return self.scale.label(self.point)


@dataclass(frozen=True)
class Disagreement:
    item: str
    human: Hashable
    judge: Hashable


@dataclass(frozen=True)
class Agreement:
    """People against the judge on the items both labelled (``pairs``)."""

    pairs: int
    agreeing: int
    share: float | None  # agreeing / pairs; None without pairs
    kappa: float | None
    no_kappa: NoKappa | None  # why kappa is None
    disagreements: list[Disagreement] = field(default_factory=list)
    human_only: int = 0  # labelled by a person, not by the judge
    judge_only: int = 0


def agreement(human: Mapping[str, Hashable], judge: Mapping[str, Hashable]) -> Agreement:
    """Agreement of two raters' labels, each a map of item (a run id, a pair) to label;
    only items both labelled count. Disagreements in the order of ``human``."""
    both = [item for item in human if item in judge]
    human_only = len(human) - len(both)
    judge_only = len(judge) - len(both)
    if not both:
        return Agreement(0, 0, None, None, "no_overlap", [], human_only, judge_only)
    n = len(both)
    agreeing = sum(1 for item in both if human[item] == judge[item])
    disagreements = [
        Disagreement(item, human[item], judge[item]) for item in both if human[item] != judge[item]
    ]
    po = agreeing / n
    said_by_human = Counter(human[item] for item in both)
    said_by_judge = Counter(judge[item] for item in both)
    pe = sum(said_by_human[label] * said_by_judge[label] for label in said_by_human) / (n * n)
    if math.isclose(pe, 1.0):
        return Agreement(n, agreeing, po, None, "one_label", disagreements, human_only, judge_only)
    kappa = (po - pe) / (1 - pe)
    return Agreement(n, agreeing, po, kappa, None, disagreements, human_only, judge_only)


def judge_overall(scores: Mapping[str, Mapping]) -> float:
    """The judge's overall score of a run (1-5): the mean of its goal-plan-action scores."""
    return sum(float(scores[m]["score"]) for m in GPA_METRICS) / len(GPA_METRICS)


def judge_score_label(scores: Mapping[str, Mapping], scale: ScoreScale = JUDGE_SCALE) -> int:
    """The judge's overall score as a point of the ``scale`` a person scored on, at the
    same share of the range (a half rounds up: on 1-5 a 3.5 is 4), so a person's 4 and
    the judge's 3.75 agree."""
    return scale.nearest(JUDGE_SCALE.share(judge_overall(scores)))


def judge_preference(a: Mapping[str, Mapping], b: Mapping[str, Mapping]) -> str:
    """Which of two runs the judge's scores prefer: the higher overall score, "neither"
    when equal."""
    left, right = judge_overall(a), judge_overall(b)
    if math.isclose(left, right):
        return NEITHER
    return A_BETTER if left > right else B_BETTER


def human_preference(choice: str) -> str:
    """A person's choice (A, B, tie, both bad) as a preference label."""
    return choice if choice in (A_BETTER, B_BETTER) else NEITHER


def score_agreement(store: Store, run_ids: Iterable[str]) -> Agreement:
    """People's scores of these runs against the judge's overall scores, each on the
    scale the person's score was given on. A run scored by several people counts once per
    person (each a pair of raters)."""
    wanted = list(run_ids)
    judged = {run_id: found["scores"] for run_id in wanted if (found := store.judgement(run_id))}
    human: dict[str, Hashable] = {}
    judge: dict[str, Hashable] = {}
    notes = HumanReviews(store).annotations(wanted)
    scale_of = {note.run_id: note.scale for note in notes if not note.reviewer}
    for run_id, scores in judged.items():  # judged, and scored by no one: judge_only
        judge[run_id] = _scored(scores, scale_of.get(run_id, JUDGE_SCALE))
    for note in notes:
        item = note.run_id if not note.reviewer else f"{note.run_id} ({note.reviewer})"
        human[item] = ScalePoint(note.score, note.scale)
        if note.run_id in judged:
            judge[item] = _scored(judged[note.run_id], note.scale)
    return agreement(human, {k: v for k, v in judge.items() if v is not None})


def _scored(scores: object, scale: ScoreScale) -> Hashable | None:
    """The judge's label of a run on ``scale`` (None: scores of another shape)."""
    return _judge_label(scores, lambda found: ScalePoint(judge_score_label(found, scale), scale))


def pair_agreement(store: Store, experiment_id: str) -> Agreement:
    """People's pairwise choices in an experiment against the preference the judge's
    scores of the same two runs imply; an item is "question: run A vs run B"."""
    human: dict[str, Hashable] = {}
    judge: dict[str, Hashable] = {}
    for j in HumanReviews(store).pair_judgements(experiment_id):
        item = f"{j.run_a} vs {j.run_b}" + (f" ({j.reviewer})" if j.reviewer else "")
        human[item] = human_preference(j.choice)
        a, b = store.judgement(j.run_a), store.judgement(j.run_b)
        if a and b:
            label = _judge_label((a["scores"], b["scores"]), lambda both: judge_preference(*both))
            if label is not None:
                judge[item] = label
    return agreement(human, judge)


def _judge_label(scores: object, label_of: Callable[[Any], Hashable]) -> Hashable | None:
    """A label from stored judge scores; None (and logged) for scores of another shape,
    such as a judgement stored by an older judge prompt."""
    try:
        return label_of(scores)
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("judge scores of another shape left out of the agreement: %r", exc)
        return None
