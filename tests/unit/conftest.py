"""Fixtures for engine tests that need their own home: settings, store, run service.

Everything (store, checkpoints, the built stock database) goes under tmp_path, offline.
The cached settings and database are cleared around each test so nothing leaks.
"""

from __future__ import annotations

import pytest

from graph.run_service import RunService
from graph.settings import Settings, get_settings
from graph.store import Store
from graph.tools.database import open_database


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    get_settings.cache_clear()
    open_database.cache_clear()
    yield Settings(home=tmp_path, provider="scripted")
    get_settings.cache_clear()
    open_database.cache_clear()


@pytest.fixture
def store(settings) -> Store:
    s = Store.open(settings)
    yield s
    s.close()


@pytest.fixture
def service(store, settings) -> RunService:
    """A run service without the background timeout watcher (tests apply timeouts)."""
    svc = RunService(store, settings, timeout_tick_s=0)
    yield svc
    svc.shutdown()
