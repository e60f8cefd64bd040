"""What the Evals page's Sets and New experiment tabs show, computed without Streamlit:
an eval set as editable JSON and as a readable table, the choices of a variant (prompt
versions, models, who answers approvals), a recorded experiment's label and variants,
and a document as a download's JSON and file name.

Kept apart from the page so the rules (what a cell says, which figure goes where) are
testable, and the page stays a layout of widgets.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Sequence

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

SHIPPED = "shipped default"
SHIPPED_ID = 0  # the "version" a variant picks for the shipped text (stored ids start at 1)


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


def json_file(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


def file_stem(name: str) -> str:
    """A name made safe for a download's file name."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "eval-set"
