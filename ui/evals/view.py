"""What the Evals page shows, computed without Streamlit: an eval set as editable JSON
and as a readable table, and an experiment's comparison (``Comparison.as_dict()``) as
table rows with figures in words ("unknown" cost, "✓ passed", "better").

Kept apart from the page so the rules (what a cell says, which figure goes where) are
testable, and the page stays a layout of widgets.

Over 400 lines: pure functions only, one per kind of cell or row of the Evals page;
split further they would only be harder to find.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Sequence

from graph.kernel.accounting import format_cost
from graph.kernel.system import default_system, get_system
from graph.models.choice import SCRIPTED, ModelChoice, configured_choice
from graph.service.eval_sets import (
    CHECK_KINDS,
    EVAL_SET_FORMAT,
    EVAL_SET_VERSION,
    EvalSet,
    EvalSetError,
    import_eval_set,
    known_agents,
)
from graph.service.import_checks import MAX_DEPTH
from graph.service.store import ExperimentRecord, PromptVersion
from graph.settings import Settings

NONE = "—"
SHIPPED = "shipped default"
SHIPPED_ID = 0  # the "version" a variant picks for the shipped text (stored ids start at 1)
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


# --------------------------------------------------------------------------- eval sets


def check_kinds_help() -> str:
    """What each check kind means and the value it takes, for the JSON editor."""
    agents = ", ".join(known_agents())
    lines = {
        "answer_contains": '"value": "text" — the final answer contains it (any case)',
        "answer_not_contains": '"value": "text" — the final answer does not contain it',
        "uses_agents": f'"value": ["agent", …] — each of them ran (agents: {agents})',
        "max_steps": '"value": 4 — the run took at most this many plan steps',
        "max_replans": '"value": 1 — at most this many replans in all',
        "chart_produced": "no value — the run produced a chart",
        "no_human_help": "no value — no person had to approve or decide anything",
    }
    return "\n".join(f"- `{kind}`: {lines.get(kind, '')}" for kind in CHECK_KINDS)


def eval_set_text(eval_set: EvalSet) -> str:
    """The eval set as the JSON a person edits: its body (no file header), one check a line."""

    def dumps(value) -> str:
        return json.dumps(value, ensure_ascii=False)

    questions = []
    for q in eval_set.questions:
        checks = [
            dumps({"kind": c.kind} if c.value is None else {"kind": c.kind, "value": c.value})
            for c in q.checks
        ]
        body = ",\n".join(f"        {c}" for c in checks)
        questions.append(
            f'    {{\n      "question": {dumps(q.question)},\n      "checks": ['
            + (f"\n{body}\n      " if checks else "")
            + "]\n    }"
        )
    return (
        f'{{\n  "name": {dumps(eval_set.name)},\n'
        f'  "description": {dumps(eval_set.description)},\n'
        '  "questions": [\n' + ",\n".join(questions) + "\n  ]\n}\n"
    )


def parse_eval_set_text(text: str) -> EvalSet:
    """The eval set in the editor's JSON: its body, or a whole exported file pasted in.
    EvalSetError says what is wrong, in import_eval_set's words."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvalSetError(f"Not valid JSON: {exc}.") from None
    except RecursionError:  # import_eval_set refuses what is nested past MAX_DEPTH
        raise EvalSetError(f"The text is nested deeper than {MAX_DEPTH} levels.") from None
    if isinstance(data, dict) and "format" not in data:
        data = {"format": EVAL_SET_FORMAT, "version": EVAL_SET_VERSION, "eval_set": data}
    return import_eval_set(data)


def eval_set_facts(eval_set: EvalSet) -> str:
    checks = sum(len(q.checks) for q in eval_set.questions)
    return f"{len(eval_set.questions)} question(s), {checks} check(s)"


# --------------------------------------------------------------------------- variants


# Pickers keep their choice by its label (Streamlit sends the label back), so a label
# never holds what can change while the page is open: a status, "active".


def version_label(version: PromptVersion | None) -> str:
    """A version as a variant's picker shows it; None is the shipped default."""
    if version is None:
        return SHIPPED
    saved = datetime.fromtimestamp(version.created_at).strftime("%Y-%m-%d %H:%M")
    return f"{version.label} · saved {saved}"


def active_caption(active: dict[str, PromptVersion | None]) -> str:
    """What runs now (role -> its active version, None for the shipped text)."""
    parts = [
        f"{role} “{v.label}”" if v else f"{role} shipped default" for role, v in active.items()
    ]
    return "Active now, as the Run page runs them: " + ", ".join(parts) + "."


def default_variant_name(index: int) -> str:
    """A, B, C… for the variants a person has not named."""
    return chr(ord("A") + index) if index < 26 else f"V{index + 1}"


def experiment_name(eval_set_name: str, variant_names: list[str]) -> str:
    return f"{eval_set_name}: {' vs '.join(variant_names)}"


def model_options(
    settings: Settings,
    learnt: list[tuple[str, str]],
    profiles: Sequence[ModelChoice] = (),
) -> dict[str, ModelChoice | None]:
    """What a variant's model picker offers, label -> choice: the model in use (None: the
    active model profile), the offline scripted model, the other stored profiles, and
    each server and model a connection test or a run has learnt about (the Model page's
    list)."""
    options: dict[str, ModelChoice | None] = {f"the model in use ({settings.model_label})": None}
    in_use = configured_choice(settings)
    for profile in profiles:
        if profile.settings(settings).model_label != settings.model_label:
            options.setdefault(f"profile “{profile.profile}” ({profile.label})", profile)
    for choice in (ModelChoice(), *(ModelChoice(endpoint=s, model=m) for s, m in learnt)):
        if choice != in_use:
            options.setdefault(choice.label, choice)
    return options


def model_caption() -> str:
    """Where the picker's models come from, and how to add one."""
    return (
        "Each variant runs on a model: the one in use (the active profile), the offline "
        "scripted model, another model profile, or a server the Model page has tested. "
        "A profile's key goes to its own server only; the environment's key only to the "
        "server the environment names."
    )


def approvals_sentence(approvals: str, total: int) -> str:
    """What happens to the runs that ask for approval, said next to the run count."""
    if approvals == "auto":
        return (
            f"Approvals are decided automatically: none of the {total} runs waits for a "
            "person (read-only steps approved, side-effecting steps not performed)."
        )
    if approvals == "human":
        return (
            "A run that asks for approval waits on the Approvals page until someone "
            "decides; the experiment is done when all its runs are."
        )
    return (
        "Approvals follow the saved design: its agents' policies, its timeout and its "
        "default when nobody decides in time."
    )


def experiment_label(record: ExperimentRecord) -> str:
    started = datetime.fromtimestamp(record.created_at).strftime("%Y-%m-%d %H:%M:%S")
    return f"{record.name} · started {started}"


def _in_use(record: ExperimentRecord) -> str:
    """The model the settings named when the experiment started."""
    recorded = record.settings
    if recorded.get("resolved_provider") == "scripted":
        return SCRIPTED
    server = recorded.get("openai_base_url") or "api.openai.com"
    return f"{recorded.get('planner_model')} @ {server}"


def variant_rows(record: ExperimentRecord, labels: dict[int, str]) -> list[dict]:
    """What each variant of a recorded experiment ran: its versions of the prompts its
    system tunes (``labels``: stored version id -> label; a version deleted since shows
    its id) and its model (the settings in use when it names none)."""
    tuned = get_system(record.design.get("system") or default_system()).prompts.tuned
    rows = []
    for variant in record.variants:
        versions = variant.get("versions") or {}
        row = {"Variant": variant["name"]}
        for title, prompt in tuned.items():
            version_id = versions.get(prompt)
            row[title.capitalize()] = (
                SHIPPED if version_id is None else labels.get(version_id, f"version {version_id}")
            )
        row["Model"] = model_label(record, variant)
        rows.append(row)
    return rows


def model_label(record: ExperimentRecord, variant: dict) -> str:
    """The model a recorded variant ran on (the settings in use when it names none)."""
    model = variant.get("model")
    return ModelChoice.model_validate(model).label if model else _in_use(record)


# --------------------------------------------------------------------------- figures


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


def decision_rows(decisions: list[dict]) -> list[dict]:
    """A router node's decisions: the fields of each when it was JSON, else its words."""
    rows = []
    for d in decisions:
        row = {"At step": d.get("step")}
        if d.get("parsed"):
            row.update(
                {
                    k.replace("_", " ").capitalize(): NONE
                    if v in (None, "")
                    else clip(v if isinstance(v, str) else json.dumps(v), 300)
                    for k, v in d["parsed"].items()
                }
            )
        else:
            row["Reply"] = clip(" ".join(str(d.get("content") or "").split()), 300)
        rows.append(row)
    return rows


def judgement_rows(judgement: dict | None) -> list[dict]:
    if not judgement:
        return []
    return [
        {
            "Score": metric.replace("_", " "),
            "1-5": value.get("score"),
            "Why": value.get("reason") or "",
        }
        for metric, value in (judgement.get("scores") or {}).items()
    ]


def judged_means(judgements: dict[str, list[dict]]) -> list[dict]:
    """Mean judge score per variant and GPA metric (``judgements``: variant -> the stored
    judgements of its runs)."""
    rows = []
    for variant, found in judgements.items():
        if not found:
            continue
        row = {"Variant": variant, "Runs judged": len(found)}
        metrics = dict.fromkeys(m for j in found for m in j["scores"])
        for metric in metrics:
            scores = [j["scores"][metric]["score"] for j in found if metric in j["scores"]]
            row[metric.replace("_", " ")] = number(sum(scores) / len(scores))
        rows.append(row)
    return rows


def json_file(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


def file_stem(name: str) -> str:
    """A name made safe for a download's file name."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "eval-set"


def differing_lines(text: str, other: str) -> list[tuple[str, bool]]:
    """``text`` line by line, each with whether the other run's text lacks it (compared
    without surrounding spaces; blank lines never differ)."""
    theirs = {line.strip() for line in (other or "").splitlines()}
    return [(line, bool(line.strip()) and line.strip() not in theirs) for line in text.splitlines()]


_LEAD = re.compile(r"^(\s*(?:[-*+]|\d+[.)]|#{1,6})\s+)(.*)$")


def highlighted_markdown(text: str, other: str) -> str:
    """``text`` as Markdown with the lines the other run's text lacks highlighted (list
    markers and heading marks kept outside the highlight, so the Markdown still reads)."""
    out = []
    for line, differs in differing_lines(text, other):
        if not differs:
            out.append(line)
            continue
        found = _LEAD.match(line)
        lead, body = (found.group(1), found.group(2)) if found else ("", line.strip())
        body = body.replace("]", "\\]")  # a bracket in the text would end the highlight
        out.append(f"{lead}:orange-background[{body}]")
    return "\n".join(out)


def step_signature(row: dict) -> tuple:
    """What makes two plan steps the same step: their agent and their action."""
    return (row.get("Agent") or row.get("Team"), row.get("Action") or row.get("Instruction"))


def differing_steps(rows: list[dict], other: list[dict]) -> list[dict]:
    """``rows`` (a step table) with a "Differs" column: "◆ not in the other run" for a
    step (agent and action) the other run's plan does not have."""
    theirs = {step_signature(r) for r in other}
    return [
        {**r, "Differs": "" if step_signature(r) in theirs else "◆ not in the other run"}
        for r in rows
    ]
