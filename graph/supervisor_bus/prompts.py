"""The prompts of supervisor_bus: which placeholders each may use, and the functions that
fill them from a state (``supervisor_prompt``, ``agent_prompt``, ``request_prompt``).

The texts live in ``prompts/supervisor_bus/*.txt``; this module only declares and fills.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from graph.prompts import PromptSet, PromptSpec, register
from graph.supervisor_bus.agents import (
    AGENTS,
    ROLE_TOOLS,
    enabled_specs,
    format_agent_list,
    is_worker,
)
from graph.supervisor_bus.bus import inbox, messages, preview
from graph.supervisor_bus.state import Message

_P = "supervisor_bus/"

register(
    PromptSpec(
        _P + "supervisor",
        "Supervisor: reads its inbox, decides who runs next or FINISH.",
        frozenset(
            {
                "user_query",
                "agent_list",
                "agent_enum",
                "agent_names",
                "decision_example",
                "round",
                "max_rounds",
                "answered",
                "excluded",
                "outstanding",
                "inbox",
                "bus_tail",
            }
        ),
        frozenset({"user_query", "agent_list", "inbox"}),
    )
)
for _name in AGENTS:
    register(
        PromptSpec(
            _P + _name,
            f"Role of {_name} (its system prompt); {{tools}} lists its tools.",
            frozenset({"tools"}),
        )
    )
register(
    PromptSpec(
        _P + "request",
        "What a worker receives: the supervisor's task and the messages forwarded with it.",
        frozenset({"task", "inputs"}),
        frozenset({"task", "inputs"}),
    )
)
register(
    PromptSpec(
        _P + "repair",
        "Sent back when the supervisor's JSON is unusable.",
        frozenset({"error", "reply", "expected"}),
        frozenset({"error"}),
    )
)

SAMPLE_STATE: dict[str, Any] = {
    "user_query": "What caused the dot-com crash?",
    "enabled_agents": list(AGENTS),
    "bus": [
        Message(
            id="m1-sample",
            from_="user",
            to="supervisor",
            type="request",
            payload={"question": "What caused the dot-com crash?"},
        )
    ],
    "outstanding": {},
    "completed_agents": set(),
    "current_step": 0,
}


# What each worker is asked in the supervisor's example decision (a concrete instance).
EXAMPLE_TASKS = {
    "researcher": (
        "Search the documents for what caused the dot-com crash and report the "
        "findings with their source ids.",
        "No facts have been gathered yet.",
    ),
    "writer": (
        "Write the answer to the question from the findings you received and save it as a draft.",
        "The findings are in and no answer has been written.",
    ),
    "reviewer": (
        "Check that every source cited in the draft exists.",
        "The draft has not been checked yet.",
    ),
}


def routable(state: dict) -> list[str]:
    """The workers the supervisor may send a request to now: enabled, not yet answered in
    this turn, and not ruled out (its memory of the turn; a small model left to itself
    asks the same worker again and again)."""
    done = answered_this_turn(state) | set(excluded_agents(state))
    return [s.name for s in enabled_specs(state.get("enabled_agents")) if s.name not in done]


def decision_names(state: dict) -> list[str]:
    """What "next_agent" may name now: a routable worker, or FINISH."""
    return [*routable(state), "FINISH"]


def decision_example(state: dict) -> str:
    first = next(iter(routable(state)), None)
    user_agent = (
        "Do what your description says for the user's question.",
        f"{first}'s description fits the question.",
    )
    task, reason = EXAMPLE_TASKS.get(
        first or "", user_agent if first else ("", "Nobody can add anything.")
    )
    return json.dumps(
        {"next_agent": first or "FINISH", "task": task if first else "", "reason": reason}
    )


def _ago(seconds: float) -> str:
    return f"{seconds:.1f} s ago"


def describe_message(m: Message) -> str:
    reply = f", answers {m.in_reply_to}" if m.in_reply_to else ""
    return f"- {m.id} {m.from_} → {m.to} [{m.type}{reply}]: {preview(m.payload, 300)}"


def excluded_agents(state: dict) -> dict[str, str]:
    """Agents the supervisor should not ask again, with why: their latest answer was an
    error, or a human dropped or declined their request."""
    why: dict[str, str] = {}
    for m in messages(state):
        if is_worker(m.from_) and m.type == "result":
            why.pop(m.from_, None)
        elif is_worker(m.from_) and m.type == "error" and m.payload.get("kind") != "tool_refused":
            why[m.from_] = "its last answer was an error"
    for record in (state.get("dead_letters") or {}).values():
        if record.get("resolution") == "dropped":
            why[record["to"]] = "a request to it timed out and a human dropped it"
    for record in state.get("approvals") or []:
        if record.get("kind") == "approval" and record.get("decision") in ("reject", "skip"):
            why[record["agent"]] = "a human declined its request"
    return why


def answered_this_turn(state: dict) -> set[str]:
    """The workers that sent a result since the conversation turn began (all of
    ``completed_agents`` in a one-question run)."""
    start = int(state.get("turn_start") or 0)
    return {m.from_ for m in messages(state)[start:] if m.type == "result" and is_worker(m.from_)}


def supervisor_prompt(
    state: dict,
    prompts: PromptSet,
    pending: list[Message],
    max_rounds: int,
    now: float | None = None,
) -> str:
    now = now or time.time()
    enabled = state.get("enabled_agents")
    bus = messages(state)
    outstanding = state.get("outstanding") or {}
    to = {m.id: m.to for m in bus}
    excluded = excluded_agents(state)
    return prompts.render(
        _P + "supervisor",
        user_query=state.get("user_query") or "",
        agent_list=format_agent_list(enabled),
        agent_enum=", ".join(decision_names(state)),  # the name earlier versions used
        agent_names=", ".join(decision_names(state)),
        decision_example=decision_example(state),
        round=int(state.get("current_step") or 0) + 1,
        max_rounds=max_rounds,
        answered=", ".join(sorted(answered_this_turn(state))) or "none",
        excluded=", ".join(f"{a} ({w})" for a, w in excluded.items()) or "none",
        outstanding=", ".join(
            f"{mid} to {to.get(mid, '?')}, sent {_ago(now - at)}" for mid, at in outstanding.items()
        )
        or "none",
        inbox="\n".join(describe_message(m) for m in pending) or "- (empty)",
        bus_tail="\n".join(describe_message(m) for m in bus[-8:]) or "- (empty)",
    )


def agent_prompt(prompts: PromptSet, agent: str) -> str:
    """A worker's system prompt: its role, with the tools its role allows."""
    return prompts.render(_P + agent, tools=", ".join(ROLE_TOOLS.get(agent, ())) or "none")


def request_prompt(prompts: PromptSet, task: str, inputs: list[Message]) -> str:
    """What a worker reads for one request: the task and the messages forwarded with it."""
    lines = [f"- from {m.from_} ({m.id}): {m.payload.get('text', '')}" for m in inputs]
    block = ("\nMessages you received for this task:\n" + "\n".join(lines)) if lines else ""
    return prompts.render(_P + "request", task=task, inputs=block).strip()


def repair_prompt(prompts: PromptSet, expected: str) -> Callable[[str, str], str]:
    return lambda error, reply: prompts.render(
        _P + "repair", error=error, reply=reply[:2000], expected=expected
    )


def preview_prompt(name: str, text: str, state: dict | None = None) -> str:
    """Prompt ``name`` as the model would receive it, with ``text`` in place of its
    current template, for ``state`` (a sample state when None). Raises PromptError
    naming any bad placeholder, so the editor can show it inline."""
    state = {**SAMPLE_STATE, **(state or {})}
    prompts = PromptSet({name: text})
    short = name.removeprefix(_P)
    if short == "supervisor":
        return supervisor_prompt(state, prompts, inbox(state, "supervisor"), 12)
    if short == "request":
        sample = Message(
            id="m3-sample",
            from_="researcher",
            to="supervisor",
            type="result",
            payload={"text": "Findings: Dot-com crash [kb:dotcom-crash]"},
        )
        return request_prompt(prompts, "Write the answer from the findings you received.", [sample])
    if short == "repair":
        return prompts.render(
            name,
            error="the reply is not valid JSON",
            reply="Sure! Here is…",
            expected=decision_example(state),
        )
    return agent_prompt(prompts, short)
