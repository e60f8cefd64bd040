"""The SQLite tables of Stepwise's checkpointer (``graph.kernel.versioned_saver``), the
SQL it reads and writes them with, and a channel's value rebuilt from its stored steps.

``checkpoints`` and ``writes`` have the columns LangGraph's ``SqliteSaver`` gives them, so
a file it wrote (its checkpoints holding their values inline) opens here as it is;
``checkpoint_blobs`` holds each channel's value once per version. Written here, on
LangGraph's public types only: the SQL helpers of ``langgraph.checkpoint.sqlite`` are not
its API and may change with any release.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import PendingWrite, get_checkpoint_id, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

TABLES = """
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint BLOB,
    metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_path TEXT NOT NULL DEFAULT '',
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
CREATE TABLE IF NOT EXISTS checkpoint_blobs (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL,
    base TEXT,
    type TEXT,
    blob BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);
"""


def create_tables(conn: sqlite3.Connection) -> bool:
    """Create the tables a file lacks; whether its ``writes`` has ``task_path`` (a file
    from before that column gets it; a read-only one is read without it)."""
    conn.executescript(TABLES)
    try:
        conn.execute("ALTER TABLE writes ADD COLUMN task_path TEXT NOT NULL DEFAULT ''")
    except sqlite3.OperationalError as exc:
        if "readonly database" in str(exc):
            return False
        if "duplicate column name" not in str(exc):
            raise
    return True


SELECT_CHECKPOINTS = (
    "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    "checkpoint, metadata FROM checkpoints"
)

# A checkpoint's new channel versions (each written once), then the checkpoint itself.
INSERT_BLOBS = (
    "INSERT OR IGNORE INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, kind, "
    "base, type, blob) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_CHECKPOINT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
    "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def insert_writes(replace: bool) -> str:
    """A task's writes: special ones (an error, an interrupt, a resume) replace an earlier
    one of the task; others are kept as first saved (a task run again after a crash
    writes the same again)."""
    return (
        f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO writes (thread_id, "
        "checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )


def next_version(current: str | int | None) -> str:
    """``SqliteSaver``'s version format (a zero-padded counter, then a random fraction),
    so versions in a file it wrote keep their order with ours."""
    if current is None:
        count = 0
    elif isinstance(current, int):
        count = current
    else:
        count = int(current.split(".")[0])
    return f"{count + 1:032}.{random.random():016}"


def checkpoint_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


_KEY = re.compile(r"^[a-zA-Z0-9_.-]+$")


def _match(value: Any) -> tuple[str, Any]:
    """The comparison of a metadata value read with ``json_extract`` against ``value``."""
    if value is None:
        return "IS ?", None
    if isinstance(value, bool):
        return "= ?", int(value)
    if isinstance(value, (str, int, float)):
        return "= ?", value
    if isinstance(value, (dict, list)):  # json_extract returns compact JSON
        return "= ?", json.dumps(value, separators=(",", ":"))
    return "= ?", str(value)


def search_where(
    config: RunnableConfig | None,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None = None,
) -> tuple[str, tuple[Any, ...]]:
    """The ``WHERE`` clause of ``list``: the thread (and namespace, checkpoint) of
    ``config``, metadata equal to ``filter``'s values, checkpoints older than ``before``.
    A filter key is spliced into a JSON path, so only plain names are taken."""
    wheres: list[str] = []
    params: list[Any] = []
    if config is not None:
        wheres.append("thread_id = ?")
        params.append(str(config["configurable"]["thread_id"]))
        if (ns := config["configurable"].get("checkpoint_ns")) is not None:
            wheres.append("checkpoint_ns = ?")
            params.append(ns)
        if checkpoint_id := get_checkpoint_id(config):
            wheres.append("checkpoint_id = ?")
            params.append(checkpoint_id)
    for key, value in (filter or {}).items():
        if not _KEY.match(key):
            raise ValueError(
                f"Invalid checkpoint metadata filter key {key!r}: only letters, digits, "
                "'_', '.' and '-' are allowed."
            )
        op, param = _match(value)
        wheres.append(f"json_extract(CAST(metadata AS TEXT), '$.{key}') {op}")
        params.append(param)
    if before is not None:
        wheres.append("checkpoint_id < ?")
        params.append(get_checkpoint_id(before))
    return ("WHERE " + " AND ".join(wheres) if wheres else "", tuple(params))


def pending_writes(
    cur: Any,
    serde: SerializerProtocol,
    key: tuple[str, str, str],
    has_task_path: bool = True,
) -> list[PendingWrite]:
    """The writes saved against checkpoint ``key`` (thread, namespace, id), in the order
    LangGraph applies a step's writes (``writes_sort_key``)."""
    task_path = "task_path" if has_task_path else "''"
    cur.execute(
        f"SELECT task_id, channel, type, value, {task_path}, idx FROM writes "
        "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
        key,
    )
    rows = sorted(cur.fetchall(), key=lambda r: writes_sort_key(r[4], r[0], r[5]))
    return [
        (task_id, channel, serde.loads_typed((type_, value)))
        for task_id, channel, type_, value, _, _ in rows
    ]


def channel_values(
    cur: sqlite3.Cursor, serde: SerializerProtocol, key: tuple[str, str], versions: dict, memo: dict
) -> dict:
    """The channel values of thread and namespace ``key`` at ``versions``, each rebuilt
    from its stored steps (``checkpoint_blobs``); ``memo`` keeps the rows and values read,
    for the other checkpoints of one call."""
    out = {}
    for channel, version in versions.items():
        value = _channel_value(cur, serde, key, channel, str(version), memo)
        if value is not _ABSENT:  # a container of its own, as a fresh read gives
            out[channel] = type(value)(value) if type(value) in (list, dict) else value
    return out


def _channel_value(
    cur: sqlite3.Cursor,
    serde: SerializerProtocol,
    key: tuple[str, str],
    channel: str,
    version: str,
    memo: dict,
) -> Any:
    """``channel``'s value at ``version``: its steps read back to a whole value, then
    applied in order (appends and merges on their base); ``_ABSENT`` for an empty one."""
    thread_id, ns = key
    values = memo.setdefault(("values", thread_id, ns, channel), {})
    if version in values:
        return values[version]
    rows = memo.get(("rows", thread_id, ns, channel))
    if rows is None:
        cur.execute(
            "SELECT version, kind, base, type, blob FROM checkpoint_blobs "
            "WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ?",
            (thread_id, ns, channel),
        )
        rows = {r[0]: r[1:] for r in cur.fetchall()}
        memo[("rows", thread_id, ns, channel)] = rows
    chain = []
    at: str | None = version
    while at is not None and at not in values:
        row = rows.get(at)
        if row is None:
            values[at] = _ABSENT
            break
        chain.append((at, row))
        at = row[1] if row[0] in ("append", "merge") else None
    for at, (kind, base, type_, blob) in reversed(chain):
        if kind == "empty":
            values[at] = _ABSENT
            continue
        part = serde.loads_typed((type_, blob))
        if kind == "full":
            values[at] = part
            continue
        before = values.get(base, _ABSENT)
        if before is _ABSENT:
            raise ValueError(
                f"Checkpoint channel {channel!r} version {at} builds on version {base}, "
                "which checkpoints.sqlite does not hold: the file was changed outside "
                "Stepwise."
            )
        values[at] = [*before, *part] if kind == "append" else {**before, **part}
    return values[version]


_ABSENT = object()
