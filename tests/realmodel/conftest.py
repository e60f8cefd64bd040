"""Fixtures for the tests on a real model: run services pointed at the session's llama.cpp
server (the ``llama`` fixture of ``tests/conftest.py``), each with a store of its own."""

from __future__ import annotations

import time

import pytest

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings, get_settings
from graph.tools.database import open_database
from tests.support_procs import llama_server

# Decisions the tests give a run that waits for a human: approve what asks approval;
# an escalation (a step at its replan cap, a request past its timeout) is skipped, since
# approving it would only run the same step again on a model this small.
ANSWERS = {"approval": "approve", "escalation": "skip"}


def assert_done(record) -> None:
    """Each system must complete on a real model: a run that failed, for whatever reason,
    is a failed test (a weak answer is fine; a stopped run is not)."""
    assert record.status == "done", f"the run ended {record.status}: {record.reason}"


@pytest.fixture
def real_settings(llama, tmp_path, monkeypatch) -> Settings:
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    get_settings.cache_clear()
    open_database.cache_clear()
    yield Settings(
        home=tmp_path,
        provider="openai",
        openai_base_url=llama.base_url,
        planner_model=llama_server.MODEL_NAME,
        worker_model=llama_server.MODEL_NAME,
        max_retries=0,
        # One call of the 135M model on a slow 2-core machine took over 120 s (the
        # default deadline) in a browser test of the same model.
        request_timeout_s=600,
        model_call_deadline_s=600,
        max_tokens=512,
    )
    get_settings.cache_clear()
    open_database.cache_clear()


@pytest.fixture
def real_store(real_settings) -> Store:
    store = Store.open(real_settings)
    yield store
    store.close()


@pytest.fixture
def real_service(real_store, real_settings) -> RunService:
    service = RunService(real_store, real_settings, timeout_tick_s=0)
    yield service
    service.shutdown()


def drive(service: RunService, run_id: str, timeout: float = 1200):
    """Follow a run to its end, answering every question it asks a human (``ANSWERS``);
    the run's record at the end, or a failure saying where it stood. The timeout is
    generous: a run on the 135M model took 12.7 minutes on a slowed 2-core machine."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        record = service.store.run(run_id)
        if record.status in ("done", "failed", "cancelled", "interrupted"):
            return record
        if record.status == "waiting" and not service.is_live(run_id):
            for item in service.store.pending_interrupts(run_id):
                service.decide(
                    run_id,
                    item["id"],
                    ANSWERS.get(item.get("kind"), "approve"),
                    reason="answered by the test",
                )
        time.sleep(0.2)
    raise AssertionError(
        f"the run is still {service.store.run(run_id).status} after "
        f"{timeout:g} s: {service.store.run(run_id).reason}"
    )


def design_for(system: str, **changes) -> Design:
    return Design(system=system, **changes)
