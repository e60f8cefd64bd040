"""Conversations and per-agent memory, for every hosted system (docs/systems/conversations.md).

A hosted system runs as agents under one root: the system itself (one agent, named
after the system, whose nodes are the system's nodes) and, when the design switches it
on, the guardrail. Each agent remembers, in persisted state, its last node, the node it
goes on at (``resume_at``) and its step, and whether it is active, hibernated (another
agent took over) or finished (``graph.kernel.wiring`` keeps that memory as nodes return).

A run is a conversation: a follow-up message (``follow_up_plan``) starts a new turn when
the main agent has finished, or waits as queued while it works and starts when it
finishes. The main agent's plan is never thrown away by a message arriving mid-plan. The
per-system part is small: the ``System`` names its ``entry`` node and offers
``new_turn(state, text, design)``, the state update that starts a turn in the same thread.
"""

from __future__ import annotations

import operator
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional

from langchain_core.messages import HumanMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot
from typing_extensions import TypedDict

from graph.kernel.checkpoints import pending_nodes
from graph.kernel.hooks import GUARDRAIL, Agents, Hooks, Target
from graph.kernel.reducers import merge_dicts
from graph.kernel.system import System

if TYPE_CHECKING:
    from graph.kernel.design import Design


class ConversationState(TypedDict, total=False):
    """The keys every hosted system's state adds for conversations and memory."""

    turns: Annotated[dict[str, dict[str, Any]], merge_dicts]  # turn id -> its record
    active_turn: Optional[str]  # the turn the main agent is working on
    checking_turn: Optional[str]  # the message the guardrail is checking
    agent_memory: Annotated[dict[str, dict[str, Any]], merge_dicts]  # agent -> memory
    guardrail_flags: Annotated[list[dict[str, Any]], operator.add]  # flagged tool results
    hook_log: Annotated[list[dict[str, Any]], operator.add]  # every hook that fired


@dataclass
class Context:
    """What the wrappers and the guardrail of one compiled graph share."""

    system: str  # the system's name: the main agent's name
    spec: System
    design: Any
    agents: Agents
    hooks: Hooks
    model: Any  # the guardrail classifier's model (the planner's)
    prompts: Any
    settings: Any = None  # the run's settings: errors name its model server

    @property
    def entry(self) -> str:
        return self.agents.entry[self.system]

    def new_turn(self, state: dict, text: str) -> dict:
        return self.spec.new_turn(state, text, self.design)


def new_turn_record(text: str, status: str) -> dict:
    return {
        "id": uuid.uuid4().hex[:8],
        "text": text,
        "at": time.time(),
        "status": status,
        "reason": "",
        "answer": None,
        "checks": [],
    }


def first_turn(question: str, design: Design, entry: str) -> dict:
    """The conversation keys of a run's initial state: its question is turn one; ``entry``
    is where the system starts a turn."""
    turn = new_turn_record(question, "checking" if design.guardrail else "active")
    state: dict = {"turns": {turn["id"]: turn}, "active_turn": turn["id"]}
    if design.guardrail:
        state["checking_turn"] = turn["id"]
    hooks = Hooks(design.hooks, guardrail=design.guardrail)
    if (target := hooks.before_run(state, turn)) is not None:
        # START's edge follows the same hook (``_route_start``); an edge cannot write
        # state, so the first message's routing is logged here, where it is decided too.
        # Nothing has run yet, so an agent (with or without resume) means its start.
        starts = {design.system: entry, GUARDRAIL: GUARDRAIL}
        state["hook_log"] = [
            hook_record("before_run", "", target, starts.get(target.node, target.node), state)
        ]
    return state


def ordered_turns(state: dict) -> list[dict]:
    return sorted((state.get("turns") or {}).values(), key=lambda t: t.get("at") or 0)


def turn_update(state: dict, turn_id: str | None, **changes: Any) -> dict:
    turn = dict((state.get("turns") or {}).get(turn_id) or {})
    return {turn_id: {**turn, **changes}} if turn_id and turn else {}


def memory_update(state: dict, agent: str, **changes: Any) -> dict:
    return {
        agent: {
            **((state.get("agent_memory") or {}).get(agent) or {}),
            **changes,
            "updated_at": time.time(),
        }
    }


def resolve(ctx: Context, target: Target, state: dict) -> tuple[str, dict]:
    """The node a target means, and the state update going there takes."""
    ctx.agents.check(target)
    if target.resume:
        if target.node == ctx.system:
            return continue_main(ctx, state)
        memory = (state.get("agent_memory") or {}).get(target.node) or {}
        return memory.get("resume_at") or ctx.agents.entry[target.node], {}
    node = ctx.agents.entry.get(target.node, target.node)  # an agent without resume: its start
    update = {"current_step": target.step} if target.step is not None else {}
    return node, update


def continue_main(ctx: Context, state: dict) -> tuple[str, dict]:
    """Resume the main agent: where it stopped if it is hibernated mid-work; else a
    passed message waiting for it starts a new turn; else its start."""
    memory = (state.get("agent_memory") or {}).get(ctx.system) or {}
    if memory.get("status") in ("hibernated", "active") and memory.get("resume_at"):
        return memory["resume_at"], {
            "agent_memory": memory_update(state, ctx.system, status="active")
        }
    waiting = next(
        (t for t in ordered_turns(state) if t.get("status") in ("passed", "queued")), None
    )
    if waiting is None:
        return ctx.entry, {}
    if not memory:  # never ran: the question is already in the state
        return ctx.entry, {
            "turns": turn_update(state, waiting["id"], status="active"),
            "active_turn": waiting["id"],
        }
    return ctx.entry, start_turn(ctx, state, waiting)


def start_turn(ctx: Context, state: dict, turn: dict) -> dict:
    """The update that makes ``turn`` the main agent's work now."""
    return {
        **ctx.new_turn(state, turn["text"]),
        "active_turn": turn["id"],
        "turns": turn_update(state, turn["id"], status="active"),
        "agent_memory": memory_update(
            state, ctx.system, status="active", resume_at=ctx.entry, step=0
        ),
    }


def hook_record(event: str, node: str, target: Target, goto: str, state: dict) -> dict:
    return {
        "event": event,
        "node": node,
        "target": target.node,
        "resume": target.resume,
        "goto": goto,
        "rule": target.rule,
        "turn": state.get("active_turn"),
        "at": time.time(),
        "step": state.get("current_step"),
    }


KEYED = ("turns", "agent_memory")  # this module's maps keyed by turn / agent (merge_dicts)


def merge_updates(update: dict, more: dict) -> dict:
    """Two updates of one node, keyed maps merged (both may touch turns or memory)."""
    merged = dict(update)
    for key, value in more.items():
        if key in KEYED and isinstance(merged.get(key), dict) and isinstance(value, dict):
            merged[key] = {**merged[key], **value}
        elif key in merged and isinstance(value, list) and isinstance(merged[key], list):
            merged[key] = merged[key] + value
        else:
            merged[key] = value
    return merged


def applied(state: dict, update: dict) -> dict:
    """The state as the next node will see it (keyed maps merged, the rest replaced)."""
    seen = dict(state)
    for key, value in update.items():
        if key in KEYED and isinstance(value, dict):
            seen[key] = {**(state.get(key) or {}), **value}
        elif key in ("messages", "hook_log", "guardrail_flags") and isinstance(value, list):
            seen[key] = list(state.get(key) or []) + value
        else:
            seen[key] = value
    return seen


def end_turn(ctx: Context, state: dict) -> dict:
    """The active turn is answered (or failed): keep its answer on the turn."""
    turn_id = state.get("active_turn")
    failed = state.get("outcome") == "failed"
    return {
        "turns": turn_update(
            state,
            turn_id,
            status="failed" if failed else "answered",
            answer=state.get("final_answer"),
            reason=state.get("outcome_reason") or "",
        )
    }


def follow_up_plan(
    compiled: CompiledStateGraph, design: Design, text: str, system: System
) -> Callable[[StateSnapshot], tuple[dict, str]]:
    """How a follow-up message enters a run, decided from its state when it stops:
    ``plan(snapshot) -> (update, goto)`` for ``RunService.redirect``.

    The ``before_run`` hook (the guardrail, when on) takes it first; without one, a main
    agent mid-work keeps going and the message waits as queued, and a finished one starts
    a new turn with it at once."""
    text = (text or "").strip()
    if not text:
        raise ValueError("The message is empty.")
    spec, name = system, system.name
    nodes = set(compiled.nodes) - {"__start__"}
    agents = Agents(name, spec.shape.entry, nodes - {GUARDRAIL}, design.guardrail)
    ctx = Context(
        name, spec, design, agents, Hooks(design.hooks, guardrail=design.guardrail), None, None
    )

    def plan(snapshot: StateSnapshot) -> tuple[dict, str]:
        values = dict(snapshot.values or {})
        upcoming = pending_nodes(snapshot)
        if GUARDRAIL in upcoming:
            raise ValueError(
                "The guardrail is still checking the previous message; send this "
                "one when it has answered."
            )
        turn = new_turn_record(text, "received")
        update: dict = {
            "turns": {turn["id"]: turn},
            "messages": [HumanMessage(content=text, name="user")],
        }
        main_next = next((n for n in upcoming if agents.agent_of(n) == name), None)
        if main_next:  # the main agent is mid-work: it hibernates where it was
            update["agent_memory"] = memory_update(
                values,
                name,
                status="hibernated",
                resume_at=main_next,
                step=values.get("current_step"),
            )
        seen = applied(values, update)
        target = ctx.hooks.before_run(seen, turn)
        if target is not None:
            goto, more = resolve(ctx, target, seen)
            status = "checking" if goto == GUARDRAIL else "queued" if main_next else "passed"
            update = merge_updates(
                update,
                {
                    "turns": {turn["id"]: {**turn, "status": status}},
                    "hook_log": [hook_record("before_run", "", target, goto, seen)],
                },
            )
            if goto == GUARDRAIL:
                update["checking_turn"] = turn["id"]
            return merge_updates(update, more), goto
        if main_next:
            update["turns"] = {turn["id"]: {**turn, "status": "queued"}}
            return update, main_next
        return merge_updates(update, start_turn(ctx, seen, {**turn, "status": "passed"})), ctx.entry

    return plan


def conversation_snapshot(state: dict) -> dict:
    """What the Run page shows of the conversation: turns, agent memory, flags, hooks."""
    return {
        "turns": ordered_turns(state),
        "active_turn": state.get("active_turn"),
        "checking_turn": state.get("checking_turn"),
        "agent_memory": dict(state.get("agent_memory") or {}),
        "guardrail_flags": list(state.get("guardrail_flags") or []),
        "hook_log": list(state.get("hook_log") or []),
    }
