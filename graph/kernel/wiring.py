"""Wiring a system's graph for conversations, memory, hooks and the guardrail (docs/systems/conversations.md).

A system builds its graph on a ``SystemGraph``, which wraps every node as it is added,
so that when it returns the agent it belongs to remembers where it stopped
(``graph.kernel.conversation``), tool results are scanned for injected instructions,
``after`` hooks may send execution elsewhere, and the end of the main agent's work ends
the turn (and starts a queued message). ``wire`` then adds, before it compiles:

- ``fallback`` hooks on LangGraph's own node error handler;
- the guardrail agent, when the design switches it on, and the start of the graph: the
  system's entry, or a routing of a new user message to the guardrail (or wherever a
  ``before_run`` hook says).

Only LangGraph's public builder methods are used: a compiled graph is never edited.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import operator
from typing import TYPE_CHECKING, Any, Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Checkpointer, Command

from graph.kernel.checkpoints import memory_checkpointer
from graph.kernel.conversation import (
    Context,
    applied,
    continue_main,
    end_turn,
    hook_record,
    memory_update,
    merge_updates,
    ordered_turns,
    resolve,
    start_turn,
    turn_update,
)
from graph.kernel.guardrail import check_message, flag_tool_results, guardrail_message
from graph.kernel.hooks import GUARDRAIL, Agents, HookError, Hooks, Target
from graph.kernel.reducers import merge_dicts
from graph.kernel.system import System
from graph.models.chat import describe_error
from graph.prompts import PromptSet
from graph.settings import Settings

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from graph.kernel.design import Design


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
    seen = applied(state, update)
    step = seen.get("current_step")
    extra: dict = {}
    if ctx.design.guardrail and (
        flags := flag_tool_results(update.get("messages") or [], node, step)
    ):
        extra["guardrail_flags"] = flags
    if goto == END:
        extra["agent_memory"] = memory_update(
            seen,
            agent,
            last_node=node,
            step=step,
            status="finished",
            resume_at=ctx.agents.entry[agent],
        )
    elif isinstance(goto, str):
        same = ctx.agents.agent_of(goto) == agent
        extra["agent_memory"] = memory_update(
            seen,
            agent,
            last_node=node,
            step=step,
            status="active" if same else "hibernated",
            resume_at=goto
            if same
            else ((seen.get("agent_memory") or {}).get(agent) or {}).get("resume_at"),
        )
    else:
        extra["agent_memory"] = memory_update(
            seen, agent, last_node=node, step=step, status="active"
        )
    update = merge_updates(update, extra)
    seen = applied(state, update)

    if (target := ctx.hooks.after(node, seen)) is not None and is_command:
        new_goto, more = resolve(ctx, target, seen)
        log = hook_record("after", node, target, new_goto, seen)
        if (
            isinstance(goto, str)
            and goto != END
            and ctx.agents.agent_of(goto) == agent
            and ctx.agents.agent_of(new_goto) != agent
        ):
            more = merge_updates(
                more,
                {
                    "agent_memory": memory_update(
                        seen, agent, status="hibernated", resume_at=goto, last_node=node, step=step
                    )
                },
            )
        update = merge_updates(merge_updates(update, more), {"hook_log": [log]})
        goto = new_goto
        seen = applied(state, update)
    elif target is not None:
        raise HookError(f"An after hook on {node!r} cannot redirect: the node has fixed edges.")

    if goto == END and agent == ctx.system:
        update = merge_updates(update, end_turn(ctx, seen))
        if (
            queued := next((t for t in ordered_turns(seen) if t.get("status") == "queued"), None)
        ) is not None:
            update = merge_updates(update, start_turn(ctx, applied(state, update), queued))
            goto = ctx.entry
    if is_command:
        return Command(goto=goto, update=update, graph=out.graph, resume=out.resume)
    return update


def idle_writes(builder: StateGraph) -> frozenset[str]:
    """The state keys for which writing an empty list or dict changes nothing: those whose
    reducer appends (``operator.add``, ``add_messages``) or merges (``merge_dicts``)."""
    return frozenset(
        key
        for key, channel in builder.channels.items()
        if isinstance(channel, BinaryOperatorAggregate)
        and (
            channel.operator in (operator.add, merge_dicts)
            or getattr(channel.operator, "__name__", "") == "_add_messages"
        )
    )


def without_idle_writes(out: Any, idle: frozenset[str]) -> Any:
    """A node's return without its empty appends and merges (``notices: []``): each
    would still be a new version of its channel, serialized into the next checkpoint,
    for a value that did not change."""
    update = out.update if isinstance(out, Command) else out
    if not isinstance(update, dict):
        return out
    kept = {
        k: v for k, v in update.items() if not (k in idle and type(v) in (list, dict) and not v)
    }
    if len(kept) == len(update):
        return out
    return dataclasses.replace(out, update=kept) if isinstance(out, Command) else kept


def _caller(node: str, action: Any) -> Callable[[dict, RunnableConfig], Any]:
    """How the wrapper calls a node's own function: with its state, and its config if it
    takes one (what LangGraph would have passed it). A parameter LangGraph would inject
    besides these (``runtime``, ``store``, ``writer``) is refused here, when the graph is
    built, rather than failing at the node's first run."""
    if isinstance(action, Runnable):
        return action.invoke
    if not callable(action) or inspect.iscoroutinefunction(action):
        raise TypeError(f"Node {node!r} must be a function or a runnable (not async): {action!r}.")
    params = list(inspect.signature(action).parameters.values())
    takes_config = False
    for param in params[1:]:
        if param.name == "config":
            takes_config = True
        elif param.default is inspect.Parameter.empty and param.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            raise TypeError(
                f"Node {node!r} asks for {param.name!r}: a system's node takes its state "
                "and, if it needs it, its config."
            )
    if takes_config:
        return lambda state, config: action(state, config=config)
    return lambda state, config: action(state)


class SystemGraph(StateGraph):
    """A system's graph builder: each node is wrapped as it is added (``after_node``), so
    the wiring never has to rewrite a builder's nodes. The wrappers find what they need
    (the design, hooks, agents) once ``wire`` has made it; a team subgraph is added as it
    is (it keeps its own drawing and its nodes' memory is its team's)."""

    def __init__(self, state_schema: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(state_schema, *args, **kwargs)
        self._context: Context | None = None
        self._idle = idle_writes(self)

    def add_node(self, node: Any, action: Any = None, **kwargs: Any) -> Any:
        if not isinstance(node, str) or action is None:
            raise TypeError("A system's node is added with its name first: add_node(name, action).")
        if not isinstance(action, Pregel):
            action = self._remembering(node, action)
        return super().add_node(node, action, **kwargs)

    def _remembering(self, node: str, action: Any) -> Callable[[dict, RunnableConfig], Any]:
        """``action`` followed by ``after_node``. A plain function, so LangGraph wraps it
        as it does any node: untraced (the node's task is the traced run), and run in a
        worker thread when the graph is streamed asynchronously (LangGraph Server's
        ``astream``), where inline it would block the server's event loop."""
        call = _caller(node, action)

        def run(state: dict, config: RunnableConfig) -> Any:
            if self._context is None:
                raise RuntimeError(f"Node {node!r} ran in a graph compiled without compile_graph.")
            out = call(state, config)
            return without_idle_writes(after_node(self._context, node, state, out), self._idle)

        return run


def _fallback(state: dict, error: NodeError, *, ctx: Context) -> Command:
    """LangGraph's node error handler: a ``fallback`` hook decides, or the run fails."""
    target = ctx.hooks.fallback(error.node, error.error, state)
    if target is None:
        raise error.error
    goto, update = resolve(ctx, target, state)
    log = hook_record("fallback", error.node, target, goto, state)
    log["error"] = f"{type(error.error).__name__}: {error.error}"
    return Command(goto=goto, update=merge_updates(update, {"hook_log": [log]}))


def _route_start(state: dict, *, ctx: Context) -> str:
    """Where the first message goes: the ``before_run`` hook's target, else the start."""
    logged = [
        h
        for h in state.get("hook_log") or []
        if h.get("event") == "before_run" and h.get("turn") == state.get("active_turn")
    ]
    if logged and logged[-1].get("goto") in ctx.agents.nodes:
        return logged[-1]["goto"]  # decided (and logged) with the initial state
    turn = (state.get("turns") or {}).get(state.get("active_turn") or "") or {}
    target = ctx.hooks.before_run(state, turn)
    return resolve(ctx, target, state)[0] if target is not None else ctx.entry


def guardrail_node(state: dict, *, ctx: Context) -> Command:
    """Check the message waiting for it; pass it on (the main agent resumes where it was)
    or refuse it with the reason."""
    turn_id = state.get("checking_turn")
    turn = (state.get("turns") or {}).get(turn_id or "")
    step = state.get("current_step")
    if not turn:
        goto, update = continue_main(ctx, state)
        return Command(goto=goto, update=update)
    try:
        result = check_message(
            turn["text"],
            ctx.spec,
            list(ctx.design.enabled_agents),
            model=ctx.model if ctx.design.guardrail_classifier else None,
            prompts=ctx.prompts,
        )
        passed, reason, checks = result.passed, result.reason, result.checks
    except Exception as exc:  # fail closed: a message nobody could check does not pass
        log.warning("the guardrail could not check turn %s: %r", turn_id, exc)
        passed, reason, checks = (
            False,
            f"The classifier could not check it: {describe_error(exc, ctx.settings)}",
            [],
        )
    main = (state.get("agent_memory") or {}).get(ctx.system) or {}
    mid_work = main.get("status") == "hibernated" and bool(main.get("resume_at"))
    update = {"checking_turn": None}
    if passed:
        update["turns"] = turn_update(
            state, turn_id, status="queued" if mid_work else "passed", reason=reason, checks=checks
        )
        said = (
            f"Message passed the guardrail; {ctx.system} resumes at "
            f"{main.get('resume_at')} (step {main.get('step')}) and takes it when done."
            if mid_work
            else "Message passed the guardrail."
        )
        update["messages"] = [guardrail_message(said, step)]
        seen = applied(state, update)
        goto, more = resolve(ctx, Target(node=ctx.system, resume=True), seen)
        return Command(goto=goto, update=merge_updates(update, more))
    update["turns"] = turn_update(state, turn_id, status="refused", reason=reason, checks=checks)
    update["messages"] = [guardrail_message(f"Refused: {reason}", step)]
    if mid_work:  # the refused message is dropped; the main agent goes on with its plan
        seen = applied(state, update)
        goto, more = resolve(ctx, Target(node=ctx.system, resume=True), seen)
        return Command(goto=goto, update=merge_updates(update, more))
    if not main:  # the first message was refused: the run ends with the refusal
        update.update(
            {
                "outcome": "done",
                "final_answer": f"The guardrail refused this message. {reason}",
                "outcome_reason": f"The guardrail refused the message: {reason}",
            }
        )
    return Command(goto=END, update=update)


def wire(
    builder: SystemGraph,
    design: Design,
    *,
    system: System,
    model: BaseChatModel | None = None,
    prompts: PromptSet | None = None,
    settings: Settings | None = None,
    hooks: Hooks | None = None,
) -> Agents:
    """Give a system's graph builder (its nodes added, its start left to this) what its
    node wrappers need, its start, the guardrail if switched on and the fallback hooks,
    before it compiles. Refuses hook rules that name nothing real."""
    if not isinstance(builder, SystemGraph):
        raise TypeError(
            "A system builds its graph on a SystemGraph: its nodes are wrapped as added."
        )
    if any(start == START for start, _ in builder.edges) or START in builder.branches:
        raise ValueError(
            f"{system.name}'s graph has its own edge from START: the wiring adds it "
            "(to the guardrail, a before_run hook's target, or the entry)."
        )
    hooks = hooks or Hooks(design.hooks, guardrail=design.guardrail)
    entry = system.shape.entry
    nodes = set(builder.nodes)
    agents = Agents(system.name, entry, nodes, design.guardrail)
    for rule in design.hooks:
        agents.check(Target(node=rule.target, resume=rule.resume))
        if rule.event != "before_run" and rule.node != "*" and rule.node not in agents.nodes:
            raise HookError(
                f"A {rule.event} hook watches {rule.node!r}, which is not a node "
                f"of this design: {', '.join(sorted(agents.nodes))}."
            )
    ctx = Context(system.name, system, design, agents, hooks, model, prompts, settings)
    builder._context = ctx
    if design.guardrail:
        builder.add_node(
            GUARDRAIL, lambda state: guardrail_node(state, ctx=ctx), destinations=(entry, END)
        )
    starts = {entry, *(t for t in ([GUARDRAIL] if design.guardrail else []))}
    starts |= {
        agents.entry.get(r.target, r.target)
        for r in design.hooks
        if r.event == "before_run" and not r.resume
    }
    if starts == {entry}:
        builder.add_edge(START, entry)
    else:
        builder.add_conditional_edges(
            START, lambda state: _route_start(state, ctx=ctx), sorted(starts)
        )
    if hooks.has_fallback:

        def on_node_error(state: dict, error: NodeError) -> Command:  # LangGraph injects by type
            return _fallback(state, error, ctx=ctx)

        # LangGraph passes the NodeError to a handler that annotates it (its runnable
        # wrapper injects it by type); the StateNode union it declares omits that form.
        builder.set_node_defaults(error_handler=on_node_error)  # type: ignore[arg-type]
    return agents


def compile_graph(
    builder: SystemGraph,
    design: Design,
    *,
    system: System,
    checkpointer: Checkpointer = None,
    model: BaseChatModel | None = None,
    prompts: PromptSet | None = None,
    settings: Settings | None = None,
) -> CompiledStateGraph:
    """A system's graph, finished: ``wire`` it, then compile it under the system's name.
    Without a checkpointer a human's answer could not resume a paused run, so one in
    memory (able to load the system's state types) stands in; ``False``: none at all (a
    LangGraph Server puts its own in, ``graph.served``)."""
    wire(builder, design, system=system, model=model, prompts=prompts, settings=settings)
    return builder.compile(
        checkpointer=checkpointer
        if checkpointer is not None
        else memory_checkpointer(system.shape.state_types),
        name=system.name,
    )
