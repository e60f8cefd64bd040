"""Nothing lost when the process dies: real processes, killed with SIGKILL, restarted.

A host process runs the RunService (as the app does), the test kills it mid-run, and a
new service on the same STEPWISE_HOME picks the run up from the checkpointer once the
dead process's lease on it has run out (LEASE_S here, 30 s by default).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from graph.kernel.ledger import SideEffectLedger
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings, get_settings
from graph.tools.database import open_database
from tests.support import ROOT
from tests.unit.conftest import wait_for

HOST = ROOT / "tests" / "support_procs" / "service_host.py"
LEASE_S = 1.0  # short, so a killed host's runs are free to take over soon


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    get_settings.cache_clear()
    open_database.cache_clear()
    yield tmp_path
    get_settings.cache_clear()
    open_database.cache_clear()


def host(
    home: Path, question: str, delay: float, approvals: str = "{}", lease: float = LEASE_S
) -> tuple[subprocess.Popen, str]:
    env = {
        **os.environ,
        "STEPWISE_HOME": str(home),
        "STEPWISE_SCRIPTED_DELAY": str(delay),
        "STEPWISE_RUN_LEASE": str(lease),
    }
    proc = subprocess.Popen(
        [sys.executable, str(HOST), question, approvals], env=env, stdout=subprocess.PIPE, text=True
    )
    run_id = proc.stdout.readline().strip()
    assert run_id, "the host process did not start a run"
    return proc, run_id


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def new_service(home: Path) -> RunService:
    settings = Settings(home=home, run_lease_s=LEASE_S)
    return RunService(Store.open(settings), settings)


def wait_interrupted(service: RunService, run_id: str):
    """The new service marks a killed host's run interrupted once its lease runs out."""
    return wait_for(
        lambda: (r := service.store.run(run_id)).status == "interrupted" and r,
        timeout=15,
        what="the killed run to be marked interrupted",
    )


def test_a_run_killed_mid_step_is_interrupted_and_resumes_to_the_end(home):
    proc, run_id = host(home, "How did Tesla's stock do in 2008?", delay=0.3)
    watch = Store.open(Settings(home=home))
    wait_for(lambda: len(watch.nodes_run(run_id)) >= 3, what="the run to be mid-way")
    kill(proc)
    service = new_service(home)
    record = wait_interrupted(service, run_id)
    assert "stopped while this run" in record.reason
    done_before = len(service.store.nodes_run(run_id))
    service.resume(run_id)
    finished = service.wait(run_id, timeout=120)
    assert finished.status == "done", finished.reason
    assert service.store.snapshot(run_id)["final_answer"]
    assert len(service.store.nodes_run(run_id)) > done_before
    service.shutdown()


def test_a_pending_approval_survives_a_kill_and_approving_finishes_the_run(home):
    proc, run_id = host(home, "What caused the dot-com crash? Save a report.", delay=0.0)
    watch = Store.open(Settings(home=home))
    # Waiting, and let go: the host writes the status before it gives the run back, and a
    # kill in between leaves its lease to run out first (the decision would be refused).
    wait_for(
        lambda: watch.run(run_id).status == "waiting" and watch.run_lease(run_id)[0] is None,
        what="the approval, the run let go by its host",
    )
    kill(proc)
    service = new_service(home)
    (pending,) = service.pending_approvals()
    assert (pending["run_id"], pending["agent"], pending["step"]) == (run_id, "report_writer", 2)
    service.decide(run_id, pending["id"], "approve")
    finished = service.wait(run_id, timeout=60)
    assert finished.status == "done", finished.reason
    assert len(list((home / "reports").glob("*.md"))) == 1
    service.shutdown()


def test_a_side_effect_done_before_a_kill_is_not_repeated_on_resume(home):
    # report_writer never asks here; each scripted call takes 1 s, so the kill lands
    # after save_report wrote its file and before the step's last model call ends.
    proc, run_id = host(
        home,
        "What caused the dot-com crash? Save a report.",
        delay=1.0,
        approvals='{"report_writer": "never"}',
    )
    reports = home / "reports"
    wait_for(
        lambda: reports.exists() and list(reports.glob("*.md")), timeout=90, what="the report file"
    )
    kill(proc)
    service = new_service(home)
    wait_interrupted(service, run_id)
    service.resume(run_id)
    finished = service.wait(run_id, timeout=120)
    assert finished.status == "done", finished.reason
    assert len(list(reports.glob("*.md"))) == 1
    # Either LangGraph resumed the sub-agent after its tool call, or the ledger answered
    # the repeated call; both ways the side effect happened once, under one key.
    assert SideEffectLedger(home / "side_effects.sqlite").count(run_id) == 1
    report_row = next(
        r for r in service.store.snapshot(run_id)["rows"] if r["agent"] == "report_writer"
    )
    assert report_row["result"].startswith("Report saved to")
    service.shutdown()
