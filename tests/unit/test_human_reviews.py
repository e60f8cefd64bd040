"""People's judgements kept in the store (issue 27, point 3), on a real SQLite file and a
real PostgreSQL database: a score and note per run, and which of two answers is better;
each kept across a reopen, judged again replaces, bad input refused in words with nothing
kept, and no key pasted into a note is written. Scores on the scale of the run's eval set:
each keeps the scale it was given on (a later change never reinterprets it), a version-5
database keeps its scores on the judge's 1-5, and the judge's agreement with people holds
on a scale that is not 1-5 (values worked out by hand)."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.service.database_choice import open_database
from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.human_reviews import HumanReviews, ReviewError
from graph.service.judge_agreement import score_agreement
from graph.service.run_scales import run_scale
from graph.service.run_to_eval import add_question
from graph.service.schema import MIGRATIONS, SCHEMA_VERSION
from graph.service.score_scales import JUDGE_SCALE, ScoreScale
from graph.service.store import Store
from graph.settings import Settings
from tests.review_support import QUESTIONS, VARIANTS, recorded_experiment

KEY = "sk-proj-abcdefghijklmnop1234567890"
PASS_FAIL = ScoreScale(labels=("fail", "pass"))
TEN = ScoreScale(low=0, high=10)
BASE, OTHER = VARIANTS


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


def review_set(scale: ScoreScale) -> EvalSet:
    """The set ``recorded_experiment`` ran, as stored with ``scale``."""
    return EvalSet(
        name="review", questions=[EvalQuestion(question=q) for q in QUESTIONS], scale=scale
    )


def gpa(score: int) -> dict:
    names = ("plan_quality", "plan_adherence", "execution_efficiency", "logical_consistency")
    return {name: {"score": score, "reason": ""} for name in names}


def test_an_eval_set_keeps_its_scale_across_a_reopen(store, home):
    store.save_eval_set(review_set(PASS_FAIL))
    store.save_eval_set(EvalSet(name="plain", questions=[EvalQuestion(question="q")]))
    again = Store.open(home)
    assert again.load_eval_set("review").scale == PASS_FAIL
    assert again.load_eval_set("plain").scale == JUDGE_SCALE
    again.close()


def test_a_run_is_scored_on_the_scale_of_the_eval_set_it_belongs_to(store):
    runs = recorded_experiment(store, repeats=1)
    run_id = runs[(BASE, 0, 0)]
    # The experiment's set is not stored: its copy (made before scales) is on 1-5.
    assert run_scale(store, run_id).scale == JUDGE_SCALE
    store.save_eval_set(review_set(PASS_FAIL))
    found = run_scale(store, run_id)
    assert (found.scale, found.eval_set, found.experiment) == (PASS_FAIL, "review", "review me")
    # A run added to a set from the Run or History page.
    store.create_run("added", "Who is IBM?", Design(), "offline scripted model")
    assert run_scale(store, "added").eval_set is None  # in no set yet: the default
    assert run_scale(store, "added").scale == JUDGE_SCALE
    saved, _ = add_question(
        store, "mine", EvalQuestion(question="Who is IBM?"), new_set=True, run_id="added"
    )
    store.save_eval_set(saved.model_copy(update={"scale": TEN}))
    assert (run_scale(store, "added").scale, run_scale(store, "added").eval_set) == (TEN, "mine")
    # An experiment whose set was deleted keeps the scale of the copy it ran.
    store.create_experiment(
        "exp-ten", "ten", EvalSet(name="gone", questions=[EvalQuestion(question="q")], scale=TEN),
        [{"name": "v", "prompts": {}, "versions": {}, "model": None}], 1, 1, Design(),
        Settings(provider="scripted"),
    )  # fmt: skip
    store.create_run("ten-run", "q", Design(), "offline scripted model")
    store.add_experiment_run("exp-ten", "ten-run", "v", 0, 0)
    assert (run_scale(store, "ten-run").scale, run_scale(store, "ten-run").eval_set) == (
        TEN,
        "gone",
    )


def test_a_score_keeps_the_scale_it_was_given_on_when_the_set_s_scale_changes(store, home):
    runs = recorded_experiment(store, repeats=1)
    run_id = runs[(BASE, 0, 0)]
    store.save_eval_set(review_set(PASS_FAIL))
    reviews = HumanReviews(store)
    with pytest.raises(ReviewError, match=r"from 1 to 2 \(1 fail, 2 pass\), not 3"):
        reviews.annotate(run_id, 3)
    kept = reviews.annotate(run_id, 2, "names the crash")
    assert (kept.scale, kept.label) == (PASS_FAIL, "pass")
    store.save_eval_set(review_set(TEN))  # the set's author changes their mind
    again = HumanReviews(Store.open(home))
    old = again.annotation(run_id)
    assert (old.score, old.scale, old.label, old.note) == (2, PASS_FAIL, "pass", "names the crash")
    newer = again.annotate(runs[(BASE, 1, 0)], 7)  # scored from now on 0-10
    assert again.annotation(newer.run_id).scale == TEN
    with pytest.raises(ReviewError, match="from 0 to 10, not 11"):
        again.annotate(run_id, 11)
    assert again.annotation(run_id).label == "pass"  # a refused score changes nothing


def test_a_version_5_database_keeps_its_scores_on_the_judge_s_one_to_five(tmp_path, database_url):
    before = open_database(path=tmp_path / "stepwise.sqlite", url=database_url)
    assert before.migrate(MIGRATIONS[:5]) == 5
    before.execute(
        "INSERT INTO annotations (run_id, reviewer, score, note, annotated_at) "
        "VALUES (?, ?, ?, ?, ?)",
        ("run-old", "", 4, "scored before scales", 1.0),
    )
    before.close()
    store = Store.open(Settings(home=tmp_path, database_url=database_url))
    assert store.schema_version == SCHEMA_VERSION >= 6
    (old,) = HumanReviews(store).annotations()
    assert (old.run_id, old.score, old.note, old.scale) == (
        "run-old",
        4,
        "scored before scales",
        JUDGE_SCALE,
    )
    assert store._query("SELECT scale_json FROM annotations")[0][0] is not None  # written in
    assert run_scale(store, "run-old").scale == JUDGE_SCALE
    store.close()


def test_the_judge_agrees_with_people_on_a_pass_fail_scale_worked_out_by_hand(store):
    runs = recorded_experiment(store, repeats=1)
    store.save_eval_set(review_set(PASS_FAIL))
    reviews = HumanReviews(store)
    ids = [runs[(v, q, 0)] for q in range(3) for v in VARIANTS][:5]
    # The judge's mean m (1-5) on fail/pass (points 1-2): 1 + (m - 1) / 4, rounded half up.
    #   run:     1     2     3     4     5 (scored on 1-5, before the set had a scale)
    #   judge:   4     2     3     1     4
    #   on it:   pass  fail  pass  fail  4      (1.75, 1.25, 1.5, 1 -> 2, 1, 2, 1)
    #   person:  pass  pass  pass  fail  4
    # Agreeing: runs 1, 3, 4, 5 -> po = 4/5 = 0.8
    # Person: pass 3, fail 1, "4 of 1-5" 1; judge: pass 2, fail 2, "4 of 1-5" 1.
    # pe = (3*2 + 1*2 + 1*1) / 5^2 = 9/25 = 0.36; kappa = (0.8 - 0.36) / 0.64 = 0.6875
    for run_id, judge, person in zip(ids[:4], (4, 2, 3, 1), (2, 2, 2, 1), strict=True):
        store.save_judgement(run_id, "judge-model", gpa(judge))
        reviews.annotate(run_id, person)
    store.save_judgement(ids[4], "judge-model", gpa(4))
    reviews.annotate(ids[4], 4, scale=JUDGE_SCALE)
    found = score_agreement(store, runs.values())
    assert (found.pairs, found.agreeing) == (5, 4)
    assert found.share == pytest.approx(0.8)
    assert found.kappa == pytest.approx(0.6875)
    (miss,) = found.disagreements
    assert (miss.item, str(miss.human), str(miss.judge)) == (ids[1], "pass", "fail")
