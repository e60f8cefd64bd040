"""An experiment's summary in words with its uncertainty (issue #27): each figure with its
interval, each difference called only when its interval leaves out zero, and how many
repeats would tell a difference of the size seen. Pure functions on
``Comparison.as_dict()``; the statistics are ``graph.service.eval_statistics``'s."""

from __future__ import annotations

from graph.service.eval_statistics import MAX_REPEATS, MIN_RUNS, RESAMPLES, repeats_for_rate
from ui.evals.results_view import FIGURES, NONE, figure, vs_column

MARKS = {"better": "▲ better", "worse": "▼ worse", "unknown": "? unknown"}
UNCLEAR = "no clear difference"
COLOURS = {"▲": "#d4f4dd", "▼": "#fbd5d5"}


def level_words(level: float) -> str:
    return f"{level:.0%}"


def method_caption(level: float) -> str:
    """How the intervals are made and when a difference is called, as the page says it."""
    shown = level_words(level)
    return (
        f"Intervals are {shown} intervals from the runs: for a pass rate the Wilson score "
        f"interval (for the difference of two, Newcombe's), for the other figures a "
        f"bootstrap of the runs ({RESAMPLES:,} resamples of each question's runs, fixed "
        f"seed, so the same runs always give the same interval). A variant is called "
        f"▲ better or ▼ worse than the baseline only when the {shown} interval of the "
        f"difference leaves out zero; otherwise “{UNCLEAR}”. Steps, replans, LLM calls, "
        "tokens, cost and time count completed runs only (ended done), so a variant whose "
        "runs fail is never better on them; a difference needs 2 completed runs of each "
        "variant on a question. Fewer is better for all but the pass rate."
    )


def _span(metric: str, low: float | None, high: float | None) -> str:
    """ " [low – high]"; nothing when there is no interval or it is one value as shown
    (every run the same)."""
    if low is None or high is None or figure(metric, low) == figure(metric, high):
        return ""
    return f" [{figure(metric, low)} – {figure(metric, high)}]"


def _signed(metric: str, value: float) -> str:
    """A difference with its sign: pass rates in percentage points, times to 0.01 s."""
    if metric == "pass_rate":
        text = f"{abs(value) * 100:.0f} pts"
    elif metric == "latency_s":
        text = f"{abs(value):.2f} s"
    else:
        text = figure(metric, abs(value))
    if not any(c.isdigit() and c != "0" for c in text):
        return text  # rounds to nothing: no sign
    return ("+" if value > 0 else "−") + text


def variant_figure(metric: str, summary: dict) -> str:
    """A variant's figure with its interval: "80% [49% – 94%] (8 of 10 runs)" or
    "3.5 steps [3 – 4] (9 completed of 10)"."""
    if metric == "pass_rate":
        if not summary["runs"]:
            return NONE
        low, high = summary["pass_interval"] or (None, None)
        return (
            f"{figure('pass_rate', summary['pass_rate'])}{_span('pass_rate', low, high)} "
            f"({summary['passed']} of {summary['runs']} runs)"
        )
    found = summary[metric]
    if not found["runs"]:
        return f"{NONE} (no completed run)"
    return (
        f"{figure(metric, found['mean'])}{_span(metric, found['low'], found['high'])} "
        f"({found['runs']} completed of {summary['runs']})"
    )


def contrast_text(metric: str, contrast: dict) -> str:
    """A difference against the baseline in words: "▼ worse: −100% [−100% – −44%]", or
    "no clear difference (10 runs each)", saying the runs each side had."""
    runs = contrast.get("runs") or [0, 0]
    counted = "runs" if metric == "pass_rate" else "completed runs"
    each = (
        f"{runs[0]} {counted} each"
        if runs[0] == runs[1]
        else f"{runs[1]} against the baseline's {runs[0]} {counted}"
    )
    verdict = contrast["verdict"]
    if verdict == "unknown":
        if metric != "pass_rate" and 0 in runs:
            return f"? unknown (no completed run: {each})"
        return MARKS["unknown"]
    if verdict == "unclear":
        if runs == [0, 0] and metric != "pass_rate":  # no question has enough on both sides
            return f"{UNCLEAR} (needs {MIN_RUNS} completed runs of a question each)"
        return f"{UNCLEAR} ({each})"
    low, high = _signed(metric, contrast["low"]), _signed(metric, contrast["high"])
    span = "" if low == high else f" [{low} – {high}]"
    return f"{MARKS[verdict]}: {_signed(metric, contrast['estimate'])}{span} ({each})"


def summary_rows(comparison: dict) -> list[dict]:
    """One row per figure: each variant's figure with its interval, and for each variant
    but the baseline its difference in the column ``vs_column(variant, baseline)``."""
    summary, contrasts = comparison["summary"], comparison.get("contrasts") or {}
    baseline = comparison["baseline"]
    rows = []
    for metric in ("pass_rate", *FIGURES):
        out = {"Figure": "pass rate" if metric == "pass_rate" else FIGURES[metric]}
        for variant in comparison["variants"]:
            out[variant] = variant_figure(metric, summary[variant])
            if variant != baseline:
                out[vs_column(variant, baseline)] = contrast_text(
                    metric, contrasts[variant][metric]
                )
        rows.append(out)
    return rows


def mark_colour(text: str) -> str:
    return COLOURS.get(text[:1], "")


def repeats_advice(comparison: dict, repeats: int) -> list[str]:
    """For each difference not yet clear, how many repeats of the eval set would tell one
    of the size seen, in words (a normal approximation: the test at the page's level
    finding it four times in five)."""
    level = level_words(comparison.get("level", 0.95))
    questions = comparison.get("questions") or 1
    lines = []
    for variant, found in (comparison.get("contrasts") or {}).items():
        for metric, contrast in found.items():
            needed = contrast.get("repeats_needed")
            if contrast["verdict"] != "unclear" or needed is None:
                continue
            if metric == "pass_rate":
                needed = repeats_for_rate(needed, questions)
            title = "pass rate" if metric == "pass_rate" else FIGURES[metric]
            size = _signed(metric, contrast["estimate"])
            many = f"more than {MAX_REPEATS:,}" if needed >= MAX_REPEATS else f"about {needed:,}"
            lines.append(
                f"**{variant}**, {title}: a difference of {size} would take {many} repeats "
                f"of each question per variant to tell at {level}, four times in five "
                f"(this experiment ran {repeats})."
            )
    return lines
