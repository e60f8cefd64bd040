"""Conversations, per-agent memory, hooks and the guardrail, for every hosted system
(seed 003).

A hosted system runs as agents under one root: the system itself (one agent, named
after the system, whose nodes are the system's nodes) and, when the design switches it
on, the guardrail. ``wire`` adds this to a system's graph builder before it compiles:

- every node is wrapped so that the agent it belongs to remembers, in persisted state,
  its last node, the node it goes on at (``resume_at``) and its step, and whether it is
  active, hibernated (another agent took over) or finished;
- ``after`` hooks run when a node returns and may send execution elsewhere; ``fallback``
  hooks run on LangGraph's own node error handler; ``before_run`` hooks decide where a
  new user message goes first (the guardrail, when it is on);
- a run is a conversation: follow-up messages (``follow_up_plan``) start a new turn
  when the main agent has finished, or wait as queued while it works and start when it
  finishes. The main agent's plan is never thrown away by a message arriving mid-plan.

The per-system part is small: each system package names its ``ENTRY`` node and offers
``new_turn(state, text, design)``, the state update that starts a turn in the same thread.
"""

from __future__ import annotations

import operator
import time
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Optional

from typing_extensions import TypedDict

from langchain_core.messages import HumanMessage
from langgraph._internal._runnable import RunnableCallable
from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command

from graph.guardrail import check_message, flag_tool_results, guardrail_message
from graph.models.chat import describe_error
from graph.hooks import GUARDRAIL, Agents, HookError, Hooks, Target
from graph.reducers import merge_dicts
from graph.systems import get_system


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

    system: str
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
        return get_system(self.system).module().new_turn(state, text, self.design)


# ------------------------------------------------------------------ turns

def new_turn_record(text: str, status: str) -> dict:
    return {"id": uuid.uuid4().hex[:8], "text": text, "at": time.time(), "status": status,
            "reason": "", "answer": None, "checks": []}


def first_turn(question: str, design) -> dict:
    """The conversation keys of a run's initial state: its question is turn one."""
    turn = new_turn_record(question, "checking" if design.guardrail else "active")
    state: dict = {"turns": {turn["id"]: turn}, "active_turn": turn["id"]}
    if design.guardrail:
        state["checking_turn"] = turn["id"]
    hooks = Hooks(design.hooks, guardrail=design.guardrail)
    if (target := hooks.before_run(state, turn)) is not None:
        # START's edge follows the same hook (``_route_start``); an edge cannot write
        # state, so the first message's routing is logged here, where it is decided too.
        # Nothing has run yet, so an agent (with or without resume) means its start.
        starts = {design.system: get_system(design.system).module().ENTRY, GUARDRAIL: GUARDRAIL}
        state["hook_log"] = [_log("before_run", "", target,
                                  starts.get(target.node, target.node), state)]
    return state


def ordered_turns(state: dict) -> list[dict]:
    return sorted((state.get("turns") or {}).values(), key=lambda t: t.get("at") or 0)


def _turn(state: dict, turn_id: str | None, **changes) -> dict:
    turn = dict((state.get("turns") or {}).get(turn_id) or {})
    return {turn_id: {**turn, **changes}} if turn_id and turn else {}


def _memory(state: dict, agent: str, **changes) -> dict:
    return {agent: {**((state.get("agent_memory") or {}).get(agent) or {}), **changes,
                    "updated_at": time.time()}}


# ------------------------------------------------------------------ moving between agents

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
        return memory["resume_at"], {"agent_memory": _memory(state, ctx.system, status="active")}
    waiting = next((t for t in ordered_turns(state) if t.get("status") in ("passed", "queued")),
                   None)
    if waiting is None:
        return ctx.entry, {}
    if not memory:  # never ran: the question is already in the state
        return ctx.entry, {"turns": _turn(state, waiting["id"], status="active"),
                           "active_turn": waiting["id"]}
    return ctx.entry, start_turn(ctx, state, waiting)


def start_turn(ctx: Context, state: dict, turn: dict) -> dict:
    """The update that makes ``turn`` the main agent's work now."""
    return {**ctx.new_turn(state, turn["text"]), "active_turn": turn["id"],
            "turns": _turn(state, turn["id"], status="active"),
            "agent_memory": _memory(state, ctx.system, status="active", resume_at=ctx.entry,
                                    step=0)}


def _log(event: str, node: str, target: Target, goto: str, state: dict) -> dict:
    return {"event": event, "node": node, "target": target.node, "resume": target.resume,
            "goto": goto, "rule": target.rule, "turn": state.get("active_turn"), "at": time.time(),
            "step": state.get("current_step")}


KEYED = ("turns", "agent_memory")  # this module's maps keyed by turn / agent (merge_dicts)


def _merge(update: dict, more: dict) -> dict:
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


def _applied(state: dict, update: dict) -> dict:
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


# ------------------------------------------------------------------ the node wrapper

def _split(out: Any) -> tuple[Any, dict, bool]:
    if isinstance(out, Command):
        return out.goto, dict(out.update or {}), True
    return None, dict(out or {}), False


def after_node(ctx: Context, node: str, state: dict, out: Any) -> Any:
    """Everything that happens when a node returns: memory, tool-result flags, ``after``
    hooks, and the end of a turn (answer recorded, a queued message started)."""
    goto, update, is_command = _split(out)
    if is_command and goto and not isinstance(goto, str):
        return out  # fan-out (Send/list): leave it as it is
    agent = ctx.agents.agent_of(node) or ctx.system
    seen = _applied(state, update)
    step = seen.get("current_step")
    extra: dict = {}
    if ctx.design.guardrail and (flags := flag_tool_results(update.get("messages") or [],
                                                            node, step)):
        extra["guardrail_flags"] = flags
    if goto == END:
        extra["agent_memory"] = _memory(seen, agent, last_node=node, step=step,
                                        status="finished", resume_at=ctx.agents.entry[agent])
    elif isinstance(goto, str):
        same = ctx.agents.agent_of(goto) == agent
        extra["agent_memory"] = _memory(seen, agent, last_node=node, step=step,
                                        status="active" if same else "hibernated",
                                        resume_at=goto if same else (
                                            (seen.get("agent_memory") or {}).get(agent) or {}
                                        ).get("resume_at"))
    else:
        extra["agent_memory"] = _memory(seen, agent, last_node=node, step=step, status="active")
    update = _merge(update, extra)
    seen = _applied(state, update)

    if (target := ctx.hooks.after(node, seen)) is not None and is_command:
        new_goto, more = resolve(ctx, target, seen)
        log = _log("after", node, target, new_goto, seen)
        if isinstance(goto, str) and goto != END and ctx.agents.agent_of(goto) == agent \
                and ctx.agents.agent_of(new_goto) != agent:
            more = _merge(more, {"agent_memory": _memory(seen, agent, status="hibernated",
                                                         resume_at=goto, last_node=node,
                                                         step=step)})
        update = _merge(_merge(update, more), {"hook_log": [log]})
        goto = new_goto
        seen = _applied(state, update)
    elif target is not None:
        raise HookError(f"An after hook on {node!r} cannot redirect: the node has fixed edges.")

    if goto == END and agent == ctx.system:
        update = _merge(update, end_turn(ctx, seen))
        if (queued := next((t for t in ordered_turns(seen) if t.get("status") == "queued"),
                           None)) is not None:
            update = _merge(update, start_turn(ctx, _applied(state, update), queued))
            goto = ctx.entry
    if is_command:
        return Command(goto=goto, update=update, graph=out.graph, resume=out.resume)
    return update


def end_turn(ctx: Context, state: dict) -> dict:
    """The active turn is answered (or failed): keep its answer on the turn."""
    turn_id = state.get("active_turn")
    failed = state.get("outcome") == "failed"
    return {"turns": _turn(state, turn_id, status="failed" if failed else "answered",
                           answer=state.get("final_answer"),
                           reason=state.get("outcome_reason") or "")}


def _remembering(ctx: Context, node: str, inner) -> RunnableCallable:
    def run(state: dict, config) -> Any:
        return after_node(ctx, node, state, inner.invoke(state, config))

    return RunnableCallable(run, name=node)


def _fallback(state: dict, error: NodeError, *, ctx: Context) -> Command:
    """LangGraph's node error handler: a ``fallback`` hook decides, or the run fails."""
    target = ctx.hooks.fallback(error.node, error.error, state)
    if target is None:
        raise error.error
    goto, update = resolve(ctx, target, state)
    log = _log("fallback", error.node, target, goto, state)
    log["error"] = f"{type(error.error).__name__}: {error.error}"
    return Command(goto=goto, update=_merge(update, {"hook_log": [log]}))


def _route_start(state: dict, *, ctx: Context) -> str:
    """Where the first message goes: the ``before_run`` hook's target, else the start."""
    logged = [h for h in state.get("hook_log") or []
              if h.get("event") == "before_run" and h.get("turn") == state.get("active_turn")]
    if logged and logged[-1].get("goto") in ctx.agents.nodes:
        return logged[-1]["goto"]  # decided (and logged) with the initial state
    turn = (state.get("turns") or {}).get(state.get("active_turn") or "") or {}
    target = ctx.hooks.before_run(state, turn)
    return resolve(ctx, target, state)[0] if target is not None else ctx.entry


# ------------------------------------------------------------------ the guardrail agent

def guardrail_node(state: dict, *, ctx: Context) -> Command:
    """Check the message waiting for it; pass it on (the main agent resumes where it was)
    or refuse it with the reason."""
    turn_id = state.get("checking_turn")
    turn = (state.get("turns") or {}).get(turn_id or "")
    step = state.get("current_step")
    if not turn:
        goto, update = continue_main(ctx, state)
        return Command(goto=goto, update=update)
    spec = get_system(ctx.system)
    try:
        result = check_message(turn["text"], spec.agents(), list(ctx.design.enabled_agents),
                               model=ctx.model if ctx.design.guardrail_classifier else None,
                               prompts=ctx.prompts)
        passed, reason, checks = result.passed, result.reason, result.checks
    except Exception as exc:  # fail closed: a message nobody could check does not pass
        passed, reason, checks = False, f"The classifier could not check it: {describe_error(exc, ctx.settings)}", []
    main = (state.get("agent_memory") or {}).get(ctx.system) or {}
    mid_work = main.get("status") == "hibernated" and bool(main.get("resume_at"))
    update: dict = {"checking_turn": None}
    if passed:
        update["turns"] = _turn(state, turn_id, status="queued" if mid_work else "passed",
                                reason=reason, checks=checks)
        said = (f"Message passed the guardrail; {ctx.system} resumes at "
                f"{main.get('resume_at')} (step {main.get('step')}) and takes it when done."
                if mid_work else "Message passed the guardrail.")
        update["messages"] = [guardrail_message(said, step)]
        seen = _applied(state, update)
        goto, more = resolve(ctx, Target(node=ctx.system, resume=True), seen)
        return Command(goto=goto, update=_merge(update, more))
    update["turns"] = _turn(state, turn_id, status="refused", reason=reason, checks=checks)
    update["messages"] = [guardrail_message(f"Refused: {reason}", step)]
    if mid_work:  # the refused message is dropped; the main agent goes on with its plan
        seen = _applied(state, update)
        goto, more = resolve(ctx, Target(node=ctx.system, resume=True), seen)
        return Command(goto=goto, update=_merge(update, more))
    if not main:  # the first message was refused: the run ends with the refusal
        update.update({"outcome": "done", "final_answer": f"The guardrail refused this message. "
                       f"{reason}", "outcome_reason": f"The guardrail refused the message: {reason}"})
    return Command(goto=END, update=update)


# ------------------------------------------------------------------ wiring

def wire(builder: StateGraph, design, *, system: str, entry: str, model=None, prompts=None,
         settings=None, hooks: Hooks | None = None) -> Agents:
    """Add memory, hooks, conversations and (if switched on) the guardrail to a system's
    graph builder, before it compiles. Refuses hook rules that name nothing real."""
    hooks = hooks or Hooks(design.hooks, guardrail=design.guardrail)
    nodes = set(builder.nodes)
    agents = Agents(system, entry, nodes, design.guardrail)
    for rule in design.hooks:
        agents.check(Target(node=rule.target, resume=rule.resume))
        if rule.event != "before_run" and rule.node != "*" and rule.node not in agents.nodes:
            raise HookError(f"A {rule.event} hook watches {rule.node!r}, which is not a node "
                            f"of this design: {', '.join(sorted(agents.nodes))}.")
    ctx = Context(system, design, agents, hooks, model, prompts, settings)
    if design.guardrail:
        builder.add_node(GUARDRAIL, lambda state: guardrail_node(state, ctx=ctx),
                         destinations=(entry, END))
    for name, spec in builder.nodes.items():
        if not isinstance(spec.runnable, Pregel):  # team subgraphs keep their own drawing
            spec.runnable = _remembering(ctx, name, spec.runnable)
    starts = {entry, *(t for t in ([GUARDRAIL] if design.guardrail else []))}
    starts |= {agents.entry.get(r.target, r.target) for r in design.hooks
               if r.event == "before_run" and not r.resume}
    if starts != {entry}:
        builder.edges.discard((START, entry))
        builder.add_conditional_edges(START, lambda state: _route_start(state, ctx=ctx),
                                      sorted(starts))
    if hooks.has_fallback:
        def on_node_error(state: dict, error: NodeError) -> Command:  # LangGraph injects by type
            return _fallback(state, error, ctx=ctx)

        builder.set_node_defaults(error_handler=on_node_error)
    return agents


# ------------------------------------------------------------------ follow-up messages

def follow_up_plan(compiled, design, text: str):
    """How a follow-up message enters a run, decided from its state when it stops:
    ``plan(snapshot) -> (update, goto)`` for ``RunService.redirect``.

    The ``before_run`` hook (the guardrail, when on) takes it first; without one, a main
    agent mid-work keeps going and the message waits as queued, and a finished one starts
    a new turn with it at once."""
    text = (text or "").strip()
    if not text:
        raise ValueError("The message is empty.")
    system = design.system
    module = get_system(system).module()
    nodes = set(compiled.nodes) - {"__start__"}
    agents = Agents(system, module.ENTRY, nodes - {GUARDRAIL}, design.guardrail)
    ctx = Context(system, design, agents, Hooks(design.hooks, guardrail=design.guardrail),
                  None, None)

    def plan(snapshot) -> tuple[dict, str]:
        values = dict(snapshot.values or {})
        from graph.runs import pending_nodes  # graph.runs imports the systems

        upcoming = pending_nodes(snapshot)
        if GUARDRAIL in upcoming:
            raise ValueError("The guardrail is still checking the previous message; send this "
                             "one when it has answered.")
        turn = new_turn_record(text, "received")
        update: dict = {"turns": {turn["id"]: turn},
                        "messages": [HumanMessage(content=text, name="user")]}
        main_next = next((n for n in upcoming if agents.agent_of(n) == system), None)
        if main_next:  # the main agent is mid-work: it hibernates where it was
            update["agent_memory"] = _memory(values, system, status="hibernated",
                                             resume_at=main_next, step=values.get("current_step"))
        seen = _applied(values, update)
        target = ctx.hooks.before_run(seen, turn)
        if target is not None:
            goto, more = resolve(ctx, target, seen)
            status = "checking" if goto == GUARDRAIL else "queued" if main_next else "passed"
            update = _merge(update, {"turns": {turn["id"]: {**turn, "status": status}},
                                     "hook_log": [_log("before_run", "", target, goto, seen)]})
            if goto == GUARDRAIL:
                update["checking_turn"] = turn["id"]
            return _merge(update, more), goto
        if main_next:
            update["turns"] = {turn["id"]: {**turn, "status": "queued"}}
            return update, main_next
        return _merge(update, start_turn(ctx, seen, {**turn, "status": "passed"})), ctx.entry

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
