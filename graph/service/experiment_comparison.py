"""Comparing an experiment's variants: its runs' figures and check results
(``run_records``), and each variant against a baseline per question and overall
(``compare``), with the intervals and verdicts of ``eval_statistics``.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from graph.service import eval_statistics as stats
from graph.service.eval_sets import EvalSet
from graph.service.evals import RunResult, evaluate, run_passed
from graph.service.experiments import refresh_status
from graph.service.store import Store

# Runs that count in a comparison: they ended. Waiting for a person, cancelled (a
# stopped experiment), interrupted, still going, or deleted from History do not count.
COUNTED_STATUSES = ("done", "failed")
METRICS = ("pass_rate", "steps", "replans", "llm_calls", "tokens", "cost", "latency_s")
RUN_METRICS = METRICS[1:]
HIGHER_IS_BETTER = frozenset({"pass_rate"})


def _mean(values: list) -> float | None:
    """Mean of known values; None when there are none or any is unknown (a cost)."""
    if not values or any(v is None for v in values):
        return None
    return statistics.fmean(values)


def _median(values: list) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return float(statistics.median(values))


def run_records(
    store: Store, experiment_id: str, prices: dict[str, tuple[float, float]] | None = None
) -> list[dict]:
    """One record per run of the experiment, with its figures and check results: the
    rows behind the comparison and the distribution charts."""
    record = store.experiment(experiment_id)
    if record is None:
        raise KeyError(f"No experiment {experiment_id!r}.")
    eval_set = EvalSet.model_validate(record.eval_set)
    records = []
    for row in store.experiment_runs(experiment_id):
        question = eval_set.questions[row["question_index"]]
        base = {
            "run_id": row["run_id"],
            "variant": row["variant"],
            "question_index": row["question_index"],
            "question": question.question,
            "repeat": row["repeat"],
            "status": row["status"] or "deleted",
        }
        if row["status"] is None:
            records.append(
                {
                    **base,
                    "counted": False,
                    "passed": None,
                    "checks": [],
                    **{m: None for m in RUN_METRICS},
                }
            )
            continue
        result = RunResult.from_store(store, row["run_id"], prices)
        checks = evaluate(question, result)
        records.append(
            {
                **base,
                "counted": result.status in COUNTED_STATUSES,
                "passed": run_passed(result, checks),
                "checks": [c.as_dict() for c in checks],
                "steps": result.steps,
                "replans": result.replans,
                "llm_calls": result.llm_calls,
                "input_tokens": result.input_tokens,
                "output_tokens": result.output_tokens,
                "tokens": result.tokens,
                "cost": result.cost,
                "unpriced": result.unpriced,
                "latency_s": result.duration_s,
                "final_answer": result.final_answer,
            }
        )
    return records


def distribution_records(
    store: Store, experiment_id: str, prices: dict[str, tuple[float, float]] | None = None
) -> list[dict]:
    """Long-form records for distribution charts (Altair box plots, strip plots): one
    per counted run and metric, ``{variant, question_index, question, repeat, run_id,
    metric, value}``; unknown values (an unpriced cost) are left out."""
    out = []
    for r in run_records(store, experiment_id, prices):
        if not r["counted"]:
            continue
        for metric in RUN_METRICS:
            if r[metric] is not None:
                out.append(
                    {k: r[k] for k in ("variant", "question_index", "question", "repeat", "run_id")}
                    | {"metric": metric, "value": float(r[metric])}
                )
    return out


def _aggregate(runs: list[dict], checks: int) -> dict:
    """Mean figures of one question's runs of one variant: the pass rate over the runs
    that ended, the run figures over the completed ones (ended done)."""
    counted = [r for r in runs if r["counted"]]
    completed = [r for r in counted if r["status"] == "done"]
    cell = {
        "runs": len(counted),
        "completed": len(completed),
        "not_counted": len(runs) - len(counted),
        "pass_rate": _mean([1.0 if r["passed"] else 0.0 for r in counted]),
        "checks": [
            _mean([1.0 if r["checks"][i]["passed"] else 0.0 for r in counted])
            for i in range(checks)
        ],
        "statuses": sorted({r["status"] for r in runs}),
    }
    for metric in RUN_METRICS:
        cell[metric] = _mean([r[metric] for r in completed])
    return cell


def _groups(records: list[dict], variant: str, metric: str, questions: int) -> list[list]:
    """A variant's values of a run figure, per question, from its completed runs."""
    groups: list[list] = [[] for _ in range(questions)]
    for r in records:
        if r["variant"] == variant and r["counted"] and r["status"] == "done":
            groups[r["question_index"]].append(r[metric])
    return groups


def _outcomes(records: list[dict], variant: str, question: int | None = None) -> list[bool]:
    return [
        bool(r["passed"])
        for r in records
        if r["variant"] == variant
        and r["counted"]
        and (question is None or r["question_index"] == question)
    ]


def _contrasts(records: list[dict], baseline: str, variant: str, questions: list[int]) -> dict:
    """Each metric of ``variant`` against ``baseline`` on these questions, with its
    interval and verdict (eval_statistics)."""
    count = max(questions, default=-1) + 1
    found = {
        "pass_rate": stats.rate_contrast(
            [o for q in questions for o in _outcomes(records, baseline, q)],
            [o for q in questions for o in _outcomes(records, variant, q)],
        )
    }
    for metric in RUN_METRICS:
        base = _groups(records, baseline, metric, count)
        mine = _groups(records, variant, metric, count)
        found[metric] = stats.figure_contrast(
            [base[q] for q in questions],
            [mine[q] for q in questions],
            higher_is_better=metric in HIGHER_IS_BETTER,
        )
    return found


@dataclass
class Comparison:
    """Plain lists and dicts, ready for tables and charts (no DataFrames here).

    ``rows``: one per question: ``{question_index, question, checks: [labels],
    variants: {name: {runs, completed, not_counted, pass_rate, checks: [pass rate per
    check], steps, replans, llm_calls, tokens, cost, latency_s, statuses}}, differences:
    {name: {metric: verdict}}, contrasts: {name: {metric: contrast}}}``: the pass rate
    over the runs that ended, run figures the mean over the completed runs (None when
    unknown). ``summary``: per variant ``{runs, completed, passed, pass_rate,
    pass_interval: [low, high], unpriced, <metric>: {mean, median, low, high, runs}}``.
    ``differences``: per non-baseline variant, each metric "better", "worse", "unclear"
    (the interval of the difference holds zero) or "unknown"; ``contrasts`` the same
    with the difference, its interval, the runs counted on each side and the repeats
    that would tell a difference of that size (``eval_statistics``). ``level``: the
    intervals' confidence level.
    """

    experiment_id: str
    name: str
    status: str
    baseline: str
    variants: list[str]
    progress: tuple[int, int]
    waiting: int = 0  # runs waiting for a person: not counted until decided
    rows: list[dict] = field(default_factory=list)
    summary: dict[str, dict] = field(default_factory=dict)
    differences: dict[str, dict[str, str]] = field(default_factory=dict)
    contrasts: dict[str, dict[str, dict]] = field(default_factory=dict)
    level: float = stats.LEVEL
    questions: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _summary(records: list[dict], variant: str, questions: int) -> dict:
    counted = [r for r in records if r["variant"] == variant and r["counted"]]
    completed = [r for r in counted if r["status"] == "done"]
    passed = sum(1 for r in counted if r["passed"])
    interval = stats.wilson(passed, len(counted))
    summary: dict[str, Any] = {
        "runs": len(counted),
        "completed": len(completed),
        "passed": passed,
        "pass_rate": _mean([1.0 if r["passed"] else 0.0 for r in counted]),
        "pass_interval": list(interval) if interval else None,
        "unpriced": sorted({m for r in counted for m in r.get("unpriced") or []}),
    }
    for metric in RUN_METRICS:
        values = [r[metric] for r in completed]
        groups = _groups(records, variant, metric, questions)
        found = None if any(v is None for v in values) else stats.mean_interval(groups)
        summary[metric] = {
            "mean": _mean(values),
            "median": _median(values),
            "low": found[1] if found else None,
            "high": found[2] if found else None,
            "runs": len(values),
        }
    return summary


def compare(
    store: Store,
    experiment_id: str,
    baseline: str,
    prices: dict[str, tuple[float, float]] | None = None,
) -> Comparison:
    """The experiment's figures per question and variant, a summary per variant, and
    each variant against ``baseline`` with intervals, from the runs as they are now. The
    pass rate counts the runs that ended (done, failed; a run passes when it ended done
    with every check passed); run figures count the completed runs (done) only, so a
    variant whose runs fail early is never better on steps or time."""
    finished, total, waiting = refresh_status(store, experiment_id)
    record = store.experiment(experiment_id)
    if record is None:
        raise KeyError(f"No experiment {experiment_id!r}.")
    variants = [v["name"] for v in record.variants]
    if baseline not in variants:
        raise ValueError(
            f"No variant {baseline!r} in this experiment; its variants: {', '.join(variants)}."
        )
    eval_set = EvalSet.model_validate(record.eval_set)
    records = run_records(store, experiment_id, prices)
    count = len(eval_set.questions)
    comparison = Comparison(
        experiment_id,
        record.name,
        record.status,
        baseline,
        variants,
        (finished, total),
        waiting,
        questions=count,
    )
    others = [v for v in variants if v != baseline]
    for index, question in enumerate(eval_set.questions):
        mine = [r for r in records if r["question_index"] == index]
        contrasts = {v: _contrasts(mine, baseline, v, [index]) for v in others}
        comparison.rows.append(
            {
                "question_index": index,
                "question": question.question,
                "checks": [c.label for c in question.checks],
                "variants": {
                    v: _aggregate([r for r in mine if r["variant"] == v], len(question.checks))
                    for v in variants
                },
                "contrasts": contrasts,
                "differences": {
                    v: {m: c["verdict"] for m, c in found.items()} for v, found in contrasts.items()
                },
            }
        )
    comparison.summary = {v: _summary(records, v, count) for v in variants}
    for v in others:
        found = _contrasts(records, baseline, v, list(range(count)))
        comparison.contrasts[v] = found
        comparison.differences[v] = {m: c["verdict"] for m, c in found.items()}
    return comparison
