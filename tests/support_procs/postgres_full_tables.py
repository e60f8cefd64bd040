"""No room left inside a database's tables either: what a full disk under PostgreSQL
really means once the tables have been written for a while.

A filled tablespace stops PostgreSQL from extending a table, but a table's pages keep the
room they had: an UPDATE puts the row's new version in its own page when it fits there
(and pruning the page's dead versions on the way makes room for it), and an INSERT goes
to any page the free-space map knows has room. So a run's end (an UPDATE of its runs row)
could still be stored on a "full" disk. ``TableFiller`` takes that room too:

1. a transaction of its own locks the rows of ``runs`` (``FOR UPDATE``), the table whose
   rows a run's batches and its end update in place: those writes wait, so none is
   half-done (its new version written, then given up, a dead version pruning would give
   back) while the tables are filled;
2. the filling transaction begins and takes a transaction id: from then on no row
   version the app leaves dead can be pruned (this transaction could still see it);
3. ``VACUUM`` (of those tables) prunes what was dead before and tells the free-space map every page's room;
4. the disk is filled (the caller's ``fill_disk``);
5. the filling transaction inserts rows into every table, large ones first, then smaller,
   down to the smallest row the table takes, each until PostgreSQL refuses it for want of
   space (each in a savepoint): rows no one else sees, that cannot be pruned while the
   transaction is open;
6. the locks of (1) are let go: the app's waiting writes find no room.

``release`` rolls the filling transaction back (its rows are then dead and pruned as the
app reads the pages). Tables with a foreign key are left as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

PADDINGS = (1800, 900, 400, 200, 100, 50, 20, 0)  # text added to a row, largest first
_BY_TYPE = {  # a value for a NOT NULL column without a default; n makes it unique
    "text": lambda n: f"filler-{n}",
    "character varying": lambda n: f"filler-{n}",
    "integer": lambda n: 1_000_000_000 + n,
    "bigint": lambda n: 1_000_000_000 + n,
    "smallint": lambda n: n % 30_000,
    "real": lambda n: float(n),
    "double precision": lambda n: float(n),
    "numeric": lambda n: n,
    "boolean": lambda n: False,
    "bytea": lambda n: b"",
    "jsonb": lambda n: "{}",
    "json": lambda n: "{}",
}


@dataclass
class _Table:
    name: str
    columns: list[tuple[str, str]]  # (name, data type) of the NOT NULL columns without default
    padded: str | None  # a text column in no index, for the padding


@dataclass
class TableFiller:
    url: str
    locked: tuple[str, ...] = ("runs",)
    rows: dict[str, int] = field(default_factory=dict)  # rows put in each table
    _filling: psycopg.Connection | None = None

    def fill(self, fill_disk: Callable[[], None]) -> None:
        locking = psycopg.connect(self.url)
        try:
            tables = _tables(locking)
            for name in self.locked:  # (1)
                locking.execute(sql.SQL("SELECT 1 FROM {} FOR UPDATE").format(sql.Identifier(name)))
            self._filling = psycopg.connect(self.url)
            self._filling.execute("SELECT txid_current()")  # (2)
            with psycopg.connect(self.url, autocommit=True) as vacuuming:  # (3)
                vacuuming.execute(  # not the catalogs: a new connection would rewrite
                    sql.SQL("VACUUM {}").format(  # its cache's init file, on the full disk
                        sql.SQL(", ").join(sql.Identifier(t.name) for t in tables)
                    )
                )
            fill_disk()  # (4)
            for table in tables:  # (5)
                self.rows[table.name] = _fill(self._filling, table)
            log.info("rows put in the tables of %s: %s", self.url, self.rows)
        finally:
            locking.rollback()  # (6)
            locking.close()

    def release(self) -> None:
        if self._filling is not None:
            self._filling.rollback()
            self._filling.close()
            self._filling = None


def _tables(conn: psycopg.Connection) -> list[_Table]:
    """The database's own tables (schema public) with no foreign key, and what a row of
    each needs."""
    names = conn.execute(
        """SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
           WHERE s.nspname = 'public' AND c.relkind = 'r'
             AND NOT EXISTS (SELECT 1 FROM pg_constraint k
                             WHERE k.conrelid = c.oid AND k.contype = 'f')
           ORDER BY c.relname"""
    ).fetchall()
    tables = []
    for (name,) in names:
        columns = conn.execute(
            """SELECT column_name, data_type, is_nullable = 'NO' AND column_default IS NULL
               FROM information_schema.columns
               WHERE table_schema = 'public' AND table_name = %s
               ORDER BY ordinal_position""",
            (name,),
        ).fetchall()
        indexed = {
            column
            for (column,) in conn.execute(
                """SELECT a.attname FROM pg_index i
                   JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                   WHERE i.indrelid = %s::regclass""",
                (name,),
            )
        }
        needed = [(column, kind) for column, kind, required in columns if required]
        unknown = [kind for _, kind in needed if kind not in _BY_TYPE]
        assert not unknown, f"no filler value for {name}'s column types {unknown}"
        texts = [c for c, kind, _ in columns if kind == "text" and c not in indexed]
        tables.append(_Table(name, needed, texts[0] if texts else None))
    return tables


def _fill(conn: psycopg.Connection, table: _Table) -> int:
    """Insert rows into ``table`` until none fits, largest first; how many went in."""
    put = 0
    for padding in PADDINGS if table.padded else (0,):
        while True:
            values = {column: _BY_TYPE[kind](put) for column, kind in table.columns}
            if table.padded and padding:
                values[table.padded] = f"{put}-" + "x" * padding
            statement = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                sql.Identifier(table.name),
                sql.SQL(", ").join(map(sql.Identifier, values)),
                sql.SQL(", ").join(sql.Placeholder() * len(values)),
            )
            if not values:
                statement = sql.SQL("INSERT INTO {} DEFAULT VALUES").format(
                    sql.Identifier(table.name)
                )
            try:
                with conn.transaction():
                    conn.execute(statement, list(values.values()))
            except psycopg.errors.DiskFull:
                break
            put += 1
    return put
