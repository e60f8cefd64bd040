"""A run that began waiting before Stepwise asked in the standard human-in-the-loop shape
(``tests/fixtures/old_waiting_run``, made by ``make_old_waiting_run.py`` with the code of
0c7477f: its interrupt is Stepwise's dict alone) still resumes with today's code: from the
Approvals inbox's decision, and from a client that sends only the standard decisions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from langgraph.types import Command

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings, get_settings
from graph.tools.database import open_database
from tests.unit.conftest import wait_status

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "old_waiting_run"


@pytest.fixture
def old_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    shutil.copytree(FIXTURE, home)
    monkeypatch.setenv("STEPWISE_HOME", str(home))
    get_settings.cache_clear()
    open_database.cache_clear()
    settings = Settings(home=home, provider="scripted")
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    yield service, (home / "RUN_ID").read_text().strip()
    service.shutdown()
    store.close()
    get_settings.cache_clear()
    open_database.cache_clear()


def test_the_old_waiting_run_is_listed_in_its_old_shape_and_an_inbox_decision_resumes_it(old_home):
    service, run_id = old_home
    [asked] = service.pending_approvals()
    assert asked["run_id"] == run_id and asked["agent"] == "report_writer"
    assert "action_requests" not in asked  # made before the change
    service.decide(run_id, asked["id"], "edit", query="A two-line report", by="ana@example.com")
    record = wait_status(service, run_id, "done", timeout=60)
    assert record.status == "done"
    compiled, _, _ = service.prepare(Design.model_validate(record.design))
    approvals = compiled.get_state({"configurable": {"thread_id": run_id}}).values["approvals"]
    assert [(a["decision"], a["query"], a["by"]) for a in approvals] == [
        ("edit", "A two-line report", "ana@example.com")
    ]


def test_the_old_waiting_run_takes_a_standard_decision(old_home):
    service, run_id = old_home
    [asked] = service.pending_approvals()
    record = service.store.run(run_id)
    compiled, _, _ = service.prepare(Design.model_validate(record.design))
    config = {"configurable": {"thread_id": run_id}}
    reject = {"type": "reject", "message": "not this report"}
    compiled.invoke(Command(resume={asked["id"]: {"decisions": [reject]}}), config)
    state = compiled.get_state(config)
    first = state.values["approvals"][0]
    assert (first["decision"], first["reason"]) == ("reject", "not this report")
    # asked again in the new shape (the replanned step needs approval again)
    if state.interrupts:
        assert "action_requests" in state.interrupts[0].value
