"""LangGraph's SQLite checkpointer, storing each channel's value once per version.

LangGraph's ``SqliteSaver`` writes the whole ``channel_values`` into every checkpoint, so
a run's messages, results and plans were copied into each of its checkpoints: bytes grew
with the square of the run's length. Its Postgres and in-memory savers keep one blob
per channel version and write only the versions a checkpoint made new; this saver does
the same on SQLite (``checkpoint_blobs``, keyed by thread, namespace, channel, version).

A channel that grows (LangGraph's reducers return a new list or dict holding the old
items) is stored as what changed since the version this saver wrote last for it: the
items appended to a list, the keys of a dict that are new or changed. Reading a version
follows those steps back to a whole value. Items already stored are assumed not changed
in place (a message is replaced by id, which makes a new list: stored whole).

Checkpoints written by ``SqliteSaver`` (their values inline) are read as they are; a run
going on from one stores its carried-over values as blobs at its next checkpoint.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.utils import (
    load_pending_writes,
    pending_writes_sql,
    search_where,
)

from graph.write_lock import WriteLock, write_lock

_BLOBS = """
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
_SCALARS = (str, int, float, bool, type(None), bytes)
_REMEMBERED = 1024  # channels whose last written version is kept for the next step


class VersionedSqliteSaver(SqliteSaver):
    """``SqliteSaver`` with per-channel-version blobs, each holding what changed."""

    def __init__(self, conn, *, serde=None) -> None:
        super().__init__(conn, serde=serde)
        # (thread, ns, channel) -> (version, the value's items then): the base of a delta.
        self._last: OrderedDict[tuple, tuple[str, Any]] = OrderedDict()
        # (thread, ns) -> versions known stored, for checkpoints carried over from SqliteSaver.
        self._stored: OrderedDict[tuple, set] = OrderedDict()
        self._memory = threading.Lock()
        # Run worker processes write one checkpoint file: their writers queue on its
        # write lock (woken when free) instead of polling in SQLite's busy handler.
        path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
        self._write_lock = write_lock(path) if path else None

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        """``SqliteSaver``'s cursor; one that writes takes the file's write lock at its
        first write (the values are serialized by then) and keeps it until its commit."""
        if not transaction or self._write_lock is None:
            with super().cursor(transaction) as cur:
                yield cur
            return
        with self.lock, ExitStack() as turn:
            self.setup()
            cur = self.conn.cursor()
            try:
                yield _WritingCursor(cur, self._write_lock, turn)
            finally:
                self.conn.commit()
                cur.close()

    def setup(self) -> None:
        if self.is_setup:
            return
        super().setup()
        self.conn.executescript(_BLOBS)

    # ------------------------------------------------------------------ writing

    def _fingerprint(self, value: Any) -> Any:
        """What tells a dict's item changed: a scalar with its type (1 is not True), else
        its serialized form (a nested dict may have been changed in place)."""
        if isinstance(value, _SCALARS):
            return type(value), value
        return self.serde.dumps_typed(value)[1]

    def _kept(self, value: Any) -> Any:
        """What the next version of a channel is compared with: taken as the value is
        serialized (a node running meanwhile may change a nested item in place)."""
        if type(value) is list:
            return ("list", list(value))
        if type(value) is dict:
            return ("dict", {k: self._fingerprint(v) for k, v in value.items()})
        return None

    def _remember(self, key: tuple, version: str, kept: Any) -> None:
        with self._memory:
            if kept is None:
                self._last.pop(key, None)
                return
            self._last[key] = (version, kept)
            self._last.move_to_end(key)
            while len(self._last) > _REMEMBERED:
                self._last.popitem(last=False)

    def _encode(self, key: tuple, value: Any, kept: Any) -> tuple[str, str | None, Any]:
        """(kind, base version, what to serialize) for a new version of a channel;
        ``kept``: ``_kept(value)``, each dict item's fingerprint taken once."""
        with self._memory:
            last = self._last.get(key)
        if last is not None:
            base, (shape, items) = last
            if shape == "list" and type(value) is list and len(value) >= len(items):
                if all(a is b for a, b in zip(value, items)):
                    return "append", base, value[len(items) :]
            elif shape == "dict" and type(value) is dict and items.keys() <= value.keys():
                now = kept[1]
                changed = {k: v for k, v in value.items() if k not in items or now[k] != items[k]}
                return "merge", base, changed
        return "full", None, value

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"]["checkpoint_ns"]
        values = checkpoint["channel_values"]
        versions = checkpoint["channel_versions"]
        bare = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        rows, written = [], []
        for channel, version in new_versions.items():
            key = (thread_id, ns, channel)
            if channel not in values:
                rows.append((thread_id, ns, channel, str(version), "empty", None, None, None))
                continue
            kept = self._kept(values[channel])
            kind, base, part = self._encode(key, values[channel], kept)
            rows.append((thread_id, ns, channel, str(version), kind, base, *self._dump(part)))
            written.append((key, str(version), kept))
        carried = [(c, str(versions[c])) for c in values if c not in new_versions and c in versions]
        type_, serialized = self.serde.dumps_typed(bare)
        serialized_metadata = json.dumps(
            get_checkpoint_metadata(config, metadata), ensure_ascii=False
        ).encode("utf-8", "ignore")
        with self.cursor() as cur:
            for channel, version in self._missing(cur, thread_id, ns, carried):
                rows.append(
                    (thread_id, ns, channel, version, "full", None, *self._dump(values[channel]))
                )
            cur.executemany(
                "INSERT OR IGNORE INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, "
                "version, kind, base, type, blob) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            cur.execute(
                "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    thread_id,
                    ns,
                    checkpoint["id"],
                    config["configurable"].get("checkpoint_id"),
                    type_,
                    serialized,
                    serialized_metadata,
                ),
            )
        for key, version, kept in written:  # bases of the next deltas, once committed
            self._remember(key, version, kept)
        with self._memory:
            known = self._stored.setdefault((thread_id, ns), set())
            self._stored.move_to_end((thread_id, ns))
            known.update((r[2], r[3]) for r in rows)
            known.update(carried)
            while len(self._stored) > _REMEMBERED:
                self._stored.popitem(last=False)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def _dump(self, value: Any) -> tuple[str, bytes]:
        return self.serde.dumps_typed(value)

    def _missing(self, cur, thread_id: str, ns: str, carried: list[tuple[str, str]]) -> list:
        """The carried-over (channel, version) pairs with no blob yet: values a
        ``SqliteSaver`` checkpoint held inline, now referred to by version only."""
        with self._memory:
            known = self._stored.get((thread_id, ns), ())
            unknown = [pair for pair in carried if pair not in known]
        missing = []
        for channel, version in unknown:
            cur.execute(
                "SELECT 1 FROM checkpoint_blobs WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND channel = ? AND version = ?",
                (thread_id, ns, channel, version),
            )
            if cur.fetchone() is None:
                missing.append((channel, version))
        return missing

    # ------------------------------------------------------------------ reading

    def _values(self, cur, thread_id: str, ns: str, versions: dict, memo: dict) -> dict:
        """The channel values at ``versions``, each rebuilt from its stored steps;
        ``memo`` keeps the rows and values read, for the other checkpoints of one call."""
        out = {}
        for channel, version in versions.items():
            value = self._value(cur, thread_id, ns, channel, str(version), memo)
            if value is not _ABSENT:  # a container of its own, as a fresh read gives
                out[channel] = type(value)(value) if type(value) in (list, dict) else value
        return out

    def _value(self, cur, thread_id: str, ns: str, channel: str, version: str, memo: dict):
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
            part = self.serde.loads_typed((type_, blob))
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

    def _tuple(self, cur, wcur, row, memo: dict) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, type_, blob, metadata = row
        checkpoint = self.serde.loads_typed((type_, blob))
        if "channel_values" not in checkpoint:  # this saver's: values are blobs
            checkpoint = {
                **checkpoint,
                "channel_values": self._values(
                    cur, thread_id, ns, checkpoint["channel_versions"], memo
                ),
            }
        wcur.execute(pending_writes_sql(self._has_task_path), (thread_id, ns, checkpoint_id))
        return CheckpointTuple(
            {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint_id,
                }
            },
            checkpoint,
            json.loads(metadata) if metadata is not None else {},
            (
                {
                    "configurable": {
                        "thread_id": thread_id,
                        "checkpoint_ns": ns,
                        "checkpoint_id": parent_id,
                    }
                }
                if parent_id
                else None
            ),
            load_pending_writes(wcur, self.serde),
        )

    _COLUMNS = (
        "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
        "checkpoint, metadata FROM checkpoints"
    )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        with self.cursor(transaction=False) as cur:
            if checkpoint_id := get_checkpoint_id(config):
                cur.execute(
                    self._COLUMNS
                    + " WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    (thread_id, ns, checkpoint_id),
                )
            else:
                cur.execute(
                    self._COLUMNS + " WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, ns),
                )
            row = cur.fetchone()
            if row is None:
                return None
            found = self._tuple(cur, self.conn.cursor(), row, {})
        if checkpoint_id:  # LangGraph's savers hand back the config they were asked with
            return found._replace(config=config)
        return found

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        where, params = search_where(config, filter, before)
        query = f"{self._COLUMNS} {where} ORDER BY checkpoint_id DESC"
        if limit is not None:
            query += " LIMIT ?"
            params = (*params, limit)
        with self.cursor(transaction=False) as cur:
            cur.execute(query, params)
            rows = cur.fetchall()
        memo: dict = {}
        for row in rows:
            with self.cursor(transaction=False) as cur:
                found = self._tuple(cur, self.conn.cursor(), row, memo)
            yield found

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        with self.cursor() as cur:
            cur.execute("DELETE FROM checkpoint_blobs WHERE thread_id = ?", (str(thread_id),))
        with self._memory:
            for key in [k for k in self._last if k[0] == str(thread_id)]:
                del self._last[key]
            for key in [k for k in self._stored if k[0] == str(thread_id)]:
                del self._stored[key]

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """LangGraph's own walk over ``get_tuple`` (``SqliteSaver``'s reads values inline)."""
        return BaseCheckpointSaver.get_delta_channel_history(self, config=config, channels=channels)


_ABSENT = object()


class _WritingCursor:
    """A cursor whose first write takes the file's write lock, held (by ``turn``) until
    the transaction's commit."""

    def __init__(self, cur: sqlite3.Cursor, lock: WriteLock, turn: ExitStack):
        self._cur, self._lock, self._turn, self._holding = cur, lock, turn, False

    def _before(self, sql: str) -> None:
        if not self._holding and not sql.lstrip()[:6].upper() == "SELECT":
            self._turn.enter_context(self._lock.held())
            self._holding = True

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        self._before(sql)
        return self._cur.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        self._before(sql)
        return self._cur.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)
