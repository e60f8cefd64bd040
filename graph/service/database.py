"""One connection interface over SQLite (the embedded default) and PostgreSQL (shared).

Why one layer: the store's SQL is written once, in the common subset both databases
understand, and this module absorbs the few differences, so a store method never asks
which database it is on:

- placeholders: statements are written with ``?``; on PostgreSQL they become ``%s``;
- upserts: ``INSERT ... ON CONFLICT (...) DO UPDATE / DO NOTHING`` (both speak it);
- autoincrement ids: ``INSERT ... RETURNING id`` (both speak it; ``insert_id``);
- row order of insertion: SQLite's implicit ``rowid``; PostgreSQL tables that are ordered
  by it get a real ``rowid`` identity column (``{rowid}`` in the DDL);
- types in DDL: written as SQLite spells them; ``REAL`` (a float8 timestamp) becomes
  ``DOUBLE PRECISION`` and ``INTEGER PRIMARY KEY AUTOINCREMENT`` an identity column;
- rows: read by column name or by position (``row["id"]``, ``row[0]``, ``dict(row)``);
- transactions: ``with db.transaction() as tx: tx.execute(...)`` commits once at the end,
  or rolls everything back.

A ``SqliteDatabase`` has one connection behind one lock (the store is used from page
threads and run workers at once): statements of one process never interleave inside a
transaction. A ``PostgresDatabase`` hands each thread a connection of a pool, kept by the
thread for the length of its transaction; PostgreSQL's row locks order the statements of
several connections and processes.
Schema migrations (``migrate``) run in one transaction under a lock, so two processes
starting at once on one database never both migrate: SQLite's ``BEGIN IMMEDIATE``, and on
PostgreSQL a transaction-scoped advisory lock.

The PostgreSQL side (its connection, its errors in one sentence with the password taken
out) is ``graph.service.postgres_database``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import urlsplit

from graph.errors import StepwiseError
from graph.service.disk_space import said_when_full
from graph.write_lock import write_lock

POSTGRES_SCHEMES = ("postgresql", "postgres")


class DatabaseUnavailable(StepwiseError, RuntimeError):
    """The configured database cannot be reached or used; the message is one sentence for
    a person, with no password in it."""


class DatabaseTooNew(StepwiseError, RuntimeError):
    """The database was migrated by a newer Stepwise than this one."""


# The SQLSTATE of PostgreSQL's ``stepwise_refuse`` (schema version 12).
REFUSED_STATE = "SW001"


class Refused(StepwiseError, RuntimeError):
    """A statement gave up its transaction (PostgreSQL's ``stepwise_refuse``): what the
    statements sent with it assumed did not hold, and nothing of the transaction was
    stored. The caller asks again the slower way."""


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and urlsplit(url).scheme in POSTGRES_SCHEMES


@dataclass
class Result:
    """What a write did: the rows it changed."""

    rowcount: int


class Transaction:
    """Statements inside one transaction of a ``Database`` (see ``Database.transaction``)."""

    def __init__(self, db: Database, conn: Any, before_write: Callable[[], None] | None = None):
        self.db = db
        self._conn = conn
        self._before_write = before_write  # called before the first statement that writes

    def _writes(self, sql: str) -> None:
        if self._before_write is not None and sql.lstrip()[:6].upper() != "SELECT":
            self._before_write()
            self._before_write = None

    def execute(self, sql: str, params: Iterable = ()) -> Any:  # a sqlite3 or psycopg cursor
        """Run one statement; returns a cursor (``fetchone``, ``fetchall``, ``rowcount``)."""
        params = self.db.params(params)
        self._writes(sql)
        return self._conn.execute(self.db.sql(sql), params)

    def executemany(self, sql: str, rows: Iterable[Iterable]) -> None:
        rows = [self.db.params(r) for r in rows]
        if rows:
            self._writes(sql)
            self._conn.cursor().executemany(self.db.sql(sql), rows)

    def insert_id(self, sql: str, params: Iterable = ()) -> int:
        """Run an INSERT into a table with an autoincrement ``id``; the new row's id."""
        return int(self.execute(sql + " RETURNING id", params).fetchone()[0])

    def script(self, ddl: str) -> None:
        """Run DDL statements (``;``-separated, written as SQLite spells types)."""
        for statement in self.db.ddl(ddl).split(";"):
            if statement.strip():
                self._writes(statement)
                self._conn.execute(statement)

    def columns(self, table: str) -> set[str]:
        return self.db._columns(self._conn, table)

    def add_column(self, table: str, name: str, kind: str) -> None:
        """Add a column unless the table already has it (a file older or newer in parts)."""
        if name not in self.columns(table):
            self._writes("ALTER")
            self._conn.execute(self.db.ddl(f"ALTER TABLE {table} ADD COLUMN {name} {kind}"))


@dataclass(frozen=True)
class Migration:
    """One numbered step of the schema; ``apply`` must be safe on a database that already
    has some of its tables or columns (files made before migrations were numbered)."""

    version: int
    why: str
    apply: Callable[[Transaction], None]


class Database:
    """One database; one connection and one lock unless a subclass says otherwise. Use
    ``database_choice.open_database`` to get one."""

    dialect = ""
    location = ""  # for people: a file path, or a URL without its password

    def __init__(self) -> None:
        self._lock = threading.RLock()

    # -- dialect hooks
    def sql(self, sql: str) -> str:
        return sql

    def params(self, params: Iterable) -> tuple:
        return tuple(params)

    def clock(self) -> float:
        """Seconds since the epoch by the database's clock: the one clock every process
        sharing it agrees on (leases are compared against it)."""
        return time.time()

    def ddl(self, ddl: str) -> str:
        return ddl

    def _connection(self) -> Any:
        raise NotImplementedError

    def _columns(self, conn: Any, table: str) -> set[str]:
        raise NotImplementedError

    @contextmanager
    def _begin(self, conn: Any, exclusive: bool, pipelined: bool) -> Iterator[None]:
        raise NotImplementedError

    # -- the interface
    def query(self, sql: str, params: Iterable = ()) -> list:
        """Rows of one read, each readable by column name or position."""
        with self._lock:
            return self._connection().execute(self.sql(sql), self.params(params)).fetchall()

    def execute(self, sql: str, params: Iterable = ()) -> Result:
        """One write in its own transaction."""
        with self.transaction() as tx:
            return Result(tx.execute(sql, params).rowcount)

    def insert_id(self, sql: str, params: Iterable = ()) -> int:
        with self.transaction() as tx:
            return tx.insert_id(sql, params)

    @contextmanager
    def transaction(
        self, exclusive: bool = False, pipelined: bool = False
    ) -> Iterator[Transaction]:
        """Everything inside commits together or not at all. ``exclusive``: no other
        process migrates or writes meanwhile (used by ``migrate``). ``pipelined``: on
        PostgreSQL, statements are sent without waiting for their results, which come
        when a cursor is read (``fetchone``, ``fetchall``: never ``rowcount``) or at the
        commit: statements asked together cost one round trip. A statement's error may
        then be raised later, at the commit at the latest."""
        with self._lock, said_when_full(self.location):
            conn = self._connection()
            with self._begin(conn, exclusive, pipelined):
                yield Transaction(self, conn)

    @contextmanager
    def unread(self) -> Iterator[Transaction]:
        """A transaction of writes whose results nobody reads (``execute`` returns
        nothing to read): on PostgreSQL they go as one message at the end, one round
        trip and one wait (``PostgresDatabase.unread``); here, ``transaction``."""
        with self.transaction(pipelined=True) as tx:
            yield tx

    def migrate(self, migrations: list[Migration]) -> int:
        """Bring the schema to the last of ``migrations`` (numbered from 1, in order) and
        record it in ``schema_version``; returns the version reached."""
        latest = migrations[-1].version if migrations else 0
        with self.transaction(exclusive=True) as tx:
            tx.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            current = tx.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
            if current > latest:
                raise DatabaseTooNew(
                    f"The database at {self.location} has schema version {current}, newer than "
                    f"this Stepwise knows ({latest}): upgrade Stepwise to open it."
                )
            for migration in migrations:
                if migration.version > current:
                    migration.apply(tx)
            if current != latest:
                tx.execute("DELETE FROM schema_version")
                tx.execute("INSERT INTO schema_version (version) VALUES (?)", (latest,))
        self._after_migration(latest)
        return latest

    def _after_migration(self, version: int) -> None:
        pass

    def close(self) -> None:
        raise NotImplementedError


class SqliteDatabase(Database):
    """A SQLite file in WAL mode (readers in other processes are not blocked by a writer)."""

    dialect = "sqlite"

    def __init__(self, path: Path):
        super().__init__()
        self.path = Path(path)
        self.location = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._conn.row_factory = sqlite3.Row
        self._write_lock = write_lock(self.path)  # looked up once: it resolves the path
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA busy_timeout=30000")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable enough, much faster

    def _connection(self) -> sqlite3.Connection:
        return self._conn

    def _columns(self, conn: Any, table: str) -> set[str]:
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}

    def ddl(self, ddl: str) -> str:
        return ddl.replace("{rowid}", "")

    @contextmanager
    def transaction(
        self, exclusive: bool = False, pipelined: bool = False
    ) -> Iterator[Transaction]:
        """As ``Database.transaction`` (``pipelined`` changes nothing on a file: each
        statement runs as it is given); writers of other processes (run workers) queue
        on the file's write lock, woken when it is free instead of polling in SQLite's
        busy handler. It is taken at the first write (reads and the values' serializing
        come first) and held until the commit."""
        lock = self._write_lock
        with self._lock, said_when_full(self.location), ExitStack() as turn:
            conn = self._conn
            if exclusive:  # the write lock now, not at the first write: one migrator at a time
                turn.enter_context(lock.held())
                conn.execute("BEGIN IMMEDIATE")
            with conn:
                yield Transaction(self, conn, lambda: turn.enter_context(lock.held()))

    def _after_migration(self, version: int) -> None:
        with self._lock:  # written only when it changes: opening a full disk's store works
            if self._conn.execute("PRAGMA user_version").fetchone()[0] != int(version):
                self._conn.execute(f"PRAGMA user_version={int(version)}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
