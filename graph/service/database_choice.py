"""Which database a store opens: the SQLite file at a path, or PostgreSQL at a
``postgresql://`` URL (``open_database``). Apart from both, so that neither imports the
other at run time (``postgres_database`` subclasses ``database``'s ``Database``)."""

from __future__ import annotations

from pathlib import Path

from graph.redaction import redact_url
from graph.service.database import Database, DatabaseUnavailable, SqliteDatabase, is_postgres_url
from graph.service.postgres_database import PostgresDatabase


def open_database(path: Path | None = None, url: str | None = None) -> Database:
    """PostgreSQL when ``url`` is a ``postgresql://`` URL, else the SQLite file ``path``."""
    if url:
        if not is_postgres_url(url):
            raise DatabaseUnavailable(
                f"STEPWISE_DATABASE_URL must start with postgresql://, not "
                f"{redact_url(url).split('://')[0]}://."
            )
        return PostgresDatabase(url)
    if path is None:
        raise ValueError("A database needs a file path or a postgresql:// URL.")
    return SqliteDatabase(path)
