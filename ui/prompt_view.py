"""What the Prompts page shows besides the editor: titles, past states, diffs. No Streamlit."""

from __future__ import annotations

import difflib
from datetime import datetime

from graph.prompts import prompt_spec


def short_name(name: str) -> str:
    return name.split("/", 1)[-1]


def prompt_title(name: str) -> str:
    return f"{short_name(name)} — {prompt_spec(name).purpose}"


def placeholders_help(name: str) -> str:
    spec = prompt_spec(name)
    allowed = ", ".join(f"{{{p}}}" for p in sorted(spec.allowed)) or "none"
    required = ", ".join(f"{{{p}}}" for p in sorted(spec.required))
    text = f"Placeholders it may use: {allowed}."
    if required:
        text += f" It must use: {required}."
    return text


def past_states(compiled, run_id: str) -> list[tuple[str, dict]]:
    """A run's checkpoints, oldest first, each labelled by its step and the node run next."""
    found = []
    for snap in compiled.get_state_history({"configurable": {"thread_id": run_id}}):
        if not snap.next:
            continue
        values = dict(snap.values)
        step = values.get("current_step") or 1
        found.append((f"step {step}, before {' + '.join(snap.next)} ran", values))
    found.reverse()
    return found


def fitting_state(states: list[tuple[str, dict]], node: str | None) -> int:
    """The first state in which ``node`` runs next (so its prompt is the one sent)."""
    for index, (label, _) in enumerate(states):
        if node and f"before {node}" in label:
            return index
    return 0


def text_diff(old: str, new: str, old_label: str, new_label: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=old_label,
            tofile=new_label,
        )
    )


def changed_lines(old: str, new: str) -> str:
    """Only the lines that differ, marked - and +: what an edit does to the prompt sent."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    return "\n".join(
        line for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


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
