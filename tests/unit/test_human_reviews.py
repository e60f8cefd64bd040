"""People's judgements kept in the store (issue 27, point 3), on a real SQLite file and a
real PostgreSQL database: a score and note per run, and which of two answers is better;
each kept across a reopen, judged again replaces, bad input refused in words with nothing
kept, and no key pasted into a note is written."""

from __future__ import annotations

import pytest

from graph.service.human_reviews import HumanReviews, ReviewError
from graph.service.schema import SCHEMA_VERSION
from graph.service.store import Store
from graph.settings import Settings
from tests.review_support import recorded_experiment

KEY = "sk-proj-abcdefghijklmnop1234567890"


@pytest.fixture
def home(tmp_path, database_url):
    return Settings(home=tmp_path, provider="scripted", database_url=database_url)


@pytest.fixture
def store(home):
    opened = Store.open(home)
    yield opened
    opened.close()


def reopened(home) -> HumanReviews:
    return HumanReviews(Store.open(home))


def test_a_run_s_score_and_note_are_kept_and_a_second_score_replaces_the_first(store, home):
    runs = recorded_experiment(store)
    run_id = runs[("default", 0, 0)]
    reviews = HumanReviews(store)
    reviews.annotate(run_id, 2, "  misses the 2008 crash ")
    reviews.annotate(run_id, 4, "fine after all")
    again = reopened(home)
    (kept,) = again.annotations()
    assert (kept.run_id, kept.score, kept.note, kept.reviewer) == (
        run_id,
        4,
        "fine after all",
        None,
    )
    assert again.annotation(run_id).score == 4
    assert again.annotation(runs[("default", 1, 0)]) is None
    assert store.schema_version == SCHEMA_VERSION


@pytest.mark.parametrize(
    ("score", "said"),
    [
        (0, "from 1 to 5, not 0"),
        (6, "from 1 to 5, not 6"),
        (3.5, "whole number from 1 to 5, not 3.5"),
        ("4", "not '4'"),
        (True, "not True"),
    ],
)
def test_a_score_off_the_scale_is_refused_saying_the_scale(store, score, said):
    runs = recorded_experiment(store)
    with pytest.raises(ReviewError, match=said):
        HumanReviews(store).annotate(runs[("default", 0, 0)], score)
    assert HumanReviews(store).annotations() == []


def test_a_missing_run_or_an_overlong_note_is_refused_and_nothing_kept(store):
    runs = recorded_experiment(store)
    reviews = HumanReviews(store)
    with pytest.raises(ReviewError, match="no run 'gone' to annotate"):
        reviews.annotate("gone", 3)
    with pytest.raises(ReviewError, match="keep it to 2000"):
        reviews.annotate(runs[("default", 0, 0)], 3, "x" * 2001)
    assert reviews.annotations() == []


def test_a_pair_judgement_is_kept_once_whichever_side_each_run_was_shown_on(store, home):
    runs = recorded_experiment(store)
    base, other = runs[("default", 0, 0)], runs[("data-only plans", 0, 0)]
    reviews = HumanReviews(store)
    reviews.judge_pair("How did Tesla do in 2008?", base, other, "A", experiment_id="exp-review")
    reviews.judge_pair(
        "How did Tesla do in 2008?", other, base, "both bad", "neither names a figure", None,
        "exp-review",
    )  # fmt: skip
    (kept,) = reopened(home).pair_judgements("exp-review")
    assert (kept.run_a, kept.run_b, kept.choice, kept.note) == (
        other,
        base,
        "both bad",
        "neither names a figure",
    )
    assert kept.winner is None and kept.reviewer is None and kept.at > 0
    assert reopened(home).pair_judgements("another experiment") == []


def test_a_bad_pair_judgement_is_refused_in_words_and_nothing_kept(store):
    runs = recorded_experiment(store)
    recorded_experiment(store, "exp-other", repeats=1)
    base, other = runs[("default", 0, 0)], runs[("data-only plans", 0, 0)]
    reviews = HumanReviews(store)
    q = "How did Tesla do in 2008?"
    with pytest.raises(ReviewError, match="Choose one of A, B, tie, both bad, not 'C'"):
        reviews.judge_pair(q, base, other, "C")
    with pytest.raises(ReviewError, match="cannot be compared with itself"):
        reviews.judge_pair(q, base, base, "A")
    with pytest.raises(ReviewError, match="no run 'gone' to judge"):
        reviews.judge_pair(q, base, "gone", "A")
    with pytest.raises(ReviewError, match="must belong to the experiment"):
        reviews.judge_pair(q, base, "exp-other-r0-q0-v1", "A", experiment_id="exp-review")
    with pytest.raises(ReviewError, match="the question is empty"):
        reviews.judge_pair("  ", base, other, "tie")
    assert reviews.pair_judgements() == []


def test_no_key_pasted_into_a_note_is_written_to_the_store(store, home, tmp_path):
    runs = recorded_experiment(store)
    base, other = runs[("default", 0, 0)], runs[("data-only plans", 0, 0)]
    reviews = HumanReviews(store)
    reviews.annotate(base, 3, f"used key {KEY} here")
    reviews.judge_pair("How did Tesla do in 2008?", base, other, "B", f"key {KEY}")
    again = reopened(home)
    assert KEY not in again.annotations()[0].note and "[redacted]" in again.annotations()[0].note
    assert KEY not in again.pair_judgements()[0].note
    if home.database_url is None:  # the SQLite file itself, WAL included
        for path in tmp_path.glob("stepwise.sqlite*"):
            assert KEY.encode() not in path.read_bytes()
