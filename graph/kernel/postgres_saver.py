"""LangGraph's ``PostgresSaver`` with a task's writes inserted by one statement.

``PostgresSaver.put_writes`` runs its one-row INSERT once per write (``executemany``, in
one round trip and one commit): a step of an offline run wrote ~5 rows a task, each a
statement the server parses, plans and executes and the client binds. Here they are one
multi-row INSERT of LangGraph's own statement (its ``VALUES`` row repeated), still one
round trip and one commit. Anything this cannot do as LangGraph does (a statement text of
another shape in a later release, one row, a special channel written twice) goes to
``PostgresSaver.put_writes`` unchanged. Only public names of LangGraph are used: the
saver's SQL constants, its ``serde``, ``lock`` and ``conn`` (the pool it was given).

A module of its own, imported when a PostgreSQL checkpointer is opened
(``postgres_checkpoints``): LangGraph's Postgres package and psycopg load only then.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.postgres import PostgresSaver
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


class BatchedPostgresSaver(PostgresSaver):
    """``PostgresSaver`` on a connection pool, a task's writes inserted by one statement."""

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
            or len(writes) < 2
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
        with self.lock, self.conn.connection() as conn, conn.cursor(binary=True) as cur:
            cur.execute(sql, values)
