"""What the Prompts page shows besides the editor: titles, past states, diffs. No Streamlit."""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass
from datetime import datetime

from graph.agents.user_agents import agent_of_prompt
from graph.prompts import prompt_spec

EDITOR_HEIGHTS = {480: "Medium", 640: "Large", 900: "Very large"}  # pixels: words
DEFAULT_HEIGHT = 640


def short_name(name: str) -> str:
    return name.split("/", 1)[-1]


def prompt_title(name: str) -> str:
    if agent := agent_of_prompt(name):
        return f"Your agent · {agent}"
    return f"{short_name(name)} — {prompt_spec(name).purpose}"


def default_words(name: str) -> str:
    """What a prompt's default is called: the shipped text, or a user agent's own prompt."""
    if agent_of_prompt(name):
        return "the prompt of its definition"
    return "the shipped default"


def placeholders_help(name: str) -> str:
    spec = prompt_spec(name)
    allowed = ", ".join(f"{{{p}}}" for p in sorted(spec.allowed)) or "none"
    required = ", ".join(f"{{{p}}}" for p in sorted(spec.required))
    text = f"Placeholders it may use: {allowed}."
    if required:
        text += f" It must use: {required}."
    return text


def state_label(number: int, values: dict, upcoming: tuple[str, ...]) -> str:
    """A checkpoint in words, unique by its number: which plan version and step it is at
    (when its system keeps a plan) and the node that runs next."""
    step = values.get("current_step") or 1
    plan = values.get("plan") or {}
    where = f"step {step}" + (f" of {len(plan)}" if isinstance(plan, dict) and plan else "")
    history = values.get("plan_history")
    if history:
        where = f"plan v{len(history)}, {where}"
    elif "plan_history" in values:
        where = f"no plan yet, {where}"
    return f"{number}. {where}, before {' + '.join(upcoming)} ran"


def past_states(compiled, run_id: str) -> list[tuple[str, dict]]:
    """A run's checkpoints, oldest first, each labelled by its number, plan version, step
    and the node run next (a step replanned three times has four states before the
    Executor: only the plan version tells them apart)."""
    found = []
    for snap in compiled.get_state_history({"configurable": {"thread_id": run_id}}):
        if snap.next:
            found.append((dict(snap.values), tuple(snap.next)))
    found.reverse()
    return [(state_label(i, values, nxt), values) for i, (values, nxt) in enumerate(found, 1)]


def fitting_state(states: list[tuple[str, dict]], node: str | None) -> int:
    """The first state in which ``node`` runs next (so its prompt is the one sent)."""
    for index, (label, _) in enumerate(states):
        if node and f"before {node}" in label:
            return index
    return 0


def runs_for_prompt(name: str, runs: list) -> list:
    """The runs whose state a prompt can be previewed on: a system's prompt (named
    ``<system>/…``) only on that system's runs; the guardrail's, the model adapter's and
    the judge's serve every system."""
    from graph.kernel.system import systems

    owner = name.split("/", 1)[0]
    if owner not in systems():
        return list(runs)
    return [r for r in runs if r.system == owner]


def save_state(text: str, active_text: str, versions: list) -> str | None:
    """What the editor holds compared with what is stored: None when it is the active
    text, else a sentence (a saved but inactive version is not an unsaved change)."""
    if text == active_text:
        return None
    saved = next((v for v in versions if v.text == text), None)
    if saved is not None:
        return (
            f"Saved as version “{saved.label}”, not active: runs keep using the active "
            "version until you make this one active (Versions, below)."
        )
    return (
        "Unsaved changes: runs keep using the active version until you save this one "
        "and make it active."
    )


@dataclass(frozen=True)
class DiffRow:
    """One line of a side-by-side diff: the old line and the new one (None where a side
    has no line), and how they differ: same, changed, removed or added."""

    old_no: int | None
    old: str | None
    new_no: int | None
    new: str | None
    kind: str


def side_by_side(old: str, new: str, context: int | None = None) -> list[DiffRow]:
    """Two texts line against line. ``context``: unchanged lines kept around each change
    (None keeps them all, 0 shows the changes only)."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                rows.append(DiffRow(i + 1, a[i], j + 1, b[j], "same"))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            left = (i + 1, a[i]) if i < i2 else (None, None)
            right = (j + 1, b[j]) if j < j2 else (None, None)
            if left[1] is not None and right[1] is not None:
                kind = "changed"
            else:
                kind = "removed" if right[1] is None else "added"
            rows.append(DiffRow(left[0], left[1], right[0], right[1], kind))
    if context is None:
        return rows
    near = {
        k
        for n, row in enumerate(rows)
        if row.kind != "same"
        for k in range(n - context, n + context + 1)
    }
    return [row for n, row in enumerate(rows) if n in near]


DIFF_COLOURS = {  # background of each side's cell, by kind of row
    "changed": ("#fde2e1", "#dcf5e3"),
    "removed": ("#fde2e1", "#f3f3f3"),
    "added": ("#f3f3f3", "#dcf5e3"),
    "same": ("", ""),
}
_CELL = "padding:1px 6px;white-space:pre-wrap;vertical-align:top;font-family:monospace;"
_NUMBER = "color:#888;text-align:right;font-size:0.75em;padding:1px 4px;vertical-align:top"


def _cell(no: int | None, line: str | None, colour: str, side: str) -> str:
    style = _CELL + "font-size:0.85em;" + (f"background:{colour};" if colour else "")
    number = "" if no is None else str(no)
    text = "" if line is None else html.escape(line)
    return f'<td style="{_NUMBER}">{number}</td><td class="diff-{side}" style="{style}">{text}</td>'


def diff_html(rows: list[DiffRow], old_label: str, new_label: str) -> str:
    """A side-by-side diff as an HTML table: each text's own lines, as written (no + or -
    before them, which a prompt's bullet dashes would be mistaken for), removed lines
    red on the left, added ones green on the right."""
    head = (
        '<table class="prompt-diff" style="width:100%;table-layout:fixed;'
        'border-collapse:collapse"><colgroup><col style="width:2.5em"><col>'
        '<col style="width:2.5em"><col></colgroup>'
        f"<tr><th></th><th>{html.escape(old_label)}</th><th></th>"
        f"<th>{html.escape(new_label)}</th></tr>"
    )
    body = "".join(
        f'<tr class="diff-{r.kind}">'
        + _cell(r.old_no, r.old, DIFF_COLOURS[r.kind][0], "old")
        + _cell(r.new_no, r.new, DIFF_COLOURS[r.kind][1], "new")
        + "</tr>"
        for r in rows
    )
    return head + body + "</table>"


def format_time(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


GUARDRAIL_SAMPLE = "How did IBM's stock do in 2008?"


def guardrail_preview(name: str, text: str, state: dict | None, design) -> str:
    """The guardrail's classifier prompt filled in for the design's enabled agents and a
    message: the latest of a past run's conversation, else a sample follow-up."""
    from graph.kernel.system import get_system
    from graph.prompts import render

    turns = sorted(((state or {}).get("turns") or {}).values(), key=lambda t: t.get("at") or 0)
    message = turns[-1]["text"] if turns else GUARDRAIL_SAMPLE
    catalog = get_system(design.system).agents
    agents = (
        "\n".join(
            f"- {n}: {getattr(catalog.get(n), 'description', '')}" for n in design.enabled_agents
        )
        or "- (none)"
    )
    return render(name, text, {"message": message, "agents": agents})


def models_preview(name: str, text: str) -> str:
    """A model-adapter prompt filled in as a server without the feature receives it: the
    tool-calling rules for the SQL tool, the JSON shape of the guardrail's verdict."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from graph.kernel.guardrail import Verdict
    from graph.models import tool_prompting
    from graph.models.structured import shape_text, tight_schema
    from graph.prompts import PromptSet
    from graph.tools.database import open_database, sql_tool

    prompts = PromptSet({name: text})
    if name == tool_prompting.PROMPT:
        return tool_prompting.instructions(
            [convert_to_openai_tool(sql_tool(open_database(), 5))], prompts
        )
    return shape_text(tight_schema(Verdict), prompts)
