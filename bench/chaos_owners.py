"""Chaos cases of issue 34 on who owns a run: an owner frozen past its lease, and a
PostgreSQL restart under a live app process. Called by ``bench/chaos.py``.

1. **Frozen owner.** An app process (``tests/support_procs/frozen_host.py``) runs a
   question on the slowed offline model; it is SIGSTOPped (outside a database write) and
   kept stopped past its lease (2 s); another process's run service marks the run
   interrupted, resumes it and finishes it; then the owner gets SIGCONT. On SQLite and on
   a real PostgreSQL the bench starts. Double: two ``done`` end events or the synthesizer
   run twice; lost: the run not ``done`` with an answer; uncaught: the owner exiting with
   an error or a traceback.
2. **Database restart.** A run service in this process on PostgreSQL; a run is cut off by
   ``pg_ctl stop -m immediate`` mid-way and the server started again. The cut-off run must
   be marked with the true reason in words, resume at once and end ``done``, and two later
   runs (one saving a report: the side-effect ledger's connection) must end ``done``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.chaos_tally import CANARY, Tally, is_raw, show, tally
from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs import postgres_server
from tests.unit.conftest import wait_for
from tests.unit.test_frozen_owner import FROZEN_HOST, LEASE_S, calls, freeze_outside_a_write

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
REPORT = "What caused the dot-com crash? Save a report."


def _ended(store: Store, run_id: str) -> tuple[int, int]:
    """(``done`` end events, times the synthesizer ran)."""
    ends = store.events(run_id, kinds=("end",))
    done = sum(1 for e in ends if (e.get("data") or {}).get("status") == "done")
    return done, store.nodes_run(run_id).count("synthesizer")


def _frozen_once(home: Path, database_url: str | None) -> dict:
    settings = Settings(
        home=home,
        provider="scripted",
        run_lease_s=LEASE_S,
        database_url=database_url,
        openai_api_key=CANARY,
    )
    env = {
        **os.environ,
        "STEPWISE_HOME": str(home),
        "STEPWISE_PROVIDER": "scripted",
        "STEPWISE_RUN_LEASE": str(LEASE_S),
        "OPENAI_API_KEY": CANARY,
    }
    env.pop("STEPWISE_DATABASE_URL", None)
    if database_url:
        env["STEPWISE_DATABASE_URL"] = database_url
    host_calls = home / "host_calls.txt"
    proc = subprocess.Popen(
        [sys.executable, str(FROZEN_HOST), QUESTION, str(host_calls), "0.3"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watch = Store.open(settings)
    taker = None
    try:
        run_id = proc.stdout.readline().strip()
        wait_for(lambda: len(watch.nodes_run(run_id)) >= 2, what="the hosted run to be mid-way")
        freeze_outside_a_write(proc, home, database_url, host_calls)
        frozen_at = calls(host_calls)
        taker = RunService(
            Store.open(settings),
            settings,
            timeout_tick_s=0,
            model_factory=lambda role: ScriptedChatModel(delay_s=0.05),
        )
        wait_for(lambda: watch.run(run_id).status == "interrupted", timeout=60, what="takeover")
        taker.resume(run_id)
        taker.wait(run_id, timeout=120)
        proc.send_signal(signal.SIGCONT)
        out, err = proc.communicate(timeout=120)
        record = watch.run(run_id)
        done, synthesized = _ended(watch, run_id)
        return {
            "status": record.status,
            "answer": bool((record.final_answer or "").strip()),
            "done_ends": done,
            "synthesized": synthesized,
            "calls_after": calls(host_calls) - frozen_at,
            "exit": proc.returncode,
            "err": err,
            "shown": record.reason or "",
        }
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait(timeout=10)
        if taker is not None:
            taker.shutdown()
        watch.close()


def frozen_owner(work: Path, pg: postgres_server.PostgresServer, repeats: int) -> None:
    found = tally("frozen owner")
    for backend in ("sqlite", "postgresql"):
        for i in range(repeats):
            home = work / f"frozen-{backend}-{i}"
            home.mkdir()
            url = pg.create_database() if backend == "postgresql" else None
            try:
                o = _frozen_once(home, url)
            except Exception as exc:  # the case could not be played through: say so
                found.tried += 1
                found.uncaught += 1
                found.note(f"{backend} #{i}: {type(exc).__name__}: {exc}")
                continue
            found.tried += 1
            double = o["done_ends"] > 1 or o["synthesized"] > 1
            lost = o["status"] != "done" or not o["answer"]
            uncaught = o["exit"] != 0 or "Traceback" in o["err"] or is_raw(o["shown"])
            found.double += double
            found.lost += lost
            found.uncaught += uncaught
            found.keys += CANARY in o["err"] or CANARY in o["shown"]
            found.note(
                f"{backend} #{i}: {o['status']}, {o['done_ends']} done end(s), synthesizer "
                f"{o['synthesized']}x, {o['calls_after']} model call(s) by the owner after "
                f"SIGCONT, owner exit {o['exit']}"
            )
    show(found)


def database_restart(work: Path, pg: postgres_server.PostgresServer, repeats: int) -> None:
    found = tally("database restart")
    for i in range(repeats):
        home = work / f"restart-{i}"
        home.mkdir()
        _restart_once(found, home, pg, i)
    show(found)


def _restart_once(found: Tally, home: Path, pg: postgres_server.PostgresServer, i: int) -> None:
    no_approval = Design(approvals={"report_writer": "never"})
    settings = Settings(
        home=home,
        provider="scripted",
        database_url=pg.create_database(),
        run_lease_s=300,  # the cut-off run must be resumable without its lease lapsing
    )
    service = RunService(
        Store.open(settings),
        settings,
        timeout_tick_s=0,
        model_factory=lambda role: ScriptedChatModel(delay_s=0.3),
    )
    runs: list[str] = []
    try:
        runs.append(service.start(REPORT, no_approval))
        service.wait(runs[0], timeout=120)
        cut = service.start(QUESTION, Design(max_replans=2, recursion_limit=60))
        runs.append(cut)
        wait_for(lambda: len(service.store.nodes_run(cut)) >= 2, what="mid-way")
        started = time.monotonic()
        pg.halt()
        wait_for(lambda: not service.is_live(cut), timeout=120, what="the cut")
        pg.restart()
        record = wait_for(
            lambda: (r := service.store.run(cut)).status != "running" and r,
            timeout=60,
            what="the cut-off run's end to be recorded",
        )
        reason = record.reason or ""
        found.uncaught += is_raw(reason)
        service.resume(cut)
        service.wait(cut, timeout=120)
        runs += [service.start(REPORT, no_approval), service.start(QUESTION, Design())]
        for run_id in runs[2:]:
            service.wait(run_id, timeout=120)
        found.note(
            f"#{i}: cut-off run {record.status} ({reason[:90]}), resumed; "
            f"{time.monotonic() - started:.1f} s from the halt to all runs ended"
        )
    except Exception as exc:  # an exception out of the service: uncaught
        found.uncaught += 1
        found.note(f"#{i}: {type(exc).__name__}: {exc}")
    finally:
        for run_id in runs:
            record = service.store.run(run_id)
            done, synthesized = _ended(service.store, run_id)
            found.tried += 1
            found.lost += record.status != "done"
            found.double += done > 1 or synthesized > 1
            if record.status != "done":
                found.note(f"#{i}: run {run_id[:8]} {record.status}: {record.reason}")
        service.shutdown()
