"""Stepwise's SQLite checkpointer, storing each channel's value once per version.

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

Built on ``BaseCheckpointSaver``'s public interface (``put``, ``put_writes``, ``get_tuple``,
``list``, ``delete_thread``, ``get_next_version``) over tables of its own
(``graph.kernel.checkpoint_tables``), not as a subclass of ``SqliteSaver``: that class's
connection, lock and SQL helpers are not LangGraph's API and may change with any release.
"""

from __future__ import annotations

import json
import operator
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_checkpoint_metadata,
)

from graph.kernel.checkpoint_tables import (
    INSERT_BLOBS,
    INSERT_CHECKPOINT,
    SELECT_CHECKPOINTS,
    channel_values,
    checkpoint_config,
    create_tables,
    insert_writes,
    next_version,
    pending_writes,
    search_where,
)
from graph.write_lock import write_lock

_SCALARS = (str, int, float, bool, type(None), bytes)
_REMEMBERED = 1024  # channels whose last written version is kept for the next step


class VersionedSqliteSaver(BaseCheckpointSaver[str]):
    """A checkpointer on one SQLite connection, with per-channel-version blobs, each
    holding what changed. Thread-safe: one statement sequence at a time on ``conn``."""

    def __init__(self, conn: sqlite3.Connection, *, serde: SerializerProtocol | None = None):
        super().__init__(serde=serde)
        self.conn = conn  # the run service closes it at shutdown
        self._lock = threading.Lock()
        # Called with a thread id just before its rows are written, after they are
        # serialized: a lease check here leaves a process frozen between check and write
        # microseconds, not the whole serialization (``graph.service.leases``).
        self.before_write: Callable[[str], None] | None = None
        self._ready = False
        self._has_task_path = True
        # (thread, ns, channel) -> (version, the value's items then): the base of a delta.
        self._last: OrderedDict[tuple, tuple[str, Any]] = OrderedDict()
        # (thread, ns) -> versions known stored, for checkpoints carried over from SqliteSaver.
        self._stored: OrderedDict[tuple, set] = OrderedDict()
        self._memory = threading.Lock()
        # Run worker processes write one checkpoint file: their writers queue on its
        # write lock (woken when free) instead of polling in SQLite's busy handler.
        path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
        self._write_lock = write_lock(path) if path else None

    def _make_tables(self) -> None:
        """The file's tables, made at the first read or write (with ``_lock`` held)."""
        if not self._ready:
            self._has_task_path = create_tables(self.conn)
            self.conn.commit()
            self._ready = True

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Cursor]:
        """A cursor on ``conn`` to read with (its tables made first)."""
        with self._lock:
            self._make_tables()
            cur = self.conn.cursor()
            try:
                yield cur
            finally:
                cur.close()

    def _write(self, statements: Callable[[sqlite3.Cursor], list], lease: str | None) -> None:
        """One write transaction: the lease check of thread ``lease`` (``before_write``),
        then ``statements(cur)``, which may read, gives the (SQL, rows) to write; on a file
        its write lock is held from the first of them to the commit (the values are
        serialized by then). Rolled back on an error."""
        with self._lock:
            self._make_tables()
            cur = self.conn.cursor()
            lock = None
            try:
                if lease is not None:
                    self._before_write(lease)
                writes = statements(cur)
                if self._write_lock is not None:
                    self._write_lock.acquire()
                    lock = self._write_lock  # released below only once taken
                for sql, rows in writes:
                    cur.executemany(sql, rows)
                self.conn.commit()
            except BaseException:
                self.conn.rollback()
                raise
            finally:
                if lock is not None:
                    lock.release()
                cur.close()

    def setup(self) -> None:
        """Make the file's tables now, not at the first read or write (as LangGraph's own
        savers' ``setup``)."""
        with self._cursor():
            pass

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return next_version(current)

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

    def _remember(self, written: list[tuple[tuple, str, Any]]) -> None:
        """Each (key, version, kept) written: the base of that channel's next delta."""
        with self._memory:
            for key, version, kept in written:
                if kept is None:
                    self._last.pop(key, None)
                    continue
                self._last[key] = (version, kept)
                self._last.move_to_end(key)
            while len(self._last) > _REMEMBERED:
                self._last.popitem(last=False)

    def _encode(self, last: Any, value: Any, kept: Any) -> tuple[str, str | None, Any]:
        """(kind, base version, what to serialize) for a new version of a channel, from
        ``last`` (the version this saver wrote last for it and its ``_kept``, or None);
        ``kept``: ``_kept(value)``, each dict item's fingerprint taken once."""
        if last is not None:
            base, (shape, items) = last
            if shape == "list" and type(value) is list and len(value) >= len(items):
                if all(map(operator.is_, value, items)):  # no Python call per item
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
        rows: list[tuple[Any, ...]] = []
        written = []
        with self._memory:
            last = self._last.get
            lasts = [last((thread_id, ns, channel)) for channel in new_versions]
        for (channel, version), before in zip(new_versions.items(), lasts):
            if channel not in values:
                rows.append((thread_id, ns, channel, str(version), "empty", None, None, None))
                continue
            kept = self._kept(values[channel])
            kind, base, part = self._encode(before, values[channel], kept)
            rows.append((thread_id, ns, channel, str(version), kind, base, *self._dump(part)))
            written.append(((thread_id, ns, channel), str(version), kept))
        carried = [(c, str(versions[c])) for c in values if c not in new_versions and c in versions]
        type_, serialized = self.serde.dumps_typed(bare)
        serialized_metadata = json.dumps(
            get_checkpoint_metadata(config, metadata), ensure_ascii=False
        ).encode("utf-8", "ignore")
        row = (
            thread_id,
            ns,
            checkpoint["id"],
            config["configurable"].get("checkpoint_id"),
            type_,
            serialized,
            serialized_metadata,
        )

        def statements(cur: sqlite3.Cursor) -> list:
            for channel, version in self._missing(cur, thread_id, ns, carried):
                rows.append(
                    (thread_id, ns, channel, version, "full", None, *self._dump(values[channel]))
                )
            return [(INSERT_BLOBS, rows), (INSERT_CHECKPOINT, (row,))]

        self._write(statements, thread_id)
        self._remember(written)  # bases of the next deltas, once committed
        with self._memory:
            known = self._stored.setdefault((thread_id, ns), set())
            self._stored.move_to_end((thread_id, ns))
            known.update([(r[2], r[3]) for r in rows])
            known.update(carried)
            while len(self._stored) > _REMEMBERED:
                self._stored.popitem(last=False)
        return checkpoint_config(thread_id, ns, checkpoint["id"])

    def _before_write(self, thread_id: str) -> None:
        if self.before_write is not None:
            self.before_write(thread_id)

    def _dump(self, value: Any) -> tuple[str, bytes]:
        return self.serde.dumps_typed(value)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Serialized before the transaction: the file's write lock is held only to write."""
        configurable = config["configurable"]
        rows = [
            (
                str(configurable["thread_id"]),
                str(configurable["checkpoint_ns"]),
                str(configurable["checkpoint_id"]),
                task_id,
                task_path,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                *self._dump(value),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        sql = insert_writes(all(w[0] in WRITES_IDX_MAP for w in writes))
        self._write(lambda cur: [(sql, rows)], str(configurable["thread_id"]))

    def _missing(
        self, cur: sqlite3.Cursor, thread_id: str, ns: str, carried: list[tuple[str, str]]
    ) -> list:
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

    def _tuple(self, cur: sqlite3.Cursor, row: tuple[Any, ...], memo: dict) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, type_, blob, metadata = row
        checkpoint = self.serde.loads_typed((type_, blob))
        if "channel_values" not in checkpoint:  # this saver's: values are blobs
            checkpoint = {
                **checkpoint,
                "channel_values": channel_values(
                    cur, self.serde, (thread_id, ns), checkpoint["channel_versions"], memo
                ),
            }
        writes = pending_writes(
            cur, self.serde, (thread_id, ns, checkpoint_id), self._has_task_path
        )
        return CheckpointTuple(
            checkpoint_config(thread_id, ns, checkpoint_id),
            checkpoint,
            json.loads(metadata) if metadata is not None else {},
            checkpoint_config(thread_id, ns, parent_id) if parent_id else None,
            writes,
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        with self._cursor() as cur:
            if checkpoint_id := get_checkpoint_id(config):
                cur.execute(
                    SELECT_CHECKPOINTS
                    + " WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    (thread_id, ns, checkpoint_id),
                )
            else:
                cur.execute(
                    SELECT_CHECKPOINTS + " WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC LIMIT 1",
                    (thread_id, ns),
                )
            row = cur.fetchone()
            if row is None:
                return None
            found = self._tuple(cur, row, {})
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
        query = f"{SELECT_CHECKPOINTS} {where} ORDER BY checkpoint_id DESC"
        if limit is not None:
            query += " LIMIT ?"
            params = (*params, limit)
        with self._cursor() as cur:
            cur.execute(query, params)
            rows = cur.fetchall()
        memo: dict = {}
        for row in rows:
            with self._cursor() as cur:
                found = self._tuple(cur, row, memo)
            yield found

    def delete_thread(self, thread_id: str) -> None:
        thread_id = str(thread_id)
        self._write(
            lambda cur: [
                (f"DELETE FROM {table} WHERE thread_id = ?", [(thread_id,)])
                for table in ("checkpoints", "writes", "checkpoint_blobs")
            ],
            None,
        )
        with self._memory:
            for key in [k for k in self._last if k[0] == thread_id]:
                del self._last[key]
            for key in [k for k in self._stored if k[0] == thread_id]:
                del self._stored[key]
