"""The bundled stock-price database and the read-only SQL tool of ``data_researcher``.

The model writes the SQL; we never trust it. Each query opens its own connection,
read-only by URI and with ``PRAGMA query_only``; an authorizer refuses anything but
reading (and functions that only allocate memory), SQLite's parser lets one statement
run, values are capped in size, a progress handler stops a query over its time or step
budget or when the user presses Stop, and rows are capped so a careless ``SELECT *``
cannot flood a prompt.
"""

from __future__ import annotations

import csv
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from langchain_core.tools import StructuredTool
from pydantic import Field

from graph.errors import StepwiseError
from graph.settings import get_settings
from graph.stopping import Stopped, check_stop, stop_requested

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


class QueryRefused(StepwiseError, ValueError):
    """The SQL was not a single read-only statement, or it failed; the message says why."""


@dataclass
class QueryResult:
    sql: str
    columns: list[str]
    rows: list[list]
    truncated: bool = False
    row_cap: int = 0
    note: str = ""  # what an empty result means, when the SQL names what the data lacks

    def as_text(self, limit: int = 40) -> str:
        """The SQL and the rows as a small text table, for the model and the messages view."""
        lines = [
            f"SQL: {self.sql}",
            f"{len(self.rows)} row(s)" + (f" (capped at {self.row_cap})" if self.truncated else ""),
        ]
        if self.note:
            lines.append(self.note)
        if self.rows:
            lines.append(" | ".join(self.columns))
            lines += [" | ".join(_cell(v) for v in row) for row in self.rows[:limit]]
            if len(self.rows) > limit:
                lines.append(f"... {len(self.rows) - limit} more row(s) kept with the dataset")
        return "\n".join(lines)


def _cell(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def build_database(db_path: Path, data_dir: Path) -> Path:
    """Create the SQLite file from ``data/stocks.csv`` (idempotent: rebuilt only if missing)."""
    if db_path.exists():
        return db_path
    db_path.parent.mkdir(parents=True, exist_ok=True)
    # Its own name per process and thread: worker processes on one home build it at once.
    tmp = db_path.with_suffix(f".building-{os.getpid()}-{threading.get_ident()}")
    tmp.unlink(missing_ok=True)
    with sqlite3.connect(tmp) as conn, open(data_dir / "stocks.csv", newline="") as f:
        conn.executescript(SCHEMA_SQL)
        rows = [(r["symbol"], r["date"], float(r["price"])) for r in csv.DictReader(f)]
        conn.executemany("INSERT INTO stocks VALUES (?, ?, ?)", rows)
        conn.executemany("INSERT INTO companies VALUES (?, ?, ?)", COMPANIES)
    conn.close()
    tmp.replace(db_path)  # atomic: a killed build never leaves a half-filled database
    return db_path


@dataclass(frozen=True)
class QueryBudget:
    """What one model-written query may spend before it is stopped."""

    timeout_s: float = 5.0
    max_steps: int = 100_000_000  # SQLite virtual-machine instructions
    # one string or blob (SQLITE_LIMIT_LENGTH), and all the values of the rows kept
    max_value_bytes: int = 1_000_000


# Functions whose only use in a question about prices is to allocate memory on demand.
_REFUSED_FUNCTIONS = {"randomblob", "zeroblob"}
_PROGRESS_EVERY = 10_000  # VM instructions between two checks of the budget and of Stop


class _Guard:
    """One query's authorizer and progress handler: it notes why SQLite was stopped."""

    def __init__(self, budget: QueryBudget):
        self.budget = budget
        self.deadline = time.monotonic() + budget.timeout_s
        self.steps = 0
        self.why = ""  # "time", "steps", "stop", "function:<name>"

    def authorize(self, action: int, _arg1: str | None, arg2: str | None, *_rest: object) -> int:
        if action == sqlite3.SQLITE_FUNCTION and arg2 and arg2.lower() in _REFUSED_FUNCTIONS:
            self.why = f"function:{arg2.lower()}"
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY

    def progress(self) -> int:
        """Non-zero aborts the query (``OperationalError: interrupted``)."""
        self.steps += _PROGRESS_EVERY
        if stop_requested():
            self.why = "stop"
        elif time.monotonic() > self.deadline:
            self.why = "time"
        elif self.steps > self.budget.max_steps:
            self.why = "steps"
        return 1 if self.why else 0

    def refusal(self, error: sqlite3.Error) -> QueryRefused:
        """The error SQLite raised, as a sentence the model can act on."""
        message = str(error)
        budget = self.budget
        if self.why == "time":
            return QueryRefused(
                f"The query ran longer than {budget.timeout_s:g} s and was stopped; "
                "ask for fewer rows or avoid recursive queries."
            )
        if self.why == "steps":
            return QueryRefused(
                f"The query needed more than {budget.max_steps:,} steps of work and was "
                "stopped; filter earlier, ask for fewer rows or avoid recursive queries."
            )
        if self.why.startswith("function:"):
            return QueryRefused(
                f"The function {self.why.removeprefix('function:')}() is not allowed: it "
                "builds large values in memory and a question about stock prices does not "
                "need it."
            )
        if "too big" in message:
            return QueryRefused(
                f"A value in the query grew past {budget.max_value_bytes:,} bytes and was "
                "refused; build smaller strings."
            )
        if "not authorized" in message or "readonly" in message:
            return QueryRefused("The database is read-only: only SELECT queries may run.")
        return QueryRefused(f"SQL error: {message}")


@dataclass
class StockDatabase:
    """The stock database; each query gets its own read-only connection and budget,
    so a slow query in one run never makes another run wait."""

    path: Path
    budget: QueryBudget = field(default_factory=QueryBudget)

    def __post_init__(self) -> None:
        self._uri = f"{Path(self.path).resolve().as_uri()}?mode=ro"
        self._connect().close()  # a missing or unreadable file fails here, not mid-run

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri, uri=True)
        conn.execute("PRAGMA query_only = ON")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.budget.max_value_bytes)
        return conn

    def schema_text(self) -> str:
        """The schema as the model should see it, with the comments that explain the columns."""
        return SCHEMA_SQL.strip()

    def query(self, sql: str, max_rows: int) -> QueryResult:
        """Run one read-only statement; ``Stopped`` if the user pressed Stop meanwhile."""
        sql = sql.strip()
        if not sql.rstrip(";").strip():
            raise QueryRefused("Empty SQL.")
        check_stop("the SQL query")
        guard = _Guard(self.budget)
        conn = self._connect()
        try:
            conn.set_authorizer(guard.authorize)
            conn.set_progress_handler(guard.progress, _PROGRESS_EVERY)
            # SQLite's own parser decides what one statement is: a ';' inside a string
            # or a comment is part of it, a second statement is refused before any runs.
            cursor = conn.execute(sql)
            rows = _fetch_within(cursor, max_rows + 1, self.budget.max_value_bytes)
            columns = [d[0] for d in cursor.description or []]
        except sqlite3.ProgrammingError as exc:
            if "one statement" in str(exc):
                raise QueryRefused("Only one SQL statement may run at a time.") from None
            raise QueryRefused(f"SQL error: {exc}") from None
        except sqlite3.Error as exc:
            if guard.why == "stop":
                raise Stopped("the SQL query") from None
            raise guard.refusal(exc) from None
        finally:
            conn.close()
        truncated = len(rows) > max_rows
        shown = sql.rstrip().rstrip(";").rstrip()
        note = "" if rows else missing_symbols_note(sql)
        return QueryResult(
            shown, columns, [list(r) for r in rows[:max_rows]], truncated, max_rows, note
        )


def missing_symbols_note(sql: str) -> str:
    """An empty result because the SQL asks for a company the database does not hold
    ('TESLA'), said so: the answer must not read as if the data had nothing to say."""
    known = {symbol for symbol, _, _ in COMPANIES} | {name.upper() for _, name, _ in COMPANIES}
    quoted = {q.upper() for q in re.findall(r"'([A-Za-z][A-Za-z .&-]{0,30})'", sql)}
    missing = sorted(quoted - known)
    if not missing or "symbol" not in sql.lower():
        return ""
    held = ", ".join(symbol for symbol, _, _ in COMPANIES)
    return (
        f"The database holds no prices for {', '.join(missing)}: it has only {held} "
        "(monthly, 2000-2010)."
    )


def _fetch_within(cursor: sqlite3.Cursor, max_rows: int, max_bytes: int) -> list[tuple]:
    """Up to ``max_rows`` rows, refused once their values add up to more than ``max_bytes``
    (500 rows of 1 MB values would otherwise land in memory and in a prompt)."""
    rows, size = [], 0
    for row in cursor:
        size += sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)
        if size > max_bytes:
            raise QueryRefused(
                f"The rows of the query came to more than {max_bytes:,} bytes and were "
                "refused; ask for fewer rows or shorter values."
            )
        rows.append(row)
        if len(rows) == max_rows:
            break
    return rows


@lru_cache(maxsize=4)
def open_database(db_path: Path | None = None) -> StockDatabase:
    """The bundled database, built on first use under ``STEPWISE_HOME``."""
    settings = get_settings()
    path = db_path or (settings.home / "stocks.sqlite")
    budget = QueryBudget(
        settings.sql_timeout_s, settings.sql_max_steps, settings.sql_max_value_bytes
    )
    return StockDatabase(build_database(path.resolve(), settings.data_dir), budget)


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
