"""LangGraph's ``PostgresSaver`` with a task's writes inserted by one statement, and a
checkpoint with its channels' blobs by one statement.

``PostgresSaver.put_writes`` runs its one-row INSERT once per write (``executemany``, in
one round trip and one commit): a step of an offline run wrote ~5 rows a task, each a
statement the server parses, plans and executes and the client binds. Here they are one
multi-row INSERT of LangGraph's own statement (its ``VALUES`` row repeated), still one
round trip and one commit. Anything this cannot do as LangGraph does (a statement text of
another shape in a later release, no row, a special channel written twice) goes to
``PostgresSaver.put_writes`` unchanged.

``PostgresSaver.put`` binds its blob INSERT once per changed channel (~3 a checkpoint of
an offline run) and then the checkpoint's, pipelined: each a statement the server binds,
starts and ends, and the client sends and reads. Here the blobs are one multi-row INSERT
run as a data-modifying ``WITH`` of LangGraph's checkpoint INSERT: one statement, one
round trip, one commit, the same rows. A value it does not know how LangGraph stores
(LangGraph's own types, a delta snapshot) sends the checkpoint to ``PostgresSaver.put``.

Neither takes the saver's ``lock``: ``PostgresSaver`` holds it around every statement,
pool or not (it guards a single connection shared by threads), so a run's checkpoint puts
and its tasks' writes, which LangGraph sends from several threads, took turns for one
lock while the pool had connections free. On a pool each call has a connection of its
own, and the server orders what they write (different rows: a task's writes, another
checkpoint's blobs; LangGraph chains a thread's puts itself). Its reads keep the lock.

Only public names of LangGraph are used: the saver's SQL constants, its ``serde`` and
``conn`` (the pool it was given), ``get_serializable_checkpoint_metadata``.

A module of its own, imported when a PostgreSQL checkpointer is opened
(``postgres_checkpoints``): LangGraph's Postgres package and psycopg load only then.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

# The one row of values of LangGraph's INSERT statements: (%s, %s, ...).
_ROW = re.compile(r"\bVALUES\s*(\(\s*%s(?:\s*,\s*%s)*\s*\))(?!\s*,)", re.IGNORECASE)


@lru_cache(maxsize=64)
def many_rows(sql: str, rows: int) -> str | None:
    """``sql``, an INSERT of one row of ``%s`` values, inserting ``rows`` rows; None when
    its text has not exactly one such row."""
    found = list(_ROW.finditer(sql))
    if len(found) != 1:
        return None
    row = found[0]
    return sql[: row.start(1)] + ", ".join([row.group(1)] * rows) + sql[row.end(1) :]


@lru_cache(maxsize=64)
def checkpoint_with_blobs(blobs_sql: str, checkpoint_sql: str, rows: int) -> str | None:
    """One statement inserting ``rows`` blobs (``blobs_sql``, LangGraph's one-row blob
    INSERT) as a ``WITH`` of ``checkpoint_sql`` (its checkpoint INSERT); None when either
    text is not of the shape this knows."""
    blobs = many_rows(blobs_sql, rows)
    checkpoint = checkpoint_sql.strip().rstrip(";")
    if blobs is None or not checkpoint.upper().startswith("INSERT") or ";" in checkpoint:
        return None
    return f"WITH blobs AS ({blobs.strip()}) {checkpoint}"


def _inline(value: Any) -> bool:
    """Whether LangGraph's ``put`` keeps a channel's value in the checkpoint row."""
    return value is None or isinstance(value, (str, int, float, bool))


def _langgraph_own(value: Any) -> bool:
    """A value of one of LangGraph's checkpoint types (a delta snapshot, ...), which its
    ``put`` may store in a way of its own."""
    return type(value).__module__.startswith("langgraph.checkpoint")


class BatchedPostgresSaver(PostgresSaver):
    """``PostgresSaver`` on a connection pool: a task's writes inserted by one statement,
    a checkpoint and its blobs by one statement."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """As ``PostgresSaver.put``: the same rows, the blobs and the checkpoint in one
        statement (one round trip, one commit)."""
        values = checkpoint["channel_values"]
        blobs = {k: v for k, v in values.items() if not _inline(v)}
        versions = {k: v for k, v in new_versions.items() if k in blobs}
        sql = (
            checkpoint_with_blobs(
                self.UPSERT_CHECKPOINT_BLOBS_SQL, self.UPSERT_CHECKPOINTS_SQL, len(versions)
            )
            if versions
            else None
        )
        if (
            sql is None
            or any(_langgraph_own(v) for v in values.values())
            or not isinstance(self.conn, ConnectionPool)
        ):
            return super().put(config, checkpoint, metadata, new_versions)
        configurable = config["configurable"]
        thread_id, checkpoint_ns = configurable["thread_id"], configurable["checkpoint_ns"]
        row: dict[str, Any] = {
            **checkpoint,
            "channel_values": {k: v for k, v in values.items() if k not in blobs},
        }
        params: list[Any] = []
        for channel, version in versions.items():
            params.extend(
                (
                    thread_id,
                    checkpoint_ns,
                    channel,
                    str(version),
                    *self.serde.dumps_typed(blobs[channel]),
                )
            )
        params.extend(
            (
                thread_id,
                checkpoint_ns,
                checkpoint["id"],
                configurable.get("checkpoint_id"),
                Jsonb(row),
                Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
            )
        )
        with self.conn.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(sql, params)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """As ``PostgresSaver.put_writes``: the rows it would insert one by one, as one
        statement (one round trip, one commit)."""
        upsert = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        indexes = [WRITES_IDX_MAP.get(channel, idx) for idx, (channel, _) in enumerate(writes)]
        sql = many_rows(
            self.UPSERT_CHECKPOINT_WRITES_SQL if upsert else self.INSERT_CHECKPOINT_WRITES_SQL,
            len(writes),
        )
        if (
            sql is None
            or not writes
            or len(set(indexes)) != len(indexes)  # one statement cannot upsert a row twice
            or not isinstance(self.conn, ConnectionPool)
        ):
            super().put_writes(config, writes, task_id, task_path)
            return
        configurable = config["configurable"]
        head = (
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
        )
        values: list[Any] = []
        for idx, (channel, value) in zip(indexes, writes):
            values.extend((*head, idx, channel, *self.serde.dumps_typed(value)))
        with self.conn.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(sql, values)
