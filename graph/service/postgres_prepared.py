"""Statements of a one-message batch (``PostgresDatabase.unread``) as SQL prepared
statements: each text PREPAREd once on a connection, then sent as ``EXECUTE name(...)``.

A batch goes as one Query message (the simple protocol: values bound on the client as
literals), so PostgreSQL parsed, analysed and planned each of its statements at every
batch: the check that the run is held and the batch new (``stepwise_refuse``'s ``WITH``
of an ``UPDATE`` and its ``EXISTS``) cost more to plan than to run. An ``EXECUTE`` is
parsed (its values still literals) and runs the plan PostgreSQL keeps for the session.
A statement not yet prepared on the connection is PREPAREd in the same message, before
the ``EXECUTE``s: still one message, one round trip, one transaction for the writes.

What a connection holds is known here only as far as this process saw it, and the
server may hold otherwise:

- PostgreSQL's ``PREPARE`` is not transactional: one that ran in a message whose later
  statement failed (a batch refused by ``stepwise_refuse``, or by a full disk) stays.
  After such a failure the connection's statements are read from the server
  (``pg_prepared_statements``) before its next batch.
- psycopg sends ``DEALLOCATE ALL`` after a rollback on a connection where it prepared
  statements of its own: every statement is gone, though none was seen to go.
- A connection the pool replaced (the server closed it) is a new object, holding none.

So a batch that fails because a statement was not there (``InvalidSqlStatementName``) or
was there already (``DuplicatePreparedStatement``) has stored nothing (its statements are
one implicit transaction, and the connection had none open); the connection's statements
are then read from the server and the batch sent once more.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import weakref
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

# psycopg's placeholders in a statement's text: %s, and a literal % doubled.
_PLACEHOLDER = re.compile(r"%%|%s")
PREFIX = "stepwise_"


@lru_cache(maxsize=256)
def prepared_form(sql: str) -> tuple[str, str, str]:
    """``sql`` (psycopg's ``%s`` placeholders, ``%%`` a literal ``%``) as a prepared
    statement: its name, its ``PREPARE`` (placeholders numbered ``$1``, ``$2``..., a
    literal ``%`` still doubled: it is sent in a message psycopg formats) and the
    ``EXECUTE`` taking the same ``%s`` values."""
    count = 0

    def numbered(found: re.Match[str]) -> str:
        nonlocal count
        if found.group() == "%%":
            return "%%"
        count += 1
        return f"${count}"

    body = _PLACEHOLDER.sub(numbered, sql)
    name = PREFIX + hashlib.sha256(sql.encode()).hexdigest()[:16]
    execute = f"EXECUTE {name}" + (f"({', '.join(['%s'] * count)})" if count else "")
    return name, f"PREPARE {name} AS {body}", execute


def _values(statements: list[tuple[str, tuple]]) -> list[Any]:
    """The values of ``statements``, in the order of their placeholders in one message."""
    return [value for _, params in statements for value in params]


class PreparedStatements:
    """Which statement names each connection holds prepared, as far as known: a
    connection not seen before holds none; one whose message with ``PREPARE``s failed
    is unknown (``None``) until read from the server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: weakref.WeakKeyDictionary[Any, set[str] | None] = weakref.WeakKeyDictionary()

    def send(self, conn: Any, statements: list[tuple[str, tuple]]) -> None:
        """``statements`` (their text, their values) as one Query message: the
        ``PREPARE`` of each not yet held on ``conn``, then the ``EXECUTE`` of each, the
        values bound by psycopg's ``ClientCursor``: one implicit transaction. Sent once
        more, the connection's statements read from the server, if one was missing or
        already there. On a connection inside a transaction (a failed statement would end
        it, so nothing could be sent again) the statements go as themselves."""
        import psycopg
        from psycopg.pq import TransactionStatus

        if conn.info.transaction_status != TransactionStatus.IDLE:
            with psycopg.ClientCursor(conn) as cursor:
                cursor.execute("; ".join(sql for sql, _ in statements), _values(statements))
            return
        try:
            self._send(conn, statements)
        except (
            psycopg.errors.InvalidSqlStatementName,
            psycopg.errors.DuplicatePreparedStatement,
        ) as exc:
            log.info(
                "The store's connection held other prepared statements than known (%s): "
                "they are read from the server and the batch is sent again.",
                exc.sqlstate,
            )
            self._send(conn, statements)

    def held(self, conn: Any) -> set[str]:
        """The names ``conn`` holds prepared: known, or read from the server."""
        with self._lock:
            known = self._held.get(conn, set())
        if known is not None:
            return known
        rows = conn.execute(
            "SELECT name FROM pg_prepared_statements WHERE starts_with(name, %s)", (PREFIX,)
        ).fetchall()
        found = {row[0] for row in rows}
        with self._lock:
            self._held[conn] = found
        return found

    def _send(self, conn: Any, statements: list[tuple[str, tuple]]) -> None:
        import psycopg

        held = self.held(conn)
        forms = {sql: prepared_form(sql) for sql, _ in statements}
        missing = [form for form in forms.values() if form[0] not in held]
        sql = "; ".join(
            [prepare for _, prepare, _ in missing] + [forms[text][2] for text, _ in statements]
        )
        try:
            with psycopg.ClientCursor(conn) as cursor:
                cursor.execute(sql, _values(statements))
        except BaseException as exc:
            # Its PREPAREs may have run (they stay whatever failed after them), or a
            # statement known held was not: the server says which, before the next batch.
            if missing or isinstance(exc, psycopg.errors.InvalidSqlStatementName):
                with self._lock:
                    self._held[conn] = None
            raise
        if missing:
            with self._lock:
                self._held[conn] = held | {name for name, _, _ in missing}
