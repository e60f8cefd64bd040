"""The bundled stock-price database and the read-only SQL tool of ``data_researcher``.

The model writes the SQL; we never trust it. The database is opened read-only by URI
and with ``PRAGMA query_only``, an authorizer refuses anything but reading, only one
statement runs, and rows are capped so a careless ``SELECT *`` cannot flood a prompt.
"""

from __future__ import annotations

import csv
import sqlite3
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from langchain_core.tools import StructuredTool
from pydantic import Field

from graph.settings import get_settings

SCHEMA_SQL = """
CREATE TABLE stocks (
    symbol TEXT NOT NULL,   -- ticker: MSFT, AMZN, IBM, GOOG, AAPL
    date   TEXT NOT NULL,   -- first day of the month, 'YYYY-MM-DD'
    price  REAL NOT NULL,   -- monthly closing price in US dollars
    PRIMARY KEY (symbol, date)
);
CREATE TABLE companies (
    symbol TEXT PRIMARY KEY,
    name   TEXT NOT NULL,
    sector TEXT NOT NULL
);
"""

COMPANIES = [
    ("MSFT", "Microsoft", "Software"),
    ("AMZN", "Amazon", "Internet retail"),
    ("IBM", "IBM", "IT services and hardware"),
    ("GOOG", "Google", "Internet search and advertising"),
    ("AAPL", "Apple", "Consumer electronics"),
]

_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
# sqlite3 exposes no constant for recursive CTEs (33) in every Python version.
_READ_ACTIONS.add(getattr(sqlite3, "SQLITE_RECURSIVE", 33))


class QueryRefused(ValueError):
    """The SQL was not a single read-only statement, or it failed; the message says why."""


@dataclass
class QueryResult:
    sql: str
    columns: list[str]
    rows: list[list]
    truncated: bool = False
    row_cap: int = 0

    def as_text(self, limit: int = 40) -> str:
        """The SQL and the rows as a small text table, for the model and the messages view."""
        lines = [
            f"SQL: {self.sql}",
            f"{len(self.rows)} row(s)" + (f" (capped at {self.row_cap})" if self.truncated else ""),
        ]
        if self.rows:
            lines.append(" | ".join(self.columns))
            lines += [" | ".join(_cell(v) for v in row) for row in self.rows[:limit]]
            if len(self.rows) > limit:
                lines.append(f"... {len(self.rows) - limit} more row(s) kept with the dataset")
        return "\n".join(lines)


def _cell(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def build_database(db_path: Path, data_dir: Path) -> Path:
    """Create the SQLite file from ``data/stocks.csv`` (idempotent: rebuilt only if missing)."""
    if db_path.exists():
        return db_path
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    with sqlite3.connect(tmp) as conn, open(data_dir / "stocks.csv", newline="") as f:
        conn.executescript(SCHEMA_SQL)
        rows = [(r["symbol"], r["date"], float(r["price"])) for r in csv.DictReader(f)]
        conn.executemany("INSERT INTO stocks VALUES (?, ?, ?)", rows)
        conn.executemany("INSERT INTO companies VALUES (?, ?, ?)", COMPANIES)
    conn.close()
    tmp.replace(db_path)  # atomic: a killed build never leaves a half-filled database
    return db_path


@dataclass
class StockDatabase:
    path: Path
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self):
        uri = f"{Path(self.path).resolve().as_uri()}?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._conn.execute("PRAGMA query_only = ON")
        self._conn.set_authorizer(_authorize)

    def schema_text(self) -> str:
        """The schema as the model should see it, with the comments that explain the columns."""
        return SCHEMA_SQL.strip()

    def query(self, sql: str, max_rows: int) -> QueryResult:
        sql = sql.strip().rstrip(";").strip()
        if not sql:
            raise QueryRefused("Empty SQL.")
        if not sqlite3.complete_statement(sql + ";") or ";" in sql:
            raise QueryRefused("Only one SQL statement may run at a time.")
        with self._lock:
            try:
                cursor = self._conn.execute(sql)
                rows = cursor.fetchmany(max_rows + 1)
            except sqlite3.DatabaseError as exc:
                message = str(exc)
                if "not authorized" in message or "readonly" in message:
                    raise QueryRefused(
                        "The database is read-only: only SELECT queries may run."
                    ) from None
                raise QueryRefused(f"SQL error: {message}") from None
            columns = [d[0] for d in cursor.description or []]
        truncated = len(rows) > max_rows
        return QueryResult(sql, columns, [list(r) for r in rows[:max_rows]], truncated, max_rows)


def _authorize(action, *_args) -> int:
    return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY


@lru_cache(maxsize=4)
def open_database(db_path: Path | None = None) -> StockDatabase:
    """The bundled database, built on first use under ``STEPWISE_HOME``."""
    settings = get_settings()
    path = db_path or (settings.home / "stocks.sqlite")
    return StockDatabase(build_database(path.resolve(), settings.data_dir))


def sql_tool(db: StockDatabase, max_rows: int) -> StructuredTool:
    """``run_sql``: its content is what the model reads; its artifact is the dataset kept."""

    def run_sql(
        sql: Annotated[
            str,
            Field(
                description="one SELECT, for example: SELECT date, price FROM stocks WHERE "
                "symbol = 'AAPL' AND date LIKE '2007%'"
            ),
        ],
    ) -> tuple[str, dict]:
        try:
            result = db.query(sql, max_rows)
        except QueryRefused as exc:
            return f"ERROR: {exc}\nSQL: {sql}", {"sql": sql, "error": str(exc)}
        artifact = {
            "sql": result.sql,
            "columns": result.columns,
            "rows": result.rows,
            "truncated": result.truncated,
        }
        return result.as_text(), artifact

    return StructuredTool.from_function(
        run_sql,
        name="run_sql",
        description="Run ONE read-only SQL SELECT on the stock database and return the rows.",
        response_format="content_and_artifact",
    )
