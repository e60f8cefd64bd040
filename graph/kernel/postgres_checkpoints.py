"""LangGraph's PostgreSQL checkpointer (``langgraph-checkpoint-postgres``), with the same
serializer as on a file: LangGraph's allowlist plus long texts stored once
(``BlobSerializer``), here in a ``stepwise_texts`` table of the same database.

A module of its own beside ``checkpoints.py``: the SQLite saver there is the embedded
default; this one is used when ``STEPWISE_DATABASE_URL`` points at PostgreSQL, shared by
several app processes. Both expose ``.conn.close()`` (a pool here), which the run service
calls at shutdown.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from graph.kernel.postgres_saver import BatchedPostgresSaver

from graph.kernel.checkpoints import BlobSerializer
from graph.kernel.pg_connections import check_connection

# pg_advisory_lock key of the checkpoint tables' setup ("stepckpt" in ASCII): two
# processes starting at once would otherwise both create them.
SETUP_LOCK = 0x737465706370


class PostgresTextStore:
    """Long texts by their SHA-256 in ``stepwise_texts``, the ``TextStore`` of a
    PostgreSQL checkpointer; connections come from the saver's pool (the saver holds one
    while it serializes, so the pool has room for a second)."""

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self.pool = pool
        self.lock = threading.Lock()
        self.cache: OrderedDict[str, str] = OrderedDict()

    def put(self, texts: dict[str, str]) -> None:
        """Store ``texts`` ({hash: text}), committed before any checkpoint refers to them."""
        with self.pool.connection() as conn:
            conn.cursor().executemany(
                "INSERT INTO stepwise_texts (hash, text) VALUES (%s, %s) "
                "ON CONFLICT (hash) DO NOTHING",
                list(texts.items()),
            )

    def get(self, key: str) -> str:
        with self.lock:
            if key in self.cache:
                self.cache.move_to_end(key)
                return self.cache[key]
        with self.pool.connection() as conn:
            row = conn.execute("SELECT text FROM stepwise_texts WHERE hash = %s", (key,)).fetchone()
        if row is None:
            raise ValueError(
                f"A checkpoint refers to a stored text ({key[:12]}…) that is not in the "
                "database's stepwise_texts table: it was changed outside Stepwise."
            )
        text = row["text"] if isinstance(row, dict) else row[0]
        with self.lock:
            self.cache[key] = text
            if len(self.cache) > 256:
                self.cache.popitem(last=False)
        return text


def plan_once(conn: Any) -> None:
    """``psycopg_pool`` ``configure`` of the checkpointer's connections: each statement
    (prepared by psycopg at its first use, ``prepare_threshold=0``) planned once, at its
    first execution on the connection, and its plan kept. By default PostgreSQL plans the
    first five executions of a prepared statement again with their values (custom plans)
    before it weighs keeping one: with ~15 statement texts (a multi-row INSERT per row
    count) on each of the pool's connections, that was ~25 plans a run. LangGraph's
    statements look rows up by their key's columns, which one plan serves whatever the
    values."""
    conn.execute("SET plan_cache_mode = force_generic_plan")


def open_postgres_checkpointer(
    url: str, types: Iterable[tuple[str, str]] = ()
) -> BatchedPostgresSaver:
    """A ``PostgresSaver`` on ``url`` (its tables created or migrated once, under a lock),
    long texts stored once, a task's writes inserted by one statement
    (``BatchedPostgresSaver``). A database that cannot be reached raises psycopg's own
    error (the caller words it for people)."""
    import psycopg
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from graph.kernel.postgres_saver import BatchedPostgresSaver

    psycopg.connect(url, connect_timeout=10).close()  # the server's reason, not a pool timeout
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=4,
        # What PostgresSaver needs of a connection (its documented setup).
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        configure=plan_once,
        check=check_connection,  # after a server restart, a new one, not a dead one
        # Its reconnection backs off (1, 2, 4... s): after a long outage the next try could
        # be a minute away. Given up after 5 s, the next request tries again at once.
        reconnect_timeout=5.0,
        timeout=10.0,  # a request waits this long for a connection (a statement takes ms)
        open=False,
    )
    pool.open(wait=True, timeout=10)
    try:
        serde = BlobSerializer(PostgresTextStore(pool), allowed_msgpack_modules=tuple(types))
        saver = BatchedPostgresSaver(pool, serde=serde)
        with pool.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
            try:
                saver.setup()
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS stepwise_texts "
                    "(hash TEXT PRIMARY KEY, text TEXT NOT NULL)"
                )
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
    except BaseException:
        pool.close()
        raise
    return saver
