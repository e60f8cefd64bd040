"""Statements of a one-message batch (``PostgresDatabase.unread``) as SQL prepared
statements: each text PREPAREd once on a connection, then sent as ``EXECUTE name(...)``.

A batch goes as one Query message (the simple protocol: values bound on the client as
literals), so PostgreSQL parsed, analysed and planned each of its statements at every
batch: the check that the run is held and the batch new (``stepwise_refuse``'s ``WITH``
of an ``UPDATE`` and its ``EXISTS``) cost more to plan than to run. An ``EXECUTE`` is
parsed (its values still literals) and runs the plan PostgreSQL keeps for the session.
Still one message, one round trip, one transaction.

A connection's prepared statements are known by the connection object: a connection the
pool replaced (a server restart) is a new object, prepared again. psycopg deallocates
every statement of a connection (``DEALLOCATE ALL``) after a rollback or a ``DROP``: a
batch then fails as a whole, nothing of it stored, with ``InvalidSqlStatementName``, and
is sent again once its statements are prepared again (``forget``).
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from functools import lru_cache
from typing import Any

# psycopg's placeholders in a statement's text: %s, and a literal % doubled.
_PLACEHOLDER = re.compile(r"%%|%s")


@lru_cache(maxsize=256)
def prepared_form(sql: str) -> tuple[str, str, str]:
    """``sql`` (psycopg's ``%s`` placeholders, ``%%`` a literal ``%``) as a prepared
    statement: its name, its ``PREPARE`` (placeholders numbered ``$1``, ``$2``..., sent
    with no values: a literal ``%`` as one), and the ``EXECUTE`` taking the same ``%s``
    values."""
    count = 0

    def numbered(found: re.Match[str]) -> str:
        nonlocal count
        if found.group() == "%%":
            return "%"
        count += 1
        return f"${count}"

    body = _PLACEHOLDER.sub(numbered, sql)
    name = "stepwise_" + hashlib.sha256(sql.encode()).hexdigest()[:16]
    execute = f"EXECUTE {name}" + (f"({', '.join(['%s'] * count)})" if count else "")
    return name, f"PREPARE {name} AS {body}", execute


class PreparedStatements:
    """Which statement texts each connection has prepared."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    def send(self, conn: Any, statements: list[tuple[str, tuple]]) -> None:
        """``statements`` (their text, their values) as one Query message of their
        ``EXECUTE``s, the values bound by psycopg's ``ClientCursor``: one transaction. If
        psycopg deallocated them since (nothing of the batch was stored), once more."""
        import psycopg

        values = [value for _, params in statements for value in params]
        try:
            with psycopg.ClientCursor(conn) as cursor:
                cursor.execute("; ".join(self.executes(conn, statements)), values)
        except psycopg.errors.InvalidSqlStatementName:
            with self._lock:
                self._done.pop(conn, None)
            with psycopg.ClientCursor(conn) as cursor:
                cursor.execute("; ".join(self.executes(conn, statements)), values)

    def executes(self, conn: Any, statements: list[tuple[str, tuple]]) -> list[str]:
        """The ``EXECUTE`` of each statement, those not yet prepared on ``conn`` prepared
        first (one message for all of them, in its own implicit transaction: a batch that
        fails after does not take them back)."""
        import psycopg

        with self._lock:
            done = self._done.setdefault(conn, set())
            missing = list(dict.fromkeys(sql for sql, _ in statements if sql not in done))
        if missing:
            with psycopg.ClientCursor(conn) as cursor:
                cursor.execute("; ".join(prepared_form(sql)[1] for sql in missing))
            with self._lock:
                done.update(missing)
        return [prepared_form(sql)[2] for sql, _ in statements]
