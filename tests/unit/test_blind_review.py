"""Blind pairwise review of an experiment (issue 27, point 3), on a real store: the queue
pairs the baseline with each variant on the same question and repeat, in a seeded random
order with random sides and no variant name in it; win rates with their Wilson interval;
the export names the variants and holds no key; the judge's agreement with the people."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

import pytest

from graph.service.blind_review import (
    EXPORT_COLUMNS,
    export_csv,
    export_json,
    export_rows,
    judged_keys,
    review_queue,
    win_rates,
)
from graph.service.eval_statistics import wilson
from graph.service.human_reviews import HumanReviews
from graph.service.judge_agreement import pair_agreement, score_agreement
from graph.service.store import Store
from tests.review_support import QUESTIONS, VARIANTS, recorded_experiment

BASE, OTHER = VARIANTS
KEY = "sk-proj-abcdefghijklmnop1234567890"


def gpa(score: int) -> dict:
    names = ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")
    return {n: {"score": score, "reason": "r"} for n in names}


def test_the_queue_pairs_baseline_and_variant_runs_of_one_question_blind_and_seeded(store):
    runs = recorded_experiment(store, repeats=2)
    variant_of = {run_id: variant for (variant, _, _), run_id in runs.items()}
    place_of = {run_id: (q, r) for (_, q, r), run_id in runs.items()}
    queue = review_queue(store, "exp-review", BASE)
    assert len(queue) == 6  # 3 questions x 2 repeats, one variant beside the baseline
    for pair in queue:
        assert {variant_of[pair.run_a], variant_of[pair.run_b]} == {BASE, OTHER}
        assert place_of[pair.run_a] == place_of[pair.run_b]
        assert pair.question == QUESTIONS[place_of[pair.run_a][0]]
        shown = json.dumps(asdict(pair))
        assert BASE not in shown and OTHER not in shown  # what the view receives
    # Random sides: the baseline is on the left in some pairs and on the right in others;
    # a random order: not the order the runs were made in.
    assert {variant_of[p.run_a] for p in queue} == {BASE, OTHER}
    made = sorted(queue, key=lambda p: place_of[p.run_a])  # question, then repeat
    assert queue != made
    # Seeded: a reload (another store object on the same file) draws the same queue.
    again = Store(store.database.path)
    assert review_queue(again, "exp-review", BASE) == queue
    assert review_queue(store, "exp-review", OTHER) != queue  # another baseline, another draw


def test_runs_that_did_not_end_are_not_queued(store):
    runs = recorded_experiment(store, repeats=1)
    store.set_run_status(runs[(OTHER, 1, 0)], "waiting")
    store.delete_run(runs[(BASE, 2, 0)])
    queue = review_queue(store, "exp-review", BASE)
    assert [p.question for p in queue] == [QUESTIONS[0]]


def test_win_rates_count_preferences_with_a_wilson_interval_and_ties_beside(store):
    recorded_experiment(store, repeats=2)
    reviews = HumanReviews(store)
    queue = review_queue(store, "exp-review", BASE)
    variant_of = {r["run_id"]: r["variant"] for r in store.experiment_runs("exp-review")}
    # The variant wins three pairs, loses one; one tie, one both bad.
    wanted = ["win", "win", "win", "loss", "tie", "both bad"]
    for pair, outcome in zip(queue, wanted, strict=True):
        if outcome in ("win", "loss"):
            variant_side = "A" if variant_of[pair.run_a] == OTHER else "B"
            base_side = "B" if variant_side == "A" else "A"
            choice = variant_side if outcome == "win" else base_side
        else:
            choice = outcome
        reviews.judge_pair(pair.question, pair.run_a, pair.run_b, choice, "", None, "exp-review")
    (row,) = win_rates(store, "exp-review", BASE)
    assert (row["variant"], row["pairs"], row["wins"], row["losses"]) == (OTHER, 6, 3, 1)
    assert (row["ties"], row["both_bad"]) == (1, 1)
    assert row["win_rate"] == pytest.approx(0.75)  # 3 of the 4 pairs with a preferred side
    assert (row["low"], row["high"]) == pytest.approx(wilson(3, 4))
    assert 0.0 < row["low"] < 0.75 < row["high"] <= 1.0
    assert len(judged_keys(reviews, "exp-review", None)) == 6
    assert judged_keys(reviews, "exp-review", "alice") == {}


def test_no_judgement_yet_has_no_win_rate(store):
    recorded_experiment(store, repeats=1)
    (row,) = win_rates(store, "exp-review", BASE)
    assert (row["pairs"], row["win_rate"], row["low"], row["high"]) == (0, None, None, None)


def test_the_export_names_the_variants_in_csv_and_json_and_holds_no_key(store):
    recorded_experiment(store, repeats=1)
    reviews = HumanReviews(store)
    pair = review_queue(store, "exp-review", BASE)[0]
    reviews.judge_pair(pair.question, pair.run_a, pair.run_b, "A", f"the key {KEY}", None,
                       "exp-review")  # fmt: skip
    variant_of = {r["run_id"]: r["variant"] for r in store.experiment_runs("exp-review")}
    rows = export_rows(store, "exp-review")
    read = list(csv.DictReader(io.StringIO(export_csv(rows))))
    assert list(read[0]) == list(EXPORT_COLUMNS)
    assert read[0]["variant_a"] == variant_of[pair.run_a]
    assert read[0]["preferred_variant"] == variant_of[pair.run_a]
    assert read[0]["choice"] == "A" and read[0]["question"] == pair.question
    document = json.loads(
        export_json("review me", BASE, rows, win_rates(store, "exp-review", BASE))
    )
    assert document["format"] == "stepwise-pairwise-review"
    assert document["judgements"][0]["run_b"] == pair.run_b
    assert document["win_rates"][0]["variant"] == OTHER
    for text in (export_csv(rows), json.dumps(document)):
        assert KEY not in text


def test_the_judge_s_agreement_with_people_on_scores_and_on_pairs(store):
    runs = recorded_experiment(store, repeats=1)
    reviews = HumanReviews(store)
    # Scores: the judge's overall 4, 2, 5; people 4, 2, 3 -> agree on two runs.
    for (variant, question), judge, person in (
        ((BASE, 0), 4, 4),
        ((BASE, 1), 2, 2),
        ((BASE, 2), 5, 3),
    ):
        run_id = runs[(variant, question, 0)]
        store.save_judgement(run_id, "judge-model", gpa(judge))
        reviews.annotate(run_id, person)
    found = score_agreement(store, runs.values())
    assert (found.pairs, found.agreeing) == (3, 2)
    assert [d.item for d in found.disagreements] == [runs[(BASE, 2, 0)]]
    # Pairs: the variant's run of question 0 judged 5 against the baseline's 4.
    store.save_judgement(runs[(OTHER, 0, 0)], "judge-model", gpa(5))
    base, other = runs[(BASE, 0, 0)], runs[(OTHER, 0, 0)]
    reviews.judge_pair(QUESTIONS[0], other, base, "B", "", None, "exp-review")
    found = pair_agreement(store, "exp-review")
    assert (found.pairs, found.agreeing) == (1, 0)
    assert (found.disagreements[0].human, found.disagreements[0].judge) == ("B", "A")
