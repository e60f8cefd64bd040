"""A server run's checkpoints, for ``ServerExecutor``: its thread's history and timeline,
the questions it waits on, whether it can go on, a redirect as a ``Command``, a fork as
a new thread.

The run service answers, resumes, redirects and forks a server run as it does a local one
(``run_decisions.py``, ``run_redirects.py``, ``run_forks.py``); these are the parts that
differ, their state being on the LangGraph Server. Like the executor, this knows its
service only as ``ServerSide``.
"""

from __future__ import annotations

from typing import Any, Callable

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from graph.kernel.checkpoints import CONVERSATION_FIELDS, checkpoint_row, fork_point
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.served import as_json
from graph.service.server_states import ServerSide, ServerSnapshot, snapshot_from, thread_of


def history(service: ServerSide, run_id: str, design: Design) -> list[ServerSnapshot]:
    """The thread's checkpoints on the server, oldest first."""
    schema = service.schema_of(design)
    states = service.call(service.client.threads.get_history, thread_of(run_id), limit=1000)
    return [snapshot_from(s, schema) for s in reversed(states)]


def timeline(snaps: list[ServerSnapshot], design: Design) -> list[dict]:
    """Each of a server thread's checkpoints ``snaps`` (oldest first), projected for
    teaching as a local run's top-graph timeline is."""
    fields = get_system(design.system).forks.timeline_fields
    shown = (*fields, *(f for f in CONVERSATION_FIELDS if f not in fields))
    rows: list[dict] = []
    previous: dict = {}
    for i in range(len(snaps)):
        row = checkpoint_row(snaps, i, shown, previous)
        row["index"] = i
        rows.append(row)
        previous = row["fields"]
    return rows


def questions(service: ServerSide, run_id: str) -> set[str]:
    """The ids of the interrupts the run's thread waits on."""
    return {i["id"] for i in service.server_state(run_id).get("interrupts") or []}


def ready_to_resume(service: ServerSide, run_id: str) -> None:
    """ValueError when the thread's last checkpoint has nothing left to run."""
    if not service.server_state(run_id).get("next"):
        raise ValueError("Nothing left to run: the run reached its end.")


def send_on(
    service: ServerSide, run_id: str, compiled: CompiledStateGraph, plan: Callable, note: str
) -> Command:
    """A run that has stopped on the server sent on: a new server run on its thread whose
    input is ``Command(update=..., goto=...)`` (a follow-up message, an edited request).
    Only from a checkpoint with nothing left to run (the run ended): a command applied
    where other nodes are still due would run them too, so a run waiting is refused."""
    record, _ = service.stored(run_id)
    snapshot = service.snapshot_of(run_id)
    if snapshot.next:
        raise ValueError(
            f"The run is {record.status} before {', '.join(snapshot.next)}: on a "
            "LangGraph Server a message or an edit goes to a run that has ended; "
            "answer or resume it first."
        )
    changes, target = plan(snapshot)
    if target not in set(compiled.nodes) - {"__start__"}:
        raise ValueError(f"Cannot send the run to {target!r}: the graph has no such node.")
    service.note(
        run_id,
        {"kind": "redirect", "goto": target, "note": note, "was_next": []},
        step=(snapshot.values or {}).get("current_step"),
    )
    return Command(update=changes, goto=target)


def fork_thread(
    service: ServerSide,
    history: Callable[[str], list[ServerSnapshot]],
    run_id: str,
    checkpoint_id: str,
    new_id: str,
    design: Design,
    compiled: CompiledStateGraph,
    changes: dict | None,
    first_written_as: Callable[[str, Callable[[str], list]], str | None],
) -> None:
    """The new run's own server thread, created holding the state at ``checkpoint_id``
    with ``changes``, as the node that produced it (``fork_point``, as a local fork),
    going where the original went (``update_state`` with a Command). ``history``: a
    run's checkpoints on the server, oldest first."""
    snaps = history(run_id)
    index, producer = fork_point(  # the same question a local fork asks
        snaps, checkpoint_id, run_id, lambda: first_written_as(run_id, history)
    )
    goto = None
    values = dict(snaps[index].values)
    if changes:
        unknown = set(changes) - set(compiled.builder.channels) - {"messages"}
        if unknown:
            raise ValueError(f"Unknown state field(s): {', '.join(sorted(unknown))}.")
        changes, goto = get_system(design.system).forks.fork_changes(values, changes, design)
    values = {**values, **(changes or {})}
    values.pop("messages", None)  # kept by the new thread's first checkpoint below
    update = {**values, "messages": snaps[index].values.get("messages") or []}
    # The SDK's threads.create passes only values with each superstep; the server also
    # takes a command (goto), which a fork needs: nodes route by Command here.
    body: dict[str, Any] = {
        "thread_id": thread_of(new_id),
        "graph_id": design.system,
        "metadata": {"stepwise_run": new_id, "forked_from": run_id, "graph_id": design.system},
        "supersteps": [
            {
                "updates": [
                    {
                        "command": {
                            "update": as_json(update),
                            "goto": [goto] if goto else list(snaps[index].next),
                        },
                        "as_node": producer,
                    }
                ]
            }
        ],
    }
    service.call(service.client.http.post, "/threads", json=body)
