"""PostgreSQL connections that outlive a database restart.

A server stopped and started again (``pg_ctl restart``, a failover, a container
recreated) closes every connection it had. psycopg only learns it at the next statement,
which then fails with "server closed the connection unexpectedly"; a connection kept for
the life of a process (the side-effect ledger's, the store's) then failed every later
statement with "the connection is closed". The store, the checkpointer's pool and the
ledger ask ``connection_lost`` before they use an idle connection, and open a new one in
its place: a restarted server costs the statements in flight at that moment, not the
process's later ones.
"""

from __future__ import annotations

import select
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import Connection


def connection_lost(conn: Connection[Any]) -> bool:
    """Whether a psycopg connection is known dead, or idle yet readable: an idle
    connection the server has spoken on (its farewell message, then end of file) was
    closed by the server. A poll of the socket with no wait, no round trip."""
    if conn.closed or conn.broken:
        return True
    from psycopg.pq import TransactionStatus

    if conn.info.transaction_status != TransactionStatus.IDLE:
        return False  # in use: its statement's own result says
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):  # its socket is gone
        return True
    return bool(readable)


def check_connection(conn: Connection[Any]) -> None:
    """``psycopg_pool`` ``check``: a pooled connection the server closed is replaced
    before it is handed out. Raising says so; closing it too makes the pool open a new
    one (a connection that still looks idle would be put back and handed out again)."""
    import psycopg

    if connection_lost(conn):
        conn.close()
        raise psycopg.OperationalError("the server closed this idle connection")
