"""The side-effect ledger: each side effect's key and state, in a database so they survive
a crash, a replay and a fork: SQLite under ``STEPWISE_HOME``, or the shared PostgreSQL
database when ``STEPWISE_DATABASE_URL`` is set, so a run taken over by an app process on
another machine still finds the effects its first owner carried out.

A run can be resumed after a crash, which re-executes the node that was in progress; a
fork or a replay runs nodes again. Each side effect is keyed (run, step or message,
attempt, call number). Its intent is written *before* the effect (state ``intent`` for a
file, ``sending`` for an HTTP call, with what is about to happen in ``detail``) and its
result after (``done`` / ``sent``). A key found done returns the recorded result instead
of acting twice; a key found mid-way tells the tool a crash hit that window, so it can
finish the same effect (a file) or ask a human (a call whose outcome is unknown). Tools
reach it through ``graph.tools.effects.Ledger`` (they never import this).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from graph.kernel.pg_connections import connection_lost
from graph.settings import Settings
from graph.tools.effects import FINISHED, Effect


class _Connection(Protocol):
    """What the ledger uses of a sqlite3 or psycopg connection."""

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...

    def commit(self) -> None: ...

    def close(self) -> None: ...


class SideEffectLedger:
    """Side effects by key: intended, under way, or carried out (with their results).
    One SQL text per operation, written with ``?`` placeholders; ``_sql`` adapts it."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn: _Connection | None = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS side_effects (key TEXT PRIMARY KEY, "
            "result TEXT NOT NULL, at REAL NOT NULL)"
        )
        self._migrate()
        self.conn.commit()

    @property
    def conn(self) -> _Connection:
        assert self._conn is not None
        return self._conn

    def _sql(self, sql: str) -> str:
        return sql

    def _migrate(self) -> None:
        """Ledgers written before intents were recorded hold finished effects only: their
        rows become ``done`` with no detail."""
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(side_effects)")}
        if "state" not in columns:
            self.conn.execute(
                "ALTER TABLE side_effects ADD COLUMN state TEXT NOT NULL DEFAULT 'done'"
            )
        if "detail" not in columns:
            self.conn.execute("ALTER TABLE side_effects ADD COLUMN detail TEXT NOT NULL DEFAULT ''")

    def entry(self, key: str) -> Effect | None:
        with self._lock:
            row = self.conn.execute(
                self._sql("SELECT key, state, detail, result FROM side_effects WHERE key = ?"),
                (key,),
            ).fetchone()
        return Effect(*row) if row else None

    def recorded(self, key: str) -> str | None:
        """The result of a finished effect (None when absent or not finished)."""
        found = self.entry(key)
        return found.result if found and found.state in FINISHED else None

    def begin(self, key: str, state: str, detail: str) -> Effect:
        """Record the intent to act, before acting; an entry already there (a crash
        between intent and result, or another thread) is returned unchanged."""
        with self._lock:
            self.conn.execute(
                self._sql(
                    "INSERT INTO side_effects (key, result, at, state, detail) "
                    "VALUES (?, '', ?, ?, ?) ON CONFLICT (key) DO NOTHING"
                ),
                (key, time.time(), state, detail),
            )
            self.conn.commit()
        found = self.entry(key)
        assert found is not None  # inserted above, or there already
        return found

    def finish(self, key: str, result: str, state: str = "done") -> None:
        """Record the effect carried out, with its result."""
        with self._lock:
            self.conn.execute(
                self._sql(
                    "INSERT INTO side_effects (key, result, at, state, detail) "
                    "VALUES (?, ?, ?, ?, '') ON CONFLICT(key) DO UPDATE SET "
                    "result = excluded.result, at = excluded.at, state = excluded.state"
                ),
                (key, result, time.time(), state),
            )
            self.conn.commit()

    def forget(self, key: str) -> None:
        """Drop an intent whose effect is known not to have happened (it may be tried again)."""
        with self._lock:
            self.conn.execute(self._sql("DELETE FROM side_effects WHERE key = ?"), (key,))
            self.conn.commit()

    def record(self, key: str, result: str) -> None:
        """Record a finished effect, unless the key is already finished."""
        with self._lock:
            self.conn.execute(
                self._sql(
                    "INSERT INTO side_effects (key, result, at, state, detail) "
                    "VALUES (?, ?, ?, 'done', '') ON CONFLICT(key) DO UPDATE SET "
                    "result = excluded.result, at = excluded.at, state = 'done' "
                    "WHERE side_effects.state NOT IN ('done', 'sent')"
                ),
                (key, result, time.time()),
            )
            self.conn.commit()

    def count(self, prefix: str = "", finished_only: bool = False) -> int:
        """Entries whose key starts with ``prefix`` (only finished ones if asked)."""
        sql = "SELECT COUNT(*) FROM side_effects WHERE key LIKE ? ESCAPE '\\'"
        if finished_only:
            sql += " AND state IN ('done', 'sent')"
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self._lock:
            return self.conn.execute(self._sql(sql), (pattern,)).fetchone()[0]


class PostgresSideEffectLedger(SideEffectLedger):
    """The same ledger in a PostgreSQL database (one autocommit connection behind the
    lock, as on SQLite; the table created if missing). The connection is opened again
    when the server closed it (a restart): kept for the life of the process, it otherwise
    failed every side effect after the first restart."""

    def __init__(self, url: str):
        self._lock = threading.Lock()
        self._url = url
        self._conn = None
        with self._lock:
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS side_effects (key TEXT PRIMARY KEY, "
                "result TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, "
                "state TEXT NOT NULL DEFAULT 'done', detail TEXT NOT NULL DEFAULT '')"
            )

    @property
    def conn(self) -> _Connection:
        """A live connection: the one held, or a new one when the server closed it."""
        import psycopg

        if self._conn is None or (
            isinstance(self._conn, psycopg.Connection) and connection_lost(self._conn)
        ):
            if self._conn is not None:
                self._conn.close()
            self._conn = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
        return self._conn

    def _sql(self, sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")


@lru_cache(maxsize=8)
def _ledger(home: Path, database_url: str | None) -> SideEffectLedger:
    if database_url:
        return PostgresSideEffectLedger(database_url)
    return SideEffectLedger(Path(home) / "side_effects.sqlite")


def side_effect_ledger(settings: Settings) -> SideEffectLedger:
    """The ledger of these settings, one per process: in the shared database when
    ``STEPWISE_DATABASE_URL`` is set, else in ``STEPWISE_HOME``."""
    url = settings.database_url.get_secret_value() if settings.database_url else None
    return _ledger(Path(settings.home), url)
