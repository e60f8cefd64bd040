"""A full disk under the store, for real (a small tmpfs: ``tests/support_procs/full_disk``):
each write it refuses is said in words ("The disk holding the store is full: …"),
nothing written before is lost, no run is left marked running that is not, and the
command line exits with the message instead of a traceback or a hang.

Each ``_scenario`` runs in a child process on its own small disk and returns what it
saw; the test asserts on that.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.support_procs.full_disk import ROOT, Disk, in_full_disk, unusable

pytestmark = pytest.mark.skipif(bool(unusable()), reason=f"no full disk here: {unusable()}")

FULL = "The disk holding the store is full"
QUESTION = "What caused the dot-com crash?"
REPORT_QUESTION = "What caused the dot-com crash? Save a report."
HERE = "tests.unit.test_disk_full"  # as the child imports it (pytest names it by file)
WAIT_S = 120  # a scripted run takes seconds; this only ends a test that would hang


def _service(disk: Disk, delay_s: float = 0.0, tick_s: float = 0) -> tuple[Any, Any]:
    from graph.models.scripted import ScriptedChatModel
    from graph.service.run_service import RunService
    from graph.service.store import Store
    from graph.settings import get_settings

    settings = get_settings()
    store = Store.open(settings)
    service = RunService(
        store,
        settings,
        timeout_tick_s=tick_s,
        model_factory=lambda role: ScriptedChatModel(delay_s=delay_s),
    )
    return store, service


def _events_until(store: Any, run_id: str, count: int) -> list[dict]:
    deadline = time.time() + WAIT_S
    while time.time() < deadline:
        events = store.events(run_id)
        if len(events) >= count:
            return events
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} never wrote {count} events")


def _said(call: Any) -> str:
    try:
        call()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"


# ------------------------------------------------------------------ starting a run


def _start(disk: Disk) -> dict:
    from graph.kernel.design import Design
    from graph.service.store import Store

    store, service = _service(disk)
    earlier = service.start(QUESTION, Design())
    service.wait(earlier, timeout=WAIT_S)
    events = store.events(earlier)
    disk.fill()
    said = _said(lambda: service.start(QUESTION, Design()))
    disk.free()
    again = Store.open()
    return {
        "said": said,
        "runs": [(r.id, r.status) for r in again.runs()],
        "earlier": earlier,
        "events_kept": again.events(earlier) == events,
    }


def test_starting_a_run_on_a_full_disk_says_so_and_stores_nothing(tmp_path):
    found = in_full_disk(f"{HERE}:_start", tmp_path)
    assert found["said"].startswith(f"DiskFull: {FULL}: "), found["said"]
    assert "sqlite3" not in found["said"] and "OperationalError" not in found["said"]
    assert found["runs"] == [[found["earlier"], "done"]]  # no run recorded half-way
    assert found["events_kept"]


def _first_start(disk: Disk) -> dict:
    from graph.kernel.design import Design
    from graph.service.store import Store

    store, service = _service(disk)  # no graph built yet: its tools' files are not made
    disk.fill()
    said = _said(lambda: service.start(REPORT_QUESTION, Design()))
    disk.free()
    return {"said": said, "runs": len(Store.open().runs())}


def test_the_first_run_of_a_home_on_a_full_disk_says_so(tmp_path):
    found = in_full_disk(f"{HERE}:_first_start", tmp_path)
    assert found["said"].startswith(f"DiskFull: {FULL}: "), found["said"]
    assert found["runs"] == 0


# ------------------------------------------------------------------ a run mid-way


def _mid_run(disk: Disk) -> dict:
    from graph.kernel.design import Design

    store, service = _service(disk, delay_s=0.2)
    run_id = service.start(QUESTION, Design())
    written = _events_until(store, run_id, 4)
    disk.fill()
    ended = service.wait(run_id, timeout=WAIT_S)
    kept = store.events(run_id)[: len(written)] == written
    disk.free()
    service.resume(run_id)
    resumed = service.wait(run_id, timeout=WAIT_S)
    return {
        "status": ended.status,
        "reason": ended.reason,
        "kept": kept,
        "resumed": resumed.status,
        "answer": bool(service.state(run_id).get("final_answer")),
    }


def test_a_run_cut_off_by_a_full_disk_ends_interrupted_in_words_and_resumes_to_done(tmp_path):
    found = in_full_disk(f"{HERE}:_mid_run", tmp_path)
    assert found["status"] == "interrupted", found
    assert found["reason"].startswith(f"{FULL}: "), found["reason"]
    assert "resume the run" in found["reason"]
    assert found["kept"]  # the events written before the disk filled
    assert found["resumed"] == "done" and found["answer"]


# ------------------------------------------------------------------ a decision


def _decision(disk: Disk) -> dict:
    from graph.kernel.design import Design

    store, service = _service(disk)
    run_id = service.start(REPORT_QUESTION, Design())
    waiting = service.wait(run_id, timeout=WAIT_S)
    (asked,) = store.pending_interrupts(run_id)
    disk.fill()
    said = _said(lambda: service.decide(run_id, asked["id"], "approve"))
    after = store.run(run_id)
    pending = [i["id"] for i in store.pending_interrupts(run_id)]
    decided = [d["id"] for d in store.decisions_since(0)]
    disk.free()
    service.decide(run_id, asked["id"], "approve")
    return {
        "waiting": waiting.status,
        "said": said,
        "status_after": after.status,
        "reason_kept": after.reason == waiting.reason,
        "still_pending": pending == [asked["id"]],
        "decided": decided,
        "then": service.wait(run_id, timeout=WAIT_S).status,
    }


def test_a_decision_on_a_full_disk_says_so_and_the_run_still_waits_for_it(tmp_path):
    found = in_full_disk(f"{HERE}:_decision", tmp_path)
    assert found["waiting"] == "waiting"
    assert found["said"].startswith(f"DiskFull: {FULL}: "), found["said"]
    assert found["status_after"] == "waiting" and found["reason_kept"]
    assert found["still_pending"] and found["decided"] == []
    assert found["then"] == "done"  # decided again once there is room


# ------------------------------------------------------------------ a timeout


def _timeout(disk: Disk) -> dict:
    import logging

    from graph.kernel.design import Design

    said: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("graph").addHandler(handler)
    store, service = _service(disk, tick_s=0.1)
    run_id = service.start(REPORT_QUESTION, Design(approval_timeout_s=1.5, timeout_action="skip"))
    waiting = service.wait(run_id, timeout=WAIT_S)
    disk.fill()
    time.sleep(3)  # the deadline passes, and a dozen of the watcher's ticks
    during = store.run(run_id)
    held = [i.get("timeout_held") for i in service.pending_approvals()]
    disk.free()
    deadline = time.time() + WAIT_S
    while store.run(run_id).status == "waiting" and time.time() < deadline:
        time.sleep(0.1)
    ended = service.wait(run_id, timeout=WAIT_S) if service.is_live(run_id) else store.run(run_id)
    return {
        "waiting": waiting.status,
        "during": [during.status, during.reason == waiting.reason],
        "held": held,
        "logged": [line for line in said if run_id in line],
        "then": ended.status,
        "decided": [(d["decided"]["by"], d["decided"]["reason"]) for d in store.decisions_since(0)],
    }


def test_a_timeout_due_on_a_full_disk_is_logged_shown_and_applied_once_there_is_room(tmp_path):
    found = in_full_disk(f"{HERE}:_timeout", tmp_path)
    assert found["waiting"] == "waiting"
    assert found["during"] == ["waiting", True], found  # never queued or running unanswered
    assert len(found["held"]) == 1 and found["held"][0].startswith(f"{FULL}: "), found["held"]
    assert any(FULL in line for line in found["logged"]), found["logged"]
    assert len(found["logged"]) <= 3, found["logged"]  # said once, not on every tick
    assert found["then"] == "done", found
    ((by, reason),) = found["decided"]
    assert by == "timeout" and "late" in reason, reason


# ------------------------------------------------------------------ the command line


def _cli(*args: str, delay_s: float = 0.0) -> subprocess.Popen:
    env = {**os.environ, "STEPWISE_SCRIPTED_DELAY": str(delay_s)}
    return subprocess.Popen(
        [sys.executable, "-m", "graph", "run", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ended(cli: subprocess.Popen) -> dict:
    try:
        out, err = cli.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        cli.kill()
        out, err = cli.communicate()
        err += "\n(hung: killed)"
    return {"code": cli.returncode, "out": out, "err": err}


def _cli_cases(disk: Disk) -> dict:
    from graph.service.store import Store

    store, service = _service(disk)  # the store and checkpoints made while there is room
    service.shutdown()
    disk.fill()
    at_start = _ended(_cli(QUESTION))
    disk.free()
    runs_after_start = [r.status for r in Store.open().runs()]
    cli = _cli(QUESTION, delay_s=0.2)
    deadline = time.time() + WAIT_S
    while time.time() < deadline:  # the run has written some of its events
        runs = store.runs()
        if runs and len(store.events(runs[0].id)) >= 4:
            break
        time.sleep(0.05)
    disk.fill()
    mid_run = _ended(cli)
    disk.free()
    return {
        "at_start": at_start,
        "runs_after_start": runs_after_start,
        "mid_run": mid_run,
        "statuses": [r.status for r in Store.open().runs()],
    }


def test_the_cli_on_a_full_disk_exits_with_the_message_at_start_and_mid_run(tmp_path):
    found = in_full_disk(f"{HERE}:_cli_cases", tmp_path)
    for case in ("at_start", "mid_run"):
        said = found[case]
        assert said["code"] == 1, (case, said)
        assert f"error: {FULL}: " in said["err"], (case, said["err"])
        assert "Traceback" not in said["err"] and "sqlite3" not in said["err"], (case, said)
    assert found["runs_after_start"] == []  # refused before anything was recorded
    assert found["statuses"] == ["interrupted"]  # never left "running"


# ------------------------------------------------------------------ the Run page


def _run_page(disk: Disk) -> dict:
    from graph.kernel.design import Design
    from tests.app.support import button, open_page, texts
    from ui import services

    key = str(disk.home.resolve())
    store, service = services._store(key), services._service(key)
    run_id = service.start(QUESTION, Design(pace_s=0.3))
    _events_until(store, run_id, 4)
    disk.fill()
    service.wait(run_id, timeout=WAIT_S)
    at = open_page("app_pages/run.py", run=run_id)
    shown = texts(at)
    at.session_state["run:question"] = QUESTION
    at.run()
    button(at, "Run").click().run()
    return {
        "shown": shown,
        "errors": [str(e.value) for e in at.error],
        "exceptions": [str(e.value) for e in at.exception],
        "runs": len(store.runs()),
    }


def test_the_run_page_shows_a_full_disk_in_words(tmp_path):
    found = in_full_disk(f"{HERE}:_run_page", tmp_path)
    assert f"{FULL}: " in found["shown"]  # the cut-off run's reason
    assert not found["exceptions"]
    assert any(e.startswith(f"{FULL}: ") for e in found["errors"]), found["errors"]
    assert found["runs"] == 1  # the refused start recorded nothing
