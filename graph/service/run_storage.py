"""Where runs are kept: the checkpointer of the settings (PostgreSQL or a SQLite file)
and the words that name the place (no password).
"""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver

from graph.kernel.checkpoints import open_checkpointer
from graph.kernel.postgres_checkpoints import open_postgres_checkpointer
from graph.kernel.system import systems
from graph.redaction import redact_url
from graph.service.postgres_database import unavailable
from graph.settings import Settings, get_settings


def checkpointer_for(settings: Settings | None = None) -> BaseCheckpointSaver:
    """The checkpointer of the settings, able to load every hosted system's state: in the
    PostgreSQL database of ``STEPWISE_DATABASE_URL`` when set, else in a file under
    ``STEPWISE_HOME``. ``DatabaseUnavailable`` says in one sentence why PostgreSQL cannot
    be used."""
    settings = settings or get_settings()
    types = sorted({t for system in systems().values() for t in system.shape.state_types})
    if settings.database_url is not None:
        url = settings.database_url.get_secret_value()
        import psycopg  # only a PostgreSQL store needs the driver (imported when used)
        from psycopg_pool import PoolTimeout

        try:
            return open_postgres_checkpointer(url, types)
        except (psycopg.Error, PoolTimeout) as exc:
            raise unavailable(url, exc) from None
    return open_checkpointer(settings.home / "checkpoints.sqlite", types)


def database_url(settings: Settings) -> str | None:
    """The PostgreSQL URL of the settings (None: SQLite files), for words about it."""
    return settings.database_url.get_secret_value() if settings.database_url else None


def store_location(settings: Settings) -> str:
    """Where a run's records are, for words about them (no password)."""
    url = database_url(settings)
    return redact_url(url) if url else str(settings.home)
