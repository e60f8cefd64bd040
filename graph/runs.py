"""Running a question through a design and turning the stream into events.

This is the one place that drives a compiled graph: the command line, the app's run
service and the benchmarks all call ``run_question``. It streams node updates and
full states, hands each event to a callback (print it, store it), and always ends
with an outcome in words: done, failed (and why) or cancelled, with the state as far
as it got. LangGraph's quiet endings (a route to a missing node, the recursion
limit) are turned into failures that say so.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import GraphDrained, GraphRecursionError
from langgraph.runtime import RunControl
from langgraph.types import Command
from pydantic import BaseModel

from graph.accounting import UsageRecorder
from graph.design import Design
from graph.models.chat import describe_error
from graph.systems import get_system
from graph.settings import Settings, get_settings


@dataclass
class RunEvent:
    """One thing that happened in a run, in order."""

    seq: int
    ts: float
    kind: str  # "update" (a node finished), "custom" (a node's report), "state" (the whole
    # state after a step; large: keep what you need of it), "end" (status and reason)
    node: str  # the node, or "" for the end
    namespace: str  # "" for the top graph, else the sub-agent's path ("web_researcher:<id>")
    step: int | None
    data: Any


class StopSignal(threading.Event):
    """Asks a run to stop at the next superstep boundary, through LangGraph's own drain
    (``RunControl``): the node in progress finishes and its checkpoint is saved, so the
    run can be resumed or sent elsewhere from exactly there. ``redirecting`` says it
    stops to be sent elsewhere (an edited request, a follow-up message), not because a
    user cancelled: the run then ends without an "end" event, since it goes on at once."""

    redirecting = False
    control: RunControl | None = None  # the stream running now, set by continue_run

    def set(self) -> None:
        super().set()
        if self.control is not None:
            self.control.request_drain("redirect" if self.redirecting else "cancel")


@dataclass
class RunOutcome:
    thread_id: str
    status: str  # done / failed / cancelled / waiting (for a human) / paused (step mode)
    reason: str
    state: dict
    events: int
    duration_s: float
    nodes_run: int = 0
    rows: list = field(default_factory=list)
    interrupts: list = field(default_factory=list)  # what waits for a human: {id, step, agent, ...}


def message_record(message) -> dict:
    """A LangChain message as plain JSON: who sent it, its type, content, tool calls."""
    meta = message.response_metadata or {}
    return {
        "id": message.id, "type": message.type, "name": getattr(message, "name", None),
        "content": message.content if isinstance(message.content, str) else str(message.content),
        "tool_calls": [{"name": c["name"], "args": c["args"], "id": c.get("id")}
                       for c in getattr(message, "tool_calls", None) or []],
        "tool_call_id": getattr(message, "tool_call_id", None),
        "step": meta.get("step"), "agent": meta.get("agent"),
        "usage": getattr(message, "usage_metadata", None),
    }


def _plain(value: Any) -> Any:
    if hasattr(value, "response_metadata") and hasattr(value, "content"):
        return message_record(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, BaseModel):  # e.g. a bus Message
        return _plain(value.model_dump())
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=str)
    return str(value)


def event_record(event: RunEvent, system: str = "plan_execute") -> dict:
    """An event as JSON-safe data for the store and exports: a state becomes its
    system's snapshot, messages become records, anything else its text."""
    if event.kind == "state":
        from graph.conversation import conversation_snapshot

        data = {**get_system(system).module().snapshot(event.data),
                "conversation": _plain(conversation_snapshot(event.data))}
    else:
        data = _plain(event.data)
    return {"seq": event.seq, "ts": event.ts, "kind": event.kind, "node": event.node,
            "namespace": event.namespace, "step": event.step, "data": data}


def open_checkpointer(settings: Settings | None = None, path: Path | None = None) -> SqliteSaver:
    """LangGraph's SQLite checkpointer on a file under ``STEPWISE_HOME`` (WAL: runs in
    parallel threads do not block each other)."""
    settings = settings or get_settings()
    path = path or settings.home / "checkpoints.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    return SqliteSaver(conn, serde=checkpoint_serializer())


# Our own types that live in graph state. Checkpoints load only LangGraph's safe types
# and these: a checkpoint file cannot make us build arbitrary objects.
STATE_TYPES = (("graph.supervisor_bus.state", "Message"),)


def checkpoint_serializer() -> JsonPlusSerializer:
    return JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES)


def memory_checkpointer() -> InMemorySaver:
    """The in-memory checkpointer a graph gets when none is given (approvals need one)."""
    return InMemorySaver(serde=checkpoint_serializer())


def run_question(question: str, design: Design | None = None, *,
                 settings: Settings | None = None, checkpointer=None, graph=None,
                 thread_id: str | None = None,
                 on_event: Callable[[RunEvent], None] | None = None,
                 cancel: threading.Event | None = None, step_mode: bool = False) -> RunOutcome:
    """Run ``question`` until it ends, waits for a human, or (step mode) pauses; never
    raises for what went wrong inside the run."""
    design = design or Design()
    question = question.strip()
    if not question:
        raise ValueError("The question is empty.")
    system = get_system(design.system).module()
    graph = graph or system.build_graph(design, settings=settings, checkpointer=checkpointer)
    return continue_run(graph, system.initial_state(question, design), thread_id or uuid.uuid4().hex,
                        design, settings=settings, on_event=on_event, cancel=cancel,
                        step_mode=step_mode)


def continue_run(graph, run_input: Any, thread_id: str, design: Design, *,
                 settings: Settings | None = None,
                 on_event: Callable[[RunEvent], None] | None = None,
                 cancel: threading.Event | None = None, step_mode: bool = False,
                 first_seq: int = 0) -> RunOutcome:
    """Drive a run: ``run_input`` is the initial state, a ``Command(resume=...)`` with a
    human's decision, or None to go on from the last checkpoint (resume after a crash,
    next step in step mode)."""
    settings = settings or get_settings()
    config = {"configurable": {"thread_id": thread_id}, "recursion_limit": design.recursion_limit,
              "callbacks": [UsageRecorder()]}  # every model call becomes an llm_call event
    started = time.time()
    seq = first_seq
    state: dict = {}
    nodes_run = 0
    status, reason = "", ""
    extra: dict = {}

    def emit(kind: str, node: str, namespace: str, data: Any) -> None:
        nonlocal seq
        seq += 1
        if on_event:
            on_event(RunEvent(seq, time.time(), kind, node, namespace,
                              state.get("current_step"), data))

    control = RunControl()
    if isinstance(cancel, StopSignal):
        cancel.control = control
    if cancel is not None and cancel.is_set():
        control.request_drain("cancel")
    try:
        stream = graph.stream(run_input, config, stream_mode=["updates", "custom", "values"],
                              subgraphs=True, interrupt_before="*" if step_mode else None,
                              control=control)
        for namespace, mode, chunk in stream:
            ns = "/".join(namespace)
            if mode == "values":
                if not namespace:
                    state = chunk
                    emit("state", "", "", chunk)
                continue
            if mode == "custom":
                emit("custom", "", ns, chunk)
            else:
                for node, update in (chunk or {}).items():
                    if node == "__interrupt__":
                        continue  # read from the checkpoint below, with its id
                    if not namespace:
                        nodes_run += 1
                    emit("update", node, ns, update)
            if cancel is not None and cancel.is_set():
                control.request_drain("cancel")  # a plain Event cannot ask by itself
    except GraphDrained:
        if getattr(cancel, "redirecting", False):
            status, reason = "redirected", "Stopped to go on elsewhere."
        else:
            status, reason = "cancelled", "Cancelled by the user; everything so far is kept."
    except GraphRecursionError:
        status = "failed"
        reason = (f"Stopped at the recursion limit ({design.recursion_limit} node runs) after "
                  f"{nodes_run} node run(s); the partial results are kept. Raise the limit or "
                  "lower max replans.")
    except Exception as exc:  # a run ends in words, never in a traceback
        status, reason = "failed", describe_error(exc, settings)

    if graph.checkpointer is not None:
        snapshot = graph.get_state(config)
        state = dict(snapshot.values) or state
        if not status and snapshot.interrupts:
            pending = [{"id": i.id, **(i.value if isinstance(i.value, dict) else {"value": i.value})}
                       for i in snapshot.interrupts]
            status = "waiting"
            reason = "Waiting for a human: " + "; ".join(
                f"step {p.get('step')} ({p.get('agent')}): {p.get('reason', '')}" for p in pending)
            extra["interrupts"] = pending
        elif not status and snapshot.next:
            status, reason = "paused", f"Paused before {', '.join(snapshot.next)} (step mode)."
            extra["next"] = list(snapshot.next)
    if not status:
        status = state.get("outcome") or "failed"
        reason = state.get("outcome_reason") or (
            "The run stopped without reaching an end: LangGraph ended it after a route it "
            "could not follow.")
    if status != "redirected":  # a redirected run goes on at once: it has not ended
        emit("end", "", "", {"status": status, "reason": reason, **extra})
    return RunOutcome(thread_id, status, reason, state, seq, time.time() - started, nodes_run,
                      get_system(design.system).module().step_rows(state),
                      extra.get("interrupts", []))


def pending_nodes(snapshot) -> tuple[str, ...]:
    """The nodes a run goes on with from this checkpoint. ``next`` alone is not enough: a
    process killed after a node finished but before the next checkpoint was written leaves
    that node's writes saved as pending, and LangGraph lists it only in ``tasks``; running
    the thread with None applies them and goes on."""
    return tuple(dict.fromkeys([*snapshot.next, *(t.name for t in snapshot.tasks)]))


def redirect_state(graph, thread_id: str, update: dict, goto: str) -> None:
    """Send a run elsewhere: a new checkpoint with ``update`` applied whose next node is
    ``goto``, replacing whatever was next (even a node waiting for a human, or a team
    subgraph half way through). Running the thread with None then goes on from there."""
    nodes = set(graph.nodes) - {"__start__"}
    if goto not in nodes:
        raise ValueError(f"Cannot send the run to {goto!r}: the graph has no such node "
                         f"(nodes: {', '.join(sorted(nodes))}).")
    graph.update_state({"configurable": {"thread_id": thread_id}},
                       Command(update=update, goto=goto), as_node=goto)


# The conversation keys every system shows too: which agent is hibernated where.
CONVERSATION_FIELDS = ("agent_memory", "checking_turn", "active_turn")
TIMELINE_FIELDS = ("plan", "current_step", "agent_query", "last_reason", "replan_flag",
                   "replan_attempts", "step_status", "step_results", "human_request",
                   *CONVERSATION_FIELDS)


def _timeline_fields(graph) -> tuple[str, ...]:
    """The state fields a system's timeline shows (its ``TIMELINE_FIELDS``, if it has them)."""
    from graph.systems import SYSTEMS

    info = SYSTEMS.get(getattr(graph, "name", "") or "")
    if info is None:
        return TIMELINE_FIELDS
    own = getattr(info.module(), "TIMELINE_FIELDS", TIMELINE_FIELDS)
    return (*own, *(f for f in CONVERSATION_FIELDS if f not in own))


def _history(graph, thread_id: str) -> list:
    """The thread's checkpoints, oldest first."""
    return list(reversed(list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))))


def checkpoint_timeline(graph, thread_id: str, last_messages: int = 3) -> list[dict]:
    """Each checkpoint: the node that produced it, the seed's state fields at that point,
    its last messages, and what changed since the previous checkpoint."""
    rows: list[dict] = []
    previous: dict = {}
    history = _history(graph, thread_id)
    shown = _timeline_fields(graph)
    for i, snap in enumerate(history):
        values = snap.values or {}
        fields = {k: _plain(values.get(k)) for k in shown}
        producer = history[i - 1].next[0] if i and history[i - 1].next else "input"
        rows.append({
            "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
            "index": i, "node": producer, "next": list(snap.next),
            "created_at": snap.created_at, "fields": fields,
            "messages": [f"[{m.get('name') or m['type']}] {str(m['content'])[:200]}"
                         for m in _plain(list(values.get("messages") or [])[-last_messages:])],
            "diff": {k: {"before": previous.get(k), "after": v} for k, v in fields.items()
                     if previous.get(k) != v} if i else {},
        })
        previous = fields
    return rows


def fork_state(graph, thread_id: str, checkpoint_id: str, new_thread_id: str,
               changes: dict) -> None:
    """Copy the state at a checkpoint into a new thread, with ``changes`` applied, so
    that running the new thread continues from exactly there (LangGraph's
    ``update_state`` as the node that produced the checkpoint)."""
    history = _history(graph, thread_id)
    index = next((i for i, s in enumerate(history)
                  if s.config["configurable"]["checkpoint_id"] == checkpoint_id), None)
    if index is None:
        raise ValueError(f"No checkpoint {checkpoint_id!r} in run {thread_id}.")
    if index == 0 or not history[index - 1].next:
        raise ValueError("Fork from a later checkpoint: this one is the run's input; "
                         "run the question again to start over.")
    unknown = set(changes) - set(graph.builder.channels) - {"messages"}
    if unknown:
        raise ValueError(f"Unknown state field(s): {', '.join(sorted(unknown))}.")
    if not history[index].next:
        raise ValueError("This checkpoint is the end of the run: fork from an earlier one.")
    values = {**history[index].values, **changes}
    # Nodes route by Command, so the fork says where to go next: where the original went.
    graph.update_state({"configurable": {"thread_id": new_thread_id}},
                       Command(update=values, goto=list(history[index].next)),
                       as_node=history[index - 1].next[0])
