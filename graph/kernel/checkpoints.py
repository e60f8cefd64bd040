"""LangGraph's checkpoints, as every system keeps them: the checkpointer and its
serializer, where a run goes on from, redirecting a run, the timeline of a run's
checkpoints, and forks.

The checkpointer holds each run's state, so a run can be resumed, approved, replayed or
forked; the store (``graph.service.store``) holds what happened. Checkpoints load only
LangGraph's safe types and the types the hosted systems declare (``Shape.state_types``):
a checkpoint file cannot make us build arbitrary objects.

On a file, each channel's value is stored once per version, as what changed since the
version before (``VersionedSqliteSaver``), and long texts (a model's reply, a tool's
result) once, keyed by their hash, in a table beside LangGraph's own
(``stepwise_texts``); a stored value holds a short reference instead (``BlobSerializer``).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot
from pydantic import BaseModel

from graph.kernel.records import plain
from graph.kernel.versioned_saver import VersionedSqliteSaver

log = logging.getLogger(__name__)

# The conversation keys every system's timeline shows too: which agent is hibernated where.
CONVERSATION_FIELDS = ("agent_memory", "checking_turn", "active_turn")


def checkpoint_serializer(types: Iterable[tuple[str, str]] = ()) -> JsonPlusSerializer:
    """LangGraph's serializer, allowed to load ``types`` ((module, class) pairs) besides
    its own safe ones."""
    return JsonPlusSerializer(allowed_msgpack_modules=tuple(types))


# Texts this long or longer are stored once and referenced; so is any text that happens
# to start like a reference (then no stored text is ever mistaken for one).
TEXT_MIN_CHARS = 2048
REFERENCE = "\x00stepwise-text:"
_MARK = REFERENCE[1:].encode()  # in a serialized value wherever a reference may be


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every string inside it (dicts, lists, tuples,
    sets, pydantic models such as messages); unchanged parts are the same objects, and
    nothing is modified in place."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        new = {k: _map_strings(v, change) for k, v in value.items()}
        return value if all(new[k] is value[k] for k in value) else type(value)(new)
    if isinstance(value, (list, set, frozenset)) or type(value) is tuple:
        items = [_map_strings(v, change) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return items if isinstance(value, list) else type(value)(items)
    if isinstance(value, BaseModel):
        changed = {}
        for name in type(value).model_fields:
            old = getattr(value, name, None)
            if (new := _map_strings(old, change)) is not old:
                changed[name] = new
        return value.model_copy(update=changed) if changed else value
    return value


def _may_hold_long_text(data: bytes) -> bool:
    """Whether msgpack ``data`` may hold a string of ``TEXT_MIN_CHARS`` characters or more.
    Such a string has at least as many UTF-8 bytes, so its header is a str 16 (0xda) with
    a length that large or a str 32 (0xdb); the same byte met inside other data only costs
    a walk that finds nothing."""
    at = data.find(b"\xda")
    while at != -1:
        if int.from_bytes(data[at + 1 : at + 3], "big") >= TEXT_MIN_CHARS:
            return True
        at = data.find(b"\xda", at + 1)
    return b"\xdb" in data


class Texts(Protocol):
    """What a serializer needs of a text store (this file's or PostgreSQL's)."""

    def put(self, texts: dict[str, str]) -> None: ...

    def get(self, key: str) -> str: ...


class TextStore:
    """Long texts by their SHA-256, in the checkpoint file's own table, on a connection
    of its own (LangGraph's saver holds its lock while it serializes)."""

    def __init__(self, path: Path):
        # Worker processes write to one file at once: wait for a lock as the store does.
        self.conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS stepwise_texts (hash TEXT PRIMARY KEY, text TEXT NOT NULL)"
        )
        self.conn.commit()
        self.lock = threading.Lock()
        self.cache: OrderedDict[str, str] = OrderedDict()  # recently read texts

    def put(self, texts: dict[str, str]) -> None:
        """Store ``texts`` ({hash: text}), committed before any checkpoint refers to them."""
        with self.lock:
            self.conn.executemany(
                "INSERT OR IGNORE INTO stepwise_texts (hash, text) VALUES (?, ?)", texts.items()
            )
            self.conn.commit()

    def get(self, key: str) -> str:
        with self.lock:
            if key in self.cache:
                self.cache.move_to_end(key)
                return self.cache[key]
            row = self.conn.execute(
                "SELECT text FROM stepwise_texts WHERE hash = ?", (key,)
            ).fetchone()
            if row is None:
                raise ValueError(
                    f"A checkpoint refers to a stored text ({key[:12]}…) that is not in "
                    "checkpoints.sqlite: the file was changed outside Stepwise."
                )
            self.cache[key] = row[0]
            if len(self.cache) > 256:
                self.cache.popitem(last=False)
            return row[0]


class BlobSerializer(JsonPlusSerializer):
    """LangGraph's serializer (with its allowlist), storing each long text once in a
    ``TextStore`` and a reference to it in the checkpoint."""

    def __init__(self, texts: Texts, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.texts = texts

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        try:
            plain = super().dumps_typed(obj)
        except Exception as exc:  # a text only a reference can carry (lone surrogates, say)
            log.debug("value kept by reference only: %r", exc)
            plain = None
        # A value whose serialized form holds no long string is not walked: most values
        # (a list of short messages, a plan) are long only as a whole.
        if (
            plain is not None
            and _MARK not in plain[1]
            and (
                len(plain[1]) < TEXT_MIN_CHARS
                or (plain[0] == "msgpack" and not _may_hold_long_text(plain[1]))
            )
        ):
            return plain
        new: dict[str, str] = {}

        def refer(text: str) -> str:
            if len(text) < TEXT_MIN_CHARS and not text.startswith(REFERENCE):
                return text
            key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            new[key] = text
            return REFERENCE + key

        referred = _map_strings(obj, refer)
        if not new and plain is not None:
            return plain
        if new:
            self.texts.put(new)
        return super().dumps_typed(referred)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        def restore(text: str) -> str:
            if text.startswith(REFERENCE) and len(text) == len(REFERENCE) + 64:
                return self.texts.get(text[len(REFERENCE) :])
            return text

        value = super().loads_typed(data)
        if isinstance(data[1], (bytes, bytearray)) and _MARK not in data[1]:
            return value  # no reference in it: not walked
        return _map_strings(value, restore)


def open_checkpointer(path: Path, types: Iterable[tuple[str, str]] = ()) -> VersionedSqliteSaver:
    """A SQLite checkpointer on a file (WAL: runs in parallel threads do not block each
    other), each channel's value stored once per version, as what changed
    (``VersionedSqliteSaver``), long texts stored once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    # As the store: in WAL, NORMAL keeps the file whole after a crash and does not sync
    # at each commit (a sync held the write lock other run workers queue on).
    conn.execute("PRAGMA synchronous=NORMAL")
    serde = BlobSerializer(TextStore(path), allowed_msgpack_modules=tuple(types))
    return VersionedSqliteSaver(conn, serde=serde)


def memory_checkpointer(types: Iterable[tuple[str, str]] = ()) -> InMemorySaver:
    """The in-memory checkpointer a graph gets when none is given (approvals need one)."""
    return InMemorySaver(serde=checkpoint_serializer(types))


def pending_nodes(snapshot: StateSnapshot) -> tuple[str, ...]:
    """The nodes a run goes on with from this checkpoint. ``next`` alone is not enough: a
    process killed after a node finished but before the next checkpoint was written leaves
    that node's writes saved as pending, and LangGraph lists it only in ``tasks``; running
    the thread with None applies them and goes on."""
    return tuple(dict.fromkeys([*snapshot.next, *(t.name for t in snapshot.tasks)]))


def running_node(snapshot: StateSnapshot) -> str | None:
    """The node a run goes on with, as the drawing names it: ``team:node`` when that is a
    subgraph already inside (a snapshot read with ``subgraphs=True`` holds its state),
    else the top-level node; None when nothing is next."""
    pending = pending_nodes(snapshot)
    if not pending:
        return None
    for task in snapshot.tasks:
        # a LangGraph Server run's snapshot is read from the server: its tasks carry no
        # state of their own (the Run page crashed on every server run)
        inner = getattr(task, "state", None)
        if task.name == pending[0] and isinstance(inner, StateSnapshot):
            inside = pending_nodes(inner)
            if inside:
                return f"{task.name}:{inside[0]}"
    return pending[0]


def redirect_state(
    graph: CompiledStateGraph, thread_id: str, update: dict, goto: str, metadata: dict | None = None
) -> None:
    """Send a run elsewhere: a new checkpoint with ``update`` applied whose next node is
    ``goto``, replacing whatever was next (even a node waiting for a human, or a team
    subgraph half way through). Running the thread with None then goes on from there.
    ``metadata`` is saved with that checkpoint (in the same write: the proof it was
    applied, for a redirect that a crash may leave recorded as still to do)."""
    nodes = set(graph.nodes) - {"__start__"}
    if goto not in nodes:
        raise ValueError(
            f"Cannot send the run to {goto!r}: the graph has no such node "
            f"(nodes: {', '.join(sorted(nodes))})."
        )
    graph.update_state(
        {"configurable": {"thread_id": thread_id}, "metadata": dict(metadata or {})},
        Command(update=update, goto=goto),
        as_node=goto,
    )


def history(graph: CompiledStateGraph, thread_id: str) -> list[StateSnapshot]:
    """The thread's checkpoints, oldest first."""
    return list(reversed(list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))))


def checkpoint_timeline(
    graph: CompiledStateGraph, thread_id: str, fields: Iterable[str], last_messages: int = 3
) -> list[dict]:
    """Each checkpoint: the node that produced it, the state ``fields`` at that point (the
    system's timeline fields; the conversation's are added), its last messages, and what
    changed since the previous checkpoint."""
    shown = (*fields, *(f for f in CONVERSATION_FIELDS if f not in fields))
    rows: list[dict] = []
    previous: dict = {}
    checkpoints = history(graph, thread_id)
    for i in range(len(checkpoints)):
        row = checkpoint_row(checkpoints, i, shown, previous, last_messages)
        row["index"] = i
        rows.append(row)
        previous = row["fields"]
    return rows


def checkpoint_row(
    snaps: list, i: int, shown: Iterable[str], previous: dict, last_messages: int = 3
) -> dict:
    """Checkpoint ``i`` of ``snaps`` (oldest first) as the History timeline shows it: the
    node that produced it, what runs next, the ``shown`` fields, its last messages, and
    what changed since ``previous`` (the fields of checkpoint ``i - 1``)."""
    snap = snaps[i]
    values = snap.values or {}
    kept = {k: plain(values.get(k)) for k in shown}
    return {
        "checkpoint_id": snap.config["configurable"]["checkpoint_id"],
        "input": is_run_input(snap),
        "node": snaps[i - 1].next[0] if i and snaps[i - 1].next else "input",
        "next": list(snap.next),
        "created_at": snap.created_at,
        "fields": kept,
        "messages": [
            f"[{m.get('name') or m['type']}] {str(m['content'])[:200]}"
            for m in plain(list(values.get("messages") or [])[-last_messages:])
        ],
        "diff": {
            k: {"before": previous.get(k), "after": v}
            for k, v in kept.items()
            if previous.get(k) != v
        }
        if i
        else {},
    }


def is_run_input(snapshot: Any) -> bool:
    """Whether a checkpoint is the one LangGraph writes with a run's input, before any
    node ran: going on from there is the whole run again. A fork's first checkpoint is
    not one, though it is its thread's first too: it holds the state copied from the
    parent, the point the fork went on from, and can be forked again."""
    source = (snapshot.metadata or {}).get("source")
    if source:
        return source == "input"
    return tuple(snapshot.next) == ("__start__",)  # a server's checkpoint without metadata


def fork_point(
    checkpoints: list,
    checkpoint_id: str,
    thread_id: str,
    first_as: Callable[[], str | None] = lambda: None,
) -> tuple[int, str]:
    """Where checkpoint ``checkpoint_id`` is in ``checkpoints`` (a thread's, oldest first)
    and the node a fork of it is written as: the one that produced it. A thread's first
    checkpoint (a fork's) was produced in its parent: ``first_as`` names that node (a
    team's subgraph written as itself does not run as it did). One a redirect wrote after
    a turn ended, or a first whose producer is unknown, is written as the node it goes to
    (as ``redirect_state`` wrote it). ValueError in words when it cannot be forked. Both
    runtimes (here and a LangGraph Server) ask this one question."""
    index = next(
        (
            i
            for i, s in enumerate(checkpoints)
            if s.config["configurable"]["checkpoint_id"] == checkpoint_id
        ),
        None,
    )
    if index is None:
        raise ValueError(f"No checkpoint {checkpoint_id!r} in run {thread_id} to fork from.")
    snapshot = checkpoints[index]
    if is_run_input(snapshot):
        raise ValueError(
            "Fork from a later checkpoint: this one is the run's input; "
            "run the question again to start over."
        )
    if not snapshot.next:
        raise ValueError("This checkpoint is the end of the run: fork from an earlier one.")
    if index:
        before = checkpoints[index - 1].next
        producer = before[0] if before else None
    else:
        producer = first_as()
    return index, producer or snapshot.next[0]


def fork_state(
    graph: CompiledStateGraph,
    thread_id: str,
    checkpoint_id: str,
    new_thread_id: str,
    changes: dict,
    goto: str | None = None,
    first_as: Callable[[], str | None] = lambda: None,
) -> None:
    """Copy the state at a checkpoint into a new thread, with ``changes`` applied, so
    that running the new thread continues from exactly there (LangGraph's
    ``update_state`` as the node that produced the checkpoint: ``fork_point``), or from
    ``goto`` (a change the system's router must read first: an edited subtask plan)."""
    checkpoints = history(graph, thread_id)
    index, producer = fork_point(checkpoints, checkpoint_id, thread_id, first_as)
    unknown = set(changes) - set(graph.builder.channels) - {"messages"}
    if unknown:
        raise ValueError(f"Unknown state field(s): {', '.join(sorted(unknown))}.")
    values = {**checkpoints[index].values, **changes}
    # Nodes route by Command, so the fork says where to go next: where the original went.
    graph.update_state(
        {"configurable": {"thread_id": new_thread_id}},
        Command(update=values, goto=[goto] if goto else list(checkpoints[index].next)),
        as_node=producer,
    )
