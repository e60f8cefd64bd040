"""What a LangGraph Server console shows, as plain records (assistants, threads, runs,
a thread's state, its checkpoints, where a run stopped), and reading a server's answers
into them.

A server may run graphs Stepwise never defined, so nothing here assumes Stepwise's plan
fields; a thread's state is whatever its graph keeps. A server's ids, names and statuses
are kept only when they are texts, shown bounded and without any key it echoes
(``server_text``); an answer of the wrong shape raises ``ValueError`` or ``KeyError``,
which ``ServerConsole`` says as "not like a LangGraph Server".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from graph.redaction import shown_text

# Run statuses after which a run no longer moves.
RUN_DONE = {"success", "error", "timeout", "interrupted"}


@dataclass(frozen=True)
class Assistant:
    """A graph the server serves (an assistant is a graph with its configuration)."""

    assistant_id: str
    graph_id: str
    name: str

    @property
    def label(self) -> str:
        return self.graph_id if self.name == self.graph_id else f"{self.name} ({self.graph_id})"


@dataclass(frozen=True)
class Interrupt:
    """A question a thread is stopped on: its id and the value the graph passed."""

    interrupt_id: str
    value: Any
    node: str = ""


@dataclass(frozen=True)
class ThreadSummary:
    """One thread in the list: its status and whether it waits on a person."""

    thread_id: str
    status: str  # idle | busy | interrupted | error
    created_at: str
    updated_at: str
    graph_id: str
    interrupts: int

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted" or self.interrupts > 0


@dataclass(frozen=True)
class RunSummary:
    """One run of a thread: what started it (an input or an answer) and how it ended."""

    run_id: str
    status: str
    created_at: str
    started_by: str  # "input", "resume" (an answer to an interrupt) or "command"


@dataclass(frozen=True)
class ThreadState:
    """Where a thread is now: its values, the nodes to run next and what it waits on."""

    thread_id: str
    values: Any
    next: list[str]
    interrupts: list[Interrupt]
    checkpoint_id: str
    created_at: str
    status: str = ""

    @property
    def fields(self) -> list[tuple[str, Any]]:
        """The state as named fields, when it is a mapping (a graph's state may be a list)."""
        if isinstance(self.values, dict):
            return list(self.values.items())
        return [("value", self.values)]


@dataclass(frozen=True)
class Checkpoint:
    """One saved step of a thread, with what it changed since the one before."""

    checkpoint_id: str
    step: int | None
    source: str  # "input", "loop", "update" or "fork"
    created_at: str
    ran: list[str]  # the nodes whose writes made this checkpoint
    changed: dict[str, Any] = field(default_factory=dict)  # key: new value
    removed: list[str] = field(default_factory=list)
    next: list[str] = field(default_factory=list)
    interrupts: int = 0


@dataclass(frozen=True)
class Stop:
    """Where a run left its thread: finished, stopped on an interrupt, failed, or still
    running when the wait ran out."""

    run_id: str
    run_status: str
    state: ThreadState

    @property
    def summary(self) -> str:
        if self.run_status not in RUN_DONE:
            return f"The run is still {self.run_status}; refresh to see where it stops."
        if self.run_status == "error":
            return "The run failed on the server; its thread keeps the state before the failure."
        if self.state.interrupts:
            return "The run stopped on a question; answer it below."
        if self.state.next:
            return f"The run paused before {', '.join(self.state.next)}; continue it below."
        return "The run finished."


def listed(found: Any) -> list:
    """A list the server answered, or ValueError (said as "not like a LangGraph Server")."""
    if not isinstance(found, list):
        raise ValueError("not a list")
    return found


def server_text(value: Any) -> str:
    """A server's id, name or status, kept only when it is one; a hostile or broken
    server's text shown bounded and without any key it echoes."""
    if value is None:
        return ""
    if not isinstance(value, (str, int)):
        raise ValueError("not a text")
    return shown_text(str(value), 200)


def required_text(name: str) -> Callable[[Any], str]:
    def read(found: Any) -> str:
        value = server_text(found[name])
        if not value:
            raise ValueError(f"no {name}")
        return value

    return read


def thread_summary(t: Mapping[str, Any]) -> ThreadSummary:
    interrupts = t.get("interrupts") or {}
    return ThreadSummary(
        thread_id=server_text(t["thread_id"]),
        status=server_text(t.get("status")),
        created_at=server_text(t.get("created_at")),
        updated_at=server_text(t.get("updated_at")),
        graph_id=server_text((t.get("metadata") or {}).get("graph_id")),
        interrupts=sum(len(v) for v in interrupts.values()),
    )


def run_summary(run: Mapping[str, Any]) -> RunSummary:
    kwargs = run.get("kwargs") or {}
    command = kwargs.get("command") or {}
    started_by = (
        "resume"
        if isinstance(command, dict) and "resume" in command
        else "command"
        if command
        else "input"
    )
    return RunSummary(
        run_id=server_text(run["run_id"]),
        status=server_text(run.get("status")),
        created_at=server_text(run.get("created_at")),
        started_by=started_by,
    )


def _interrupts(raw: Mapping[str, Any]) -> list[Interrupt]:
    """A state's pending interrupts, each with the node that raised it."""
    found = []
    for task in raw.get("tasks") or []:
        for item in task.get("interrupts") or []:
            found.append(Interrupt(item.get("id") or "", item.get("value"), task.get("name", "")))
    if not found:  # older servers list them only at the top
        found = [Interrupt(i.get("id") or "", i.get("value")) for i in raw.get("interrupts") or []]
    return found


def thread_state(thread_id: str, raw: Mapping[str, Any], status: str = "") -> ThreadState:
    return ThreadState(
        thread_id=thread_id,
        values=raw.get("values") if raw.get("values") is not None else {},
        next=list(raw.get("next") or []),
        interrupts=_interrupts(raw),
        checkpoint_id=(raw.get("checkpoint") or {}).get("checkpoint_id", ""),
        created_at=str(raw.get("created_at") or ""),
        status=status,
    )


def checkpoints_of(states: Sequence[Mapping[str, Any]]) -> list[Checkpoint]:
    """Checkpoints (oldest first) with what each changed: the keys whose value differs
    from the checkpoint before, and the nodes that ran in between (the tasks the one
    before had to run)."""
    out: list[Checkpoint] = []
    before: dict = {}
    pending: list[str] = []
    for raw in states:
        values = raw.get("values")
        values = values if isinstance(values, dict) else {"value": values}
        metadata = raw.get("metadata") or {}
        out.append(
            Checkpoint(
                checkpoint_id=(raw.get("checkpoint") or {}).get("checkpoint_id", ""),
                step=metadata.get("step"),
                source=metadata.get("source") or "",
                created_at=str(raw.get("created_at") or ""),
                ran=pending,
                changed={k: v for k, v in values.items() if k not in before or before[k] != v},
                removed=[k for k in before if k not in values],
                next=list(raw.get("next") or []),
                interrupts=len(_interrupts(raw)),
            )
        )
        before = values
        pending = [t.get("name", "") for t in raw.get("tasks") or []]
    return out
