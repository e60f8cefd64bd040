"""How sure a comparison of two variants is: intervals from the repeats, and a difference
called only when its interval leaves out zero.

Why: one mean against another called noise a win (0.3 s against 0.2 s was "better"),
and a variant whose runs failed early was "better" on steps. So every figure comes with
an interval at ``LEVEL``, a difference is "better" or "worse" only when the interval of
the difference excludes zero, and run figures (time, steps, tokens, cost…) are compared
on completed runs only.

The methods, chosen to need nothing past the standard library and to give the same
answer on the same runs:
- pass rates: the Wilson score interval per variant, and Newcombe's hybrid score
  interval for the difference of two rates (exact enough at 10 runs, never outside 0-1);
- run figures: a percentile bootstrap of the mean (``RESAMPLES`` resamples, NumPy's
  generator seeded with ``SEED``), resampling each question's runs within that question, so a resample keeps
  the eval set's mix of questions; a difference is the mean over the questions both
  variants completed at least ``MIN_RUNS`` times of the difference of their means;
- repeats needed: the normal approximation for a two-sided test at ``LEVEL`` with
  ``POWER``, using the spread seen, for a difference of the size seen.

Pure functions over plain values (NumPy only to resample at once); the words are the
page's.
"""

from __future__ import annotations

import math
import statistics
from statistics import NormalDist
from typing import cast

import numpy as np

LEVEL = 0.95
POWER = 0.8
RESAMPLES = 2000
SEED = 27  # fixed: the same runs always give the same interval
MIN_RUNS = 2  # completed runs of a question per variant before its spread means anything
MAX_REPEATS = 10_000  # past this "repeats needed" says only that it is more


def _z(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson(successes: int, runs: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of a rate; None without runs."""
    if runs <= 0:
        return None
    z, p = _z(level), successes / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_difference(
    base: tuple[int, int], other: tuple[int, int], level: float = LEVEL
) -> tuple[float, float, float] | None:
    """(other's rate - base's, low, high): Newcombe's hybrid score interval from two
    (successes, runs) pairs; None when either has no runs."""
    (k1, n1), (k2, n2) = base, other
    first, second = wilson(k1, n1, level), wilson(k2, n2, level)
    if first is None or second is None:
        return None
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = first, second
    d = p2 - p1
    return d, d - math.hypot(p2 - l2, u1 - p1), d + math.hypot(u2 - p2, p1 - l1)


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    values = np.sort(draws)
    tail = (1 - level) / 2
    last = len(values) - 1
    return float(values[round(tail * last)]), float(values[round((1 - tail) * last)])


def _resampled(group: list[float], rng: np.random.Generator) -> np.ndarray:
    """``RESAMPLES`` means of resamples of ``group``, at once (a page redraws often)."""
    values = np.asarray(group, dtype=float)
    picks = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
    return values[picks].mean(axis=1)


def mean_interval(
    groups: list[list[float]], level: float = LEVEL, seed: int = SEED
) -> tuple[float, float, float] | None:
    """(mean, low, high) of the mean over groups (one per question) of each group's mean,
    bootstrapped within the groups; None without values."""
    groups = [g for g in groups if g]
    if not groups:
        return None
    estimate = statistics.fmean(statistics.fmean(g) for g in groups)
    rng = np.random.default_rng(seed)
    draws = np.mean([_resampled(g, rng) for g in groups], axis=0)
    low, high = _percentiles(draws, level)
    return estimate, low, high


def mean_difference(
    base: list[list[float]], other: list[list[float]], level: float = LEVEL, seed: int = SEED
) -> tuple[float, float, float] | None:
    """(other - base, low, high) over paired groups (the same question at one index),
    each side resampled within its group; None without a pair."""
    pairs = [(b, o) for b, o in zip(base, other) if b and o]
    if not pairs:
        return None
    estimate = statistics.fmean(statistics.fmean(o) - statistics.fmean(b) for b, o in pairs)
    rng = np.random.default_rng(seed)
    draws = sum(_resampled(o, rng) - _resampled(b, rng) for b, o in pairs) / len(pairs)
    low, high = _percentiles(draws, level)
    return estimate, low, high


def _needed(difference: float, variance: float, level: float, power: float) -> int | None:
    """Runs per variant a two-sided test needs to tell ``difference`` apart, given the
    variance of one run's difference; None when there is no difference to tell."""
    if not difference:
        return None
    z = _z(level) + NormalDist().inv_cdf(power)
    return min(MAX_REPEATS, max(MIN_RUNS, math.ceil(z * z * variance / difference**2)))


def verdict(low: float, high: float, higher_is_better: bool) -> str:
    """ "better" or "worse" when the interval of the difference excludes zero, else
    "unclear"."""
    if low > 0:
        return "better" if higher_is_better else "worse"
    if high < 0:
        return "worse" if higher_is_better else "better"
    return "unclear"


def rate_contrast(base: list[bool], other: list[bool], level: float = LEVEL) -> dict:
    """Two variants' pass rates compared: ``{verdict, estimate, low, high, runs: [base,
    other], repeats_needed}``; ``repeats_needed`` is in runs per variant."""
    runs = [len(base), len(other)]
    found = rate_difference((sum(base), len(base)), (sum(other), len(other)), level)
    if found is None:
        return {"verdict": "unknown", "runs": runs, "repeats_needed": None}
    estimate, low, high = found
    p1, p2 = sum(base) / len(base), sum(other) / len(other)
    needed = _needed(estimate, p1 * (1 - p1) + p2 * (1 - p2), level, POWER)
    return {
        "verdict": verdict(low, high, higher_is_better=True),
        "estimate": estimate,
        "low": low,
        "high": high,
        "runs": runs,
        "repeats_needed": needed,
    }


def figure_contrast(
    base: list[list[float | None]],
    other: list[list[float | None]],
    higher_is_better: bool = False,
    level: float = LEVEL,
) -> dict:
    """Two variants' run figure compared over questions (``base[i]`` and ``other[i]``:
    the values of question i's completed runs). Only questions both completed at least
    ``MIN_RUNS`` times count. ``{verdict, estimate, low, high, runs: [base, other],
    questions, repeats_needed}``: verdict "unknown" when a value is unknown (an unpriced
    cost) or a side completed no run, "unclear" also when no question has enough runs;
    ``repeats_needed``: completed runs per question and variant that would tell a
    difference of the size seen."""
    runs = [sum(len(g) for g in base), sum(len(g) for g in other)]
    unknown = {"verdict": "unknown", "runs": runs, "questions": 0, "repeats_needed": None}
    if any(v is None for g in (*base, *other) for v in g) or not all(runs):
        return unknown
    known = cast(list[list[float]], base), cast(list[list[float]], other)  # None ruled out
    pairs = [(b, o) for b, o in zip(*known) if len(b) >= MIN_RUNS and len(o) >= MIN_RUNS]
    counted = [sum(len(b) for b, _ in pairs), sum(len(o) for _, o in pairs)]
    if not pairs:
        return {**unknown, "verdict": "unclear", "runs": counted}
    found = mean_difference([b for b, _ in pairs], [o for _, o in pairs], level)
    assert found is not None  # every pair has runs on both sides
    estimate, low, high = found
    variance = statistics.fmean(statistics.variance(b) + statistics.variance(o) for b, o in pairs)
    needed = _needed(estimate, variance / len(pairs), level, POWER)
    return {
        "verdict": verdict(low, high, higher_is_better),
        "estimate": estimate,
        "low": low,
        "high": high,
        "runs": counted,
        "questions": len(pairs),
        "repeats_needed": needed,
    }


def repeats_for_rate(needed_runs: int | None, questions: int) -> int | None:
    """Runs per variant spread over the eval set's questions: repeats of the whole set."""
    if needed_runs is None:
        return None
    return max(MIN_RUNS, math.ceil(needed_runs / max(1, questions)))
