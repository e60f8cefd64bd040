"""Differences with their uncertainty (issue #27 point 1): noise is not a win, a pass rate
that differs is, a variant whose runs fail is never better on steps; the intervals'
methods checked against values worked out by hand."""

from __future__ import annotations

import pytest

import graph.plan_execute  # noqa: F401  (declares the prompts read below)
from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service import eval_statistics as stats
from graph.service.eval_sets import Check, EvalQuestion, EvalSet
from graph.service.experiment_comparison import compare, run_records
from graph.service.experiment_variants import Variant
from graph.service.experiments import ExperimentRunner
from graph.service.run_service import RunService
from graph.settings import Settings

PLANNER = "plan_execute/planner"
IBM = "Why did IBM sell its PC division to Lenovo?"
CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
# The scripted planner plans only the agents named in this line of its prompt.
NO_DATA_PLANNER = default_text(PLANNER).replace(
    '"agent" must be one of: {agent_names}', '"agent" must be one of: web_researcher, synthesizer'
)
NOBODY_PLANNER = default_text(PLANNER).replace(
    '"agent" must be one of: {agent_names}', '"agent" must be one of: nobody'
)


def one_question(question: str, *checks: Check) -> EvalSet:
    return EvalSet(name="one", questions=[EvalQuestion(question=question, checks=list(checks))])


def run(service: RunService, eval_set: EvalSet, variants: list[Variant], repeats: int, workers=4):
    runner = ExperimentRunner.of(service)
    experiment_id = runner.start("t", eval_set, variants, repeats=repeats, max_workers=workers)
    assert runner.wait(experiment_id, timeout=120).status == "done"
    return experiment_id


# ------------------------------------------------------------------ on real runs


@pytest.fixture
def noisy_service(store, tmp_path):
    """The offline scripted model with a random pause of up to 100 ms per call, drawn from
    a seeded sequence (seed 2: one whose pauses alone put the two variants' mean times
    0.5 ms apart, so the machine's own timing noise does not tip the test either way)."""
    settings = Settings(home=tmp_path, provider="scripted", scripted_jitter_s=0.1, scripted_seed=2)
    svc = RunService(store, settings, timeout_tick_s=0)
    yield svc
    svc.shutdown()


def test_two_variants_differing_only_by_noise_show_no_clear_difference_on_time(noisy_service):
    # A first run pays for what is loaded once (it would make A slower); one worker: the
    # runs take the seeded pauses in their queued order
    noisy_service.wait(noisy_service.start(IBM, Design()), timeout=60)
    same = [Variant(name="A"), Variant(name="B")]
    experiment_id = run(noisy_service, one_question(IBM), same, repeats=10, workers=1)
    records = run_records(noisy_service.store, experiment_id)
    times = {v: [r["latency_s"] for r in records if r["variant"] == v] for v in "AB"}
    assert len(set(times["A"] + times["B"])) == 20  # they did differ, by noise
    assert sum(times["A"]) != sum(times["B"])

    comparison = compare(noisy_service.store, experiment_id, "A")
    time_contrast = comparison.contrasts["B"]["latency_s"]
    assert time_contrast["verdict"] == "unclear"
    assert time_contrast["runs"] == [10, 10]
    assert time_contrast["low"] < 0 < time_contrast["high"]
    assert comparison.differences["B"]["latency_s"] == "unclear"
    assert comparison.differences["B"]["steps"] == "unclear"  # the same steps each run
    assert comparison.level == 0.95
    summary = comparison.summary["A"]["latency_s"]
    assert summary["low"] <= summary["mean"] <= summary["high"] and summary["runs"] == 10


def test_a_variant_that_always_fails_a_check_is_clearly_worse_on_pass_rate(service):
    eval_set = one_question(CHART, Check(kind="uses_agents", value=["data_researcher"]))
    variants = [
        Variant(name="shipped"),
        Variant(name="no data", prompts={PLANNER: NO_DATA_PLANNER}),
    ]
    experiment_id = run(service, eval_set, variants, repeats=3)

    comparison = compare(service.store, experiment_id, "shipped")
    rate = comparison.contrasts["no data"]["pass_rate"]
    assert rate["verdict"] == "worse" and rate["estimate"] == -1.0
    assert rate["high"] < 0 and rate["runs"] == [3, 3]
    assert comparison.summary["no data"]["passed"] == 0
    low, high = comparison.summary["shipped"]["pass_interval"]
    assert (round(low, 4), high) == (0.4385, 1.0)  # Wilson, 3 of 3
    assert compare(service.store, experiment_id, "no data").differences["shipped"]["pass_rate"] == (
        "better"
    )


def test_a_variant_whose_runs_fail_is_never_better_on_steps(service):
    variants = [Variant(name="shipped"), Variant(name="nobody", prompts={PLANNER: NOBODY_PLANNER})]
    experiment_id = run(service, one_question(IBM), variants, repeats=2)
    statuses = {r["variant"]: r["status"] for r in run_records(service.store, experiment_id)}
    assert statuses == {"shipped": "done", "nobody": "failed"}  # failed at once, 0 steps

    comparison = compare(service.store, experiment_id, "shipped")
    for metric in ("steps", "llm_calls", "tokens", "latency_s", "cost"):
        assert comparison.differences["nobody"][metric] == "unknown", metric
        assert comparison.contrasts["nobody"][metric]["runs"] == [2, 0]
    assert comparison.summary["nobody"]["completed"] == 0
    assert comparison.summary["nobody"]["steps"]["mean"] is None
    assert comparison.differences["nobody"]["pass_rate"] == "worse"
    assert comparison.rows[0]["differences"]["nobody"]["steps"] == "unknown"


# ------------------------------------------------------------------ the methods


def test_failed_runs_are_left_out_of_run_figures_and_counted_separately():
    # base: 4 steps twice; other: two completed runs of 4 steps (its failed runs, which
    # took 1 step, are not in the groups the comparison is given)
    found = stats.figure_contrast([[4.0, 4.0]], [[4.0, 4.0]])
    assert found["verdict"] == "unclear" and found["runs"] == [2, 2]
    assert stats.figure_contrast([[4.0, 4.0]], [[]])["verdict"] == "unknown"
    # one completed run a side tells no spread: never a verdict
    assert stats.figure_contrast([[4.0]], [[1.0]])["verdict"] == "unclear"


def test_wilson_and_newcombe_intervals_match_published_values():
    low, high = stats.wilson(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    # Newcombe (1998), method 10: 56/70 against 48/80 -> 0.2000 (0.0524, 0.3339)
    estimate, low, high = stats.rate_difference((48, 80), (56, 70))
    assert (round(estimate, 4), round(low, 4), round(high, 4)) == (0.2, 0.0524, 0.3339)
    assert stats.wilson(0, 0) is None and stats.rate_difference((0, 0), (1, 1)) is None


def test_a_bootstrap_interval_is_the_same_on_the_same_runs_and_holds_the_mean():
    groups = [[1.0, 2.0, 3.0, 4.0], [10.0, 12.0]]
    first = stats.mean_interval(groups)
    assert first == stats.mean_interval(groups)
    mean, low, high = first
    assert mean == (2.5 + 11.0) / 2 and low < mean < high
    assert 1.5 <= low and high <= 12.0  # within the extremes of the groups' resampled means


def test_a_clear_difference_in_steps_and_the_repeats_needed_worked_out_by_hand():
    clear = stats.figure_contrast([[3.0, 3.0, 3.0]], [[4.0, 4.0, 4.0]])
    assert clear["verdict"] == "worse" and clear["estimate"] == 1.0  # more steps is worse
    # variances 2 and 2, difference 2: (1.95996 + 0.84162)^2 * 4 / 4 = 7.85 -> 8 runs
    found = stats.figure_contrast([[1.0, 3.0]], [[3.0, 5.0]])
    assert found["verdict"] == "unclear" and found["repeats_needed"] == 8
    assert stats.rate_contrast([True] * 4, [True] * 4)["repeats_needed"] is None
    # 50% against 80%: 7.85 * (0.25 + 0.16) / 0.09 = 35.8 -> 36 runs, 12 repeats of 3 questions
    rate = stats.rate_contrast([True] * 5 + [False] * 5, [True] * 8 + [False] * 2)
    assert rate["repeats_needed"] == 36 and stats.repeats_for_rate(36, 3) == 12
