"""What the Evals page's Results tab shows, computed without Streamlit: an experiment's
comparison (``Comparison.as_dict()``) as table rows with figures in words ("unknown"
cost, "✓ passed", "better"), the records its charts draw, and its runs as rows.

Kept apart from the page so the rules (what a cell says, which figure goes where) are
testable, and the page stays a layout of widgets.
"""

from __future__ import annotations

from graph.kernel.accounting import format_cost

NONE = "—"
# The figures of a run, in the order the tables show them, with their column titles.
FIGURES = {
    "steps": "steps",
    "replans": "replans",
    "llm_calls": "LLM calls",
    "tokens": "tokens",
    "cost": "cost",
    "latency_s": "latency",
}
RESULT_COLOURS = {"pass": "#d4f4dd", "fail": "#fbd5d5", "mixed": "#fff3b0"}


def number(value: float | None, decimals: int = 2) -> str:
    """A mean as a person reads it: 3, 2.5, 2.33; "—" when there is none."""
    if value is None:
        return NONE
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def figure(metric: str, value: float | None) -> str:
    """One figure in words: tokens whole, cost in dollars or "unknown", latency in s."""
    if metric == "cost":
        return format_cost(value)
    if value is None:
        return NONE
    if metric == "tokens":
        return f"{value:,.0f}"
    if metric == "latency_s":
        return f"{value:.1f} s"
    if metric == "pass_rate":
        return f"{value:.0%}"
    return number(value)


def result_cell(cell: dict) -> str:
    """Whether a question passed with a variant: ✓/✗ for one run, "1 of 2" for repeats,
    and the run's status when it did not end done (waiting for a human, failed)."""
    runs, rate = cell["runs"], cell["pass_rate"]
    if not runs:
        return "not counted" + (f" ({', '.join(cell['statuses'])})" if cell["statuses"] else "")
    passed = round(rate * runs)
    if runs == 1:
        text = "✓ passed" if passed else "✗ failed"
    else:
        mark = "✓ " if passed == runs else "✗ " if not passed else ""
        text = f"{mark}{passed} of {runs} passed"
    other = [s for s in cell["statuses"] if s != "done"]
    return text + (f" ({', '.join(other)})" if other else "")


def checks_cell(cell: dict) -> str:
    """One mark per check, in the question's order: ✓ passed (every repeat), ✗ failed
    (every repeat), ◐ passed in some repeats; "—" when no run counted."""
    rates = cell["checks"]
    if not rates:
        return "no checks"
    if any(r is None for r in rates):
        return NONE
    return " ".join("✓" if r == 1 else "✗" if r == 0 else "◐" for r in rates)


def clip(text: str, limit: int = 48) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_colour(text: str) -> str:
    """Green for ✓, red for ✗, yellow for a share of repeats."""
    if text == "✓":
        return RESULT_COLOURS["pass"]
    if text == "✗":
        return RESULT_COLOURS["fail"]
    return RESULT_COLOURS["mixed"] if text.endswith("%") else ""


def check_mark(rate: float | None) -> str:
    if rate is None:
        return NONE
    if rate == 1:
        return "✓"
    if rate == 0:
        return "✗"
    return f"{rate:.0%}"


# Markdown colours of a figure that moved against the baseline (st.table renders them).
VERDICT_STYLE = {"better": ":green[**{}**]", "worse": ":red[**{}**]"}
VERDICT_ARROW = {"better": " ▲", "worse": " ▼"}


def _styled_figure(text: str, verdict: str | None) -> str:
    """``text`` coloured and marked (▲ better, ▼ worse: not colour alone) when it moved
    against the baseline; as it is when the same, unknown or the baseline itself."""
    style = VERDICT_STYLE.get(verdict or "")
    return style.format(text + VERDICT_ARROW[verdict or ""]) if style else text


def variant_cell(cell: dict, verdicts: dict[str, str] | None) -> str:
    """One variant's result for one question in one cell: pass/fail, its checks and its
    figures, each coloured against the baseline's (``verdicts``; None: the baseline)."""
    verdicts = verdicts or {}
    parts = [_styled_figure(result_cell(cell), verdicts.get("pass_rate"))]
    if cell["runs"]:
        parts.append(f"checks {checks_cell(cell)}")
        for metric, title in FIGURES.items():
            text = figure(metric, cell[metric])
            if metric not in ("cost", "latency_s"):
                text = f"{text} {title}"
            parts.append(_styled_figure(text, verdicts.get(metric)))
    return " · ".join(parts)


def question_rows_readable(comparison: dict) -> list[dict]:
    """The per-question comparison that fits a wide screen without sideways scrolling:
    the whole question once, then one column per variant (the baseline first) holding
    its result, checks and figures, coloured and marked against the baseline."""
    baseline = comparison["baseline"]
    order = [baseline] + [v for v in comparison["variants"] if v != baseline]
    rows = []
    for row in comparison["rows"]:
        out = {"No.": row["question_index"] + 1, "Question": row["question"]}  # "#": Markdown
        for variant in order:
            title = f"{variant} (baseline)" if variant == baseline else variant
            out[title] = variant_cell(
                row["variants"][variant], (row.get("differences") or {}).get(variant)
            )
        rows.append(out)
    return rows


def check_rows(comparison: dict) -> list[dict]:
    """Pass/fail per check: one row per question and check, one column per variant
    (✓, ✗, or the share of repeats that passed it). The question is written once, on
    its first check's row."""
    rows = []
    for row in comparison["rows"]:
        for i, label in enumerate(row["checks"]):
            out = {
                "No.": f"{row['question_index'] + 1}.{i + 1}",
                "Question": row["question"] if i == 0 else "",
                "Check": label,
            }
            for variant in comparison["variants"]:
                out[variant] = check_mark(row["variants"][variant]["checks"][i])
            rows.append(out)
    return rows


def vs_column(variant: str, baseline: str) -> str:
    return f"{variant} vs {baseline}"


def summary_sentence(comparison: dict) -> str:
    """The pass rates in one line, baseline first."""
    summary, baseline = comparison["summary"], comparison["baseline"]
    order = [baseline] + [v for v in comparison["variants"] if v != baseline]
    parts = [
        f"**{v}** {figure('pass_rate', summary[v]['pass_rate'])} "
        f"({summary[v]['passed']} of {summary[v]['runs']})"
        if summary[v]["runs"]
        else f"**{v}** no finished runs"
        for v in order
    ]
    return "Runs passed: " + " · ".join(parts)


METRIC_LABELS = {
    "steps": "steps",
    "replans": "replans",
    "llm_calls": "LLM calls",
    "tokens": "tokens",
    "cost": "cost ($)",
    "latency_s": "latency (s)",
}


def chart_records(records: list[dict]) -> list[dict]:
    """distribution_records with readable metric names and question numbers."""
    return [
        {
            **r,
            "metric": METRIC_LABELS.get(r["metric"], r["metric"]),
            "question": f"{r['question_index'] + 1}. {r['question']}",
        }
        for r in records
    ]


# --------------------------------------------------------------------------- runs


def run_rows(records: list[dict]) -> list[dict]:
    """The experiment's runs (run_records), each with a link to it on the Run page."""
    return [
        {
            "Question": r["question_index"] + 1,
            "Variant": r["variant"],
            "Repeat": r["repeat"] + 1,
            "Status": r["status"],
            "Passed": NONE if r["passed"] is None else ("✓" if r["passed"] else "✗"),
            "Steps": r["steps"],
            "Open": f"run?run={r['run_id']}",
        }
        for r in records
    ]


def run_choice_label(record: dict) -> str:
    return f"{record['variant']} · repeat {record['repeat'] + 1} · run {record['run_id'][:8]}"
