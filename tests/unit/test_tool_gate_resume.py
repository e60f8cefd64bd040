"""A gated MCP call is made once, even when the app dies around it (issue 30, point 3).

Real parts: the counting MCP server (tests/mcp_support.py) on loopback in this process,
counting what it receives; the gated-tools test system (tests/gate_system.py) run by the
run service in another process (tests/support_procs/gate_host.py) that approves the call
and is SIGKILLed by its own hand just before or just after the ledger records the call;
a new run service here resuming the run from its SQLite checkpoints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from graph.kernel.ledger import SideEffectLedger
from graph.kernel.system import register, unregister
from graph.service.run_service import RunService
from graph.tools.mcp_config import make_config
from tests.gate_system import GATE_SERVER, SYSTEM, question
from tests.mcp_support import counting_server
from tests.support import ROOT
from tests.unit.conftest import wait_status

GATE_HOST = ROOT / "tests" / "support_procs" / "gate_host.py"
NOTE = {"to": "ada@example.org", "body": "the minutes"}


@pytest.fixture(scope="module")
def server():
    running = counting_server()
    yield running
    running.stop()


@pytest.fixture
def hosted(store, server):
    store.mcp_servers.add(make_config(GATE_SERVER, "streamable_http", url=server.url))
    register(SYSTEM)
    yield
    unregister(SYSTEM.name)


def _killed(settings, when: str, edited: dict | None = None) -> str:
    """A run whose process approved the gated call and died around its record; its id."""
    argv = [sys.executable, str(GATE_HOST), question("send_note", **NOTE), when]
    if edited is not None:
        argv.append(json.dumps(edited))
    proc = subprocess.Popen(
        argv,
        env={**os.environ, "STEPWISE_HOME": str(settings.home)},
        stdout=subprocess.PIPE,
        text=True,
    )
    run_id = proc.stdout.readline().strip()
    assert run_id, "the host process did not start a run"
    assert proc.wait(timeout=120) == -9, "the process was not killed at the gated call"
    return run_id


@pytest.mark.parametrize("edited", [None, {"to": "grace@example.org", "body": "the minutes"}])
def test_a_run_killed_after_the_call_was_recorded_resumes_without_calling_again(
    settings, store, server, hosted, edited
):
    before = server.calls["send_note"]
    run_id = _killed(settings, "after", edited)
    assert server.calls["send_note"] == before + 1
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        assert store.run(run_id).status == "interrupted"
        service.resume(run_id)
        done = service.wait(run_id, timeout=60)
        assert done.status == "done", done.reason
        assert server.calls["send_note"] == before + 1  # exactly once, counted by the server
        answer = store.snapshot(run_id)["final_answer"]
        to = (edited or NOTE)["to"]
        assert f"sent to {to}" in answer and "not repeated" in answer
        ledger = SideEffectLedger(settings.home / "side_effects.sqlite")
        assert ledger.count("tools/", finished_only=True) == 1
        assert ledger.count("tools/") == (1 if edited is None else 2)  # and where the edit led
    finally:
        service.shutdown()


@pytest.mark.parametrize("decision", ["reject", "approve"])
def test_a_call_cut_off_before_its_record_is_not_made_again_without_a_person(
    settings, store, server, hosted, decision
):
    """The server acted, then the app died before the ledger knew: the resumed run asks a
    person, saying the outcome is unknown; rejected, the server is not called again;
    approved, it is (once more, as asked)."""
    before = server.calls["send_note"]
    run_id = _killed(settings, "before")
    assert server.calls["send_note"] == before + 1
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        service.resume(run_id)
        wait_status(service, run_id, "waiting", timeout=60)
        assert server.calls["send_note"] == before + 1  # not made again on its own
        (pending,) = service.pending_approvals()
        assert "unknown" in pending["reason"] and pending["tool_call"]["tool"] == "send_note"
        service.decide(run_id, pending["id"], decision, reason="checked by hand")
        done = service.wait(run_id, timeout=60)
        assert done.status == "done", done.reason
        made = 2 if decision == "approve" else 1
        assert server.calls["send_note"] == before + made
    finally:
        service.shutdown()
