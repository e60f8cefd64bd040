"""What a run leaves behind, as ``continue_run`` reports it: its events, its outcome and
the rows of its table, the events as JSON-safe records for the store, and the node
updates a killed process saved in its checkpoints but never stored (``missed_updates``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

from langchain_core.runnables import RunnableConfig

from graph.kernel.conversation import conversation_snapshot
from graph.kernel.records import plain
from graph.kernel.system import get_system


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
    # A node's update: written once under this key (its LangGraph task id, the same when a
    # resumed run replays the task's saved writes); None for events that are not replayed.
    key: str | None = None


def update_key(task_id: str) -> str:
    """The event-log key of the update of the task ``task_id`` (see ``RunEvent.key``)."""
    return f"update:{task_id}"


def is_pseudo_node(name: str) -> bool:
    """LangGraph's own entries in an update (``__interrupt__``, ``__metadata__``...): not
    nodes that ran, never stored as steps."""
    return name.startswith("__")


class Row(dict):
    """A row of a run's table as its system's snapshot gives it, its fields also read as
    attributes (``row.status``) by the callers of ``execute``."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class RunOutcome:
    thread_id: str
    status: str  # done / failed / cancelled / waiting (for a human) / paused (step mode) /
    # interrupted (its database went away)
    reason: str
    state: dict
    events: int
    duration_s: float
    nodes_run: int = 0
    rows: list[Row] = field(default_factory=list)  # the snapshot's rows at the end
    interrupts: list = field(default_factory=list)  # what waits for a human: {id, step, agent, ...}


def event_record(event: RunEvent, system: str) -> dict:
    """An event as JSON-safe data for the store and exports: a state becomes its
    system's snapshot, messages become records, anything else its text.

    Any other event's data is encoded once here, as the store writes it
    (``event_json``): its ``data_json``, which the store searches for secrets and writes
    instead of encoding the data again. Data that is JSON already (a model call with its
    request, a tool timing) is kept as it is, not copied record by record first."""
    if event.kind == "state":
        snapshot = get_system(system).snapshot(event.data)
        # a snapshot without ``counts`` is counted by its rows as the store keeps it
        data = {
            **snapshot,
            "conversation": plain(conversation_snapshot(event.data)),
        }
        text = None
    else:
        data, text = event_json(event.data)
    record = {
        "seq": event.seq,
        "ts": event.ts,
        "kind": event.kind,
        "node": event.node,
        "namespace": event.namespace,
        "step": event.step,
        "data": data,
        "key": event.key,
    }
    if text is not None:
        record["data_json"] = text
    return record


def event_json(value: Any) -> tuple[Any, str | None]:
    """``value`` as plain JSON data (``plain``: messages as records) and its JSON text as
    the store writes it (non-ASCII kept; None when it is not JSON alone, a NaN say). A
    value that encodes as it is is returned as it is: encoding fails at the first
    message, model or set in it, and only then is it made plain. Its text is the same
    either way, except a dict key True, False or None (JSON's "true"; ``plain``'s "True")."""
    try:
        return value, json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # an object in it (or NaN): made plain first
        pass
    value = plain(value)
    try:
        return value, json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # NaN, a cycle: the store walks it
        return value, None


class StateHistory(Protocol):
    """A graph's checkpoints as ``missed_updates`` reads them (a compiled graph, or a
    LangGraph Server thread's through ``ServerGraph``)."""

    def get_state_history(self, config: RunnableConfig) -> Iterator[Any]: ...  # StateSnapshot-like


def missed_updates(graph: StateHistory, thread_id: str, known_keys: set[str]) -> list[RunEvent]:
    """Top-level node updates the checkpoints hold but the event log lacks: a process
    killed after a node's writes were saved and before its update was stored. Oldest
    first, keyed as ``continue_run`` keys them (seq 0: the store puts them at the end)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    found = []
    for snapshot in reversed(list(graph.get_state_history(config))):
        for task in snapshot.tasks:
            key = update_key(task.id)
            if task.result is None or task.error or is_pseudo_node(task.name):
                continue  # not finished, failed, or not a node
            if key not in known_keys:
                known_keys.add(key)
                step = (snapshot.values or {}).get("current_step")
                found.append(
                    RunEvent(0, time.time(), "update", task.name, "", step, task.result, key)
                )
    return found
