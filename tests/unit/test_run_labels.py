"""A run's label in the pages' select boxes. A select box sends back the label it shows,
so two runs with one label cannot be told apart: choosing the second chose the first (CI
saw the playground try a fork's parent instead of the fork, both started in one second)."""

from graph.service.repositories.shared import RunRecord
from ui.run_view import run_label

QUESTION = "Which stock in the database grew the most between 2005 and 2009?"


def _record(run_id: str, created_at: float) -> RunRecord:
    return RunRecord(
        id=run_id,
        question=QUESTION,
        system="plan_execute",
        design={},
        prompt_versions={},
        status="done",
        reason="",
        model_label="offline scripted model",
        created_at=created_at,
        started_at=created_at,
        finished_at=created_at + 0.2,
        final_answer="",
        counts={},
        parent_run=None,
        parent_checkpoint=None,
    )


def test_two_runs_of_one_question_in_one_second_have_different_labels():
    parent = _record("61121ef6c60e41d78fcbedd7257036ba", 1_800_000_000.1)
    fork = _record("0c16555284294f6a843cc31486dbbc2b", 1_800_000_000.6)
    assert run_label(parent) != run_label(fork)
    assert run_label(fork).endswith("· 0c165552")
    assert QUESTION in run_label(fork)


def test_an_experiments_place_follows_the_short_id():
    label = run_label(
        _record("0c16555284294f6a843cc31486dbbc2b", 1_800_000_000.0),
        {"experiment": "pace check", "variant": "B", "repeat": 1, "repeats": 2},
    )
    assert label.endswith("· 0c165552 · pace check: B, repeat 2 of 2")
