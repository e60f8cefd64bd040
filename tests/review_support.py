"""A recorded experiment made straight in a real store (no runs executed), for the tests
of people's reviews: the runs exist and have ended, with the answers given here."""

from __future__ import annotations

from graph.kernel.design import Design
from graph.service.eval_sets import EvalQuestion, EvalSet
from graph.service.store import Store
from graph.settings import Settings

QUESTIONS = ("How did Tesla do in 2008?", "Why did IBM sell its PC division?", "Who is AAPL?")
VARIANTS = ("default", "data-only plans")


def recorded_experiment(
    store: Store, experiment_id: str = "exp-review", repeats: int = 2, status: str = "done"
) -> dict[tuple[str, int, int], str]:
    """An experiment of ``VARIANTS`` over ``QUESTIONS`` and ``repeats``, every run ended
    ``status`` with an answer naming its variant; {(variant, question, repeat): run id}."""
    eval_set = EvalSet(name="review", questions=[EvalQuestion(question=q) for q in QUESTIONS])
    store.create_experiment(
        experiment_id,
        "review me",
        eval_set,
        [{"name": v, "prompts": {}, "versions": {}, "model": None} for v in VARIANTS],
        repeats,
        1,
        Design(),
        Settings(provider="scripted"),
    )
    runs = {}
    for repeat in range(repeats):
        for index, question in enumerate(QUESTIONS):
            for n, variant in enumerate(VARIANTS):
                run_id = f"{experiment_id}-r{repeat}-q{index}-v{n}"
                store.create_run(run_id, question, Design(), "offline scripted model")
                store.set_run_status(run_id, status)
                store.add_experiment_run(experiment_id, run_id, variant, index, repeat)
                runs[(variant, index, repeat)] = run_id
    store.set_experiment_status(experiment_id, "done")
    return runs
