"""Side effects happen once per ledger key, even when the process dies between the effect
and its record (issue #14, items 1 and 2).

Real parts: SQLite ledgers, real files, the run service in a real process that is
SIGKILLed (by its own hand, at the exact window: tests/support_procs/dying_host.py), a
new service resuming the run from its checkpoints, and the demo API as the HTTP server.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from graph.kernel.design import Design
from graph.kernel.ledger import SideEffectLedger
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings, get_settings
from graph.tools.database import open_database
from graph.tools.demo_api import start_demo_api
from graph.tools.drafts import write_draft_tool
from graph.tools.reports import save_report_tool
from tests.support import ROOT
from tests.unit.conftest import wait_status

DYING_HOST = ROOT / "tests" / "support_procs" / "dying_host.py"
RUN_ID = "0123456789abcdef0123456789abcdef"  # a run id is 32 hex characters


class Crash(BaseException):
    """Stands for the process dying: nothing in the tool may catch it."""


class CrashingLedger(SideEffectLedger):
    """A ledger whose first "this effect is finished" call crashes instead."""

    crashed = False

    def _crash_once(self) -> None:
        if not self.crashed:
            self.crashed = True
            raise Crash()

    def finish(self, key, result, state="done"):
        self._crash_once()
        return super().finish(key, result, state)

    def record(self, key, result):
        self._crash_once()
        return super().record(key, result)


# --------------------------------------------------------------------------- one file per key


def test_three_report_steps_of_one_run_make_three_files_with_their_own_bodies(tmp_path):
    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")
    folder = tmp_path / "reports"
    for step in (1, 2, 3):
        said = save_report_tool(folder, ledger, f"{RUN_ID}/{step}/0").invoke(
            {"title": "Dot-com crash", "body": f"findings of step {step}"}
        )
        assert said.startswith("Report saved to") and "not repeated" not in said
    files = sorted(folder.glob("*.md"))
    assert len(files) == 3
    bodies = sorted(f.read_text().split("\n\n", 1)[1].strip() for f in files)
    assert bodies == [f"findings of step {n}" for n in (1, 2, 3)]
    assert ledger.count(RUN_ID, finished_only=True) == 3


def test_two_report_calls_in_one_step_make_two_files(tmp_path):
    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")
    tool = save_report_tool(tmp_path / "reports", ledger, f"{RUN_ID}/2/0")
    tool.invoke({"title": "Same", "body": "first"})
    tool.invoke({"title": "Same", "body": "second"})
    texts = sorted(f.read_text() for f in (tmp_path / "reports").glob("*.md"))
    assert texts == ["# Same\n\nfirst\n", "# Same\n\nsecond\n"]


# --------------------------------------------------------------------------- the crash windows


def test_a_report_crashed_after_its_file_landed_is_finished_not_written_again(tmp_path):
    """The window of the defect: the file is in place, the ledger does not know yet. The
    resumed step (here with another title and body, as a real model may write) finds the
    intent and finishes it: still one file, the first one, untouched."""
    folder = tmp_path / "reports"
    crashing = CrashingLedger(tmp_path / "ledger.sqlite")
    with pytest.raises(Crash):
        save_report_tool(folder, crashing, f"{RUN_ID}/2/0").invoke(
            {"title": "Dot-com crash", "body": "the first body"}
        )
    (written,) = folder.glob("*.md")
    stamp = written.stat().st_mtime_ns
    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")  # the restarted process
    again = save_report_tool(folder, ledger, f"{RUN_ID}/2/0").invoke(
        {"title": "Dot-com crash, reworded", "body": "another body"}
    )
    assert again == f"Report saved to {written}"
    assert list(folder.glob("*.md")) == [written]
    assert written.read_text() == "# Dot-com crash\n\nthe first body\n"
    assert written.stat().st_mtime_ns == stamp
    assert ledger.entry(f"{RUN_ID}/2/0/save_report/1").state == "done"


def test_a_report_crashed_before_its_rename_is_written_once_to_the_recorded_path(
    tmp_path, monkeypatch
):
    import graph.tools.effects as effects

    real_replace = os.replace

    def dies_before_renaming(src, dst):
        monkeypatch.setattr(effects.os, "replace", real_replace)
        raise Crash()

    monkeypatch.setattr(effects.os, "replace", dies_before_renaming)
    folder = tmp_path / "reports"
    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")
    with pytest.raises(Crash):
        save_report_tool(folder, ledger, f"{RUN_ID}/2/0").invoke({"title": "A", "body": "one"})
    intent = ledger.entry(f"{RUN_ID}/2/0/save_report/1")
    assert intent.state == "intent" and not list(folder.glob("*.md"))
    said = save_report_tool(folder, ledger, f"{RUN_ID}/2/0").invoke({"title": "B", "body": "two"})
    (written,) = folder.glob("*.md")
    assert str(written) == intent.detail and said == f"Report saved to {written}"
    assert not list(folder.glob(".*.tmp"))  # the half-written temporary file was replaced
    assert written.read_text() == "# B\n\ntwo\n"


def test_a_draft_crashed_after_its_file_landed_is_not_written_again(tmp_path):
    folder = tmp_path / "drafts"
    with pytest.raises(Crash):
        write_draft_tool(folder, CrashingLedger(tmp_path / "l.sqlite"), "m3-abc").invoke(
            {"title": "Answer", "body": "first"}
        )
    ledger = SideEffectLedger(tmp_path / "l.sqlite")
    said = write_draft_tool(folder, ledger, "m3-abc").invoke({"title": "Other", "body": "second"})
    (written,) = folder.glob("*.md")
    assert said == f"Draft saved to {written}" and "first" in written.read_text()
    again = write_draft_tool(folder, ledger, "m3-abc").invoke({"title": "Other", "body": "x"})
    assert again == said + " (already done for this message: not repeated)"


def test_a_ledger_file_from_before_intents_is_migrated_and_keeps_its_effects(tmp_path):
    path = tmp_path / "side_effects.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE side_effects (key TEXT PRIMARY KEY, result TEXT NOT NULL, at REAL NOT NULL)"
    )
    old.execute("INSERT INTO side_effects VALUES ('run1/2/0/save_report/1', 'Report saved', 1.0)")
    old.commit()
    old.close()
    ledger = SideEffectLedger(path)
    assert ledger.recorded("run1/2/0/save_report/1") == "Report saved"
    assert ledger.entry("run1/2/0/save_report/1").state == "done"
    assert ledger.begin("run1/3/0/save_report/1", "intent", "/x.md").state == "intent"
    assert ledger.recorded("run1/3/0/save_report/1") is None
    assert ledger.count("run1/", finished_only=True) == 1
    SideEffectLedger(path)  # opening a migrated ledger again changes nothing
    assert ledger.count("run1/") == 2


# --------------------------------------------------------------------------- real kills


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    get_settings.cache_clear()
    open_database.cache_clear()
    yield tmp_path
    get_settings.cache_clear()
    open_database.cache_clear()


def _die_at(home: Path, system: str, question: str, approvals: dict, mark: str, **env) -> str:
    """Start a run in a process that SIGKILLs itself when the ledger is told the effect
    marked ``mark`` is finished; the run's id once the process is dead."""
    proc = subprocess.Popen(
        [sys.executable, str(DYING_HOST), system, question, json.dumps(approvals), mark],
        env={**os.environ, "STEPWISE_HOME": str(home), **env},
        stdout=subprocess.PIPE,
        text=True,
    )
    run_id = proc.stdout.readline().strip()
    assert run_id, "the host process did not start a run"
    assert proc.wait(timeout=120) == -9, "the process was not killed at the side effect"
    return run_id


def test_a_report_run_killed_between_the_file_and_its_record_writes_it_once(home):
    run_id = _die_at(
        home,
        "plan_execute",
        "What caused the dot-com crash? Save a report.",
        {"report_writer": "never"},
        mark="save_report",
    )
    (written,) = (home / "reports").glob("*.md")
    stamp, text = written.stat().st_mtime_ns, written.read_text()
    service = RunService(Store.open(Settings(home=home)), Settings(home=home))
    try:
        assert service.store.run(run_id).status == "interrupted"
        service.resume(run_id)
        finished = service.wait(run_id, timeout=120)
        assert finished.status == "done", finished.reason
        assert list((home / "reports").glob("*.md")) == [written]
        assert written.stat().st_mtime_ns == stamp and written.read_text() == text
        ledger = SideEffectLedger(home / "side_effects.sqlite")
        assert ledger.count(run_id) == ledger.count(run_id, finished_only=True) == 1
    finally:
        service.shutdown()


@pytest.mark.parametrize(
    ("policy", "decision"), [("never", "approve"), ("never", "reject"), ("always", "approve")]
)
def test_a_post_cut_off_by_a_kill_is_never_resent_without_a_human(home, policy, decision):
    """The POST reached the API, then the process died before the ledger knew. The resumed
    run asks a human once (even when the workers were set never to ask), saying the
    outcome is unknown; approved, the call goes again under the same Idempotency-Key and
    the API applies it once; rejected, nothing more is sent."""
    api = start_demo_api()
    try:
        approvals = {"health_checker": policy, "site_requester": policy}
        run_id = _die_at(
            home,
            "hierarchical_teams",
            "Find reliable news sites about semiconductor tariffs, then send their URLs to the API",
            approvals,
            mark='"stored"',
            STEPWISE_TEAMS_API_BASE=api.base_url,
        )
        assert api.count("POST", "/sites") == 1
        stored = list(api.sites)
        settings = Settings(home=home, teams_api_base=api.base_url)
        service = RunService(Store.open(settings), settings, timeout_tick_s=0)
        try:
            service.resume(run_id)
            wait_status(service, run_id, "waiting", timeout=60)
            assert api.count("POST") == 1  # not resent on its own
            (sent,) = [r for r in api.requests if r["method"] == "POST"]
            key = sent["idempotency_key"]
            assert len(key) >= 16
            (pending,) = service.pending_approvals()
            assert pending["agent"] == "site_requester"
            assert "outcome of that attempt is unknown" in pending["reason"]
            service.decide(run_id, pending["id"], decision, reason="checked by hand")
            finished = service.wait(run_id, timeout=60)
            snapshot = service.store.snapshot(run_id)
            posting = next(r for r in snapshot["rows"] if "send" in r["instruction"].lower())
            (asked,) = [a for a in snapshot["approvals"] if a.get("outcome_unknown")]
            assert (asked["decision"], asked["reason"]) == (decision, "checked by hand")
            if decision == "approve":
                assert finished.status == "done", finished.reason
                assert api.count("POST", "/sites", key=key) == 2 == api.count("POST")
                assert posting["status"] == "done"
            else:
                assert api.count("POST") == 1
                assert posting["status"] == "failed"
                assert "outcome is unknown" in posting["reason"]
                assert "not sent again" in posting["reason"]
            assert api.sites == stored  # applied once either way
        finally:
            service.shutdown()
    finally:
        api.server.shutdown()


def test_a_call_sent_without_an_answer_is_not_resent_by_a_replay_without_a_human(settings, store):
    """The API took the request and never answered: whether it acted is unknown, so the
    call stays "sending"; a replay from before the team asks a human instead of sending
    it again."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []

    def take_and_never_answer():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            held.append(conn)

    threading.Thread(target=take_and_never_answer, daemon=True).start()
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    settings = settings.model_copy(update={"teams_api_base": base, "teams_http_timeout_s": 0.5})
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        design = Design(system="hierarchical_teams", approvals={"health_checker": "never"})
        run_id = service.start("Check that the API is healthy", design)
        wait_status(service, run_id, "failed")  # its only subtask failed (item 8)
        assert "Every subtask failed" in store.run(run_id).reason
        (row,) = store.snapshot(run_id)["rows"]
        assert row["status"] == "failed" and "no answer came within 0.5 s" in row["reason"]
        assert "is unknown" in row["reason"] and len(held) == 1
        timeline = service.timeline(run_id)
        before_team = next(r for r in timeline if r["next"] == ["request_team"])
        fork_id = service.fork(run_id, before_team["checkpoint_id"])
        wait_status(service, fork_id, "waiting")
        (pending,) = service.pending_approvals()
        assert "outcome of that attempt is unknown" in pending["reason"]
        assert len(held) == 1  # asked, not resent
    finally:
        service.shutdown()
        listener.close()
        for conn in held:
            conn.close()
