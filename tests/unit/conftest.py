"""Fixtures for engine tests that need their own home: settings, store, run service.

Everything (store, checkpoints, the built stock database) goes under tmp_path, offline.
The cached settings and database are cleared around each test so nothing leaks.
"""

from __future__ import annotations

import time

import pytest

from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings, get_settings
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


def wait_status(service: RunService, run_id: str, status: str, timeout: float = 30):
    """Poll the store until the run has ``status``; fail saying where it is instead."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        record = service.store.run(run_id)
        if record.status == status:
            return record
        time.sleep(0.02)
    raise AssertionError(f"run is {service.store.run(run_id).status}, not {status}")


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    """Poll ``predicate`` until it returns something true; return that, or fail naming
    ``what`` was awaited."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if value := predicate():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")
