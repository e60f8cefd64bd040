"""Chaos: processes killed or frozen mid-run, a database restarted, malformed model output,
huge replies, hostile servers, crafted imports, a full disk and leaked secrets, measured
in one go. Prints figures only (issue #14's and #34's targets in brackets).

    python bench/chaos.py [--kills 20] [--malformed 108] [--repeats 2] [--only CASE ...]

1. **Kills.** A host process (``tests/support_procs/service_host.py``, a RunService as
   the app runs it) runs a plan_execute question that saves a report; it is SIGKILLed at
   points spread over the run and at the side effect (the report file appearing, the
   ledger row appearing); a new service resumes the run. Each outcome is compared with an
   unkilled reference run of the same deterministic offline model: resumed to ``done``,
   lost (no answer, or a step that ended differently), duplicated side effects (report
   files or ledger rows beyond the reference), event-log mismatches (the stored path
   through the graph differs from the reference's, a ``__pseudo__`` node was stored, or
   not exactly one ``done`` end event).
2. **Malformed output** and 3. **Disk** (2 MB added to every reply): ``bench/chaos_models.py``.
4. **Secrets.** A canary API key, and a server that echoes the Authorization header in its
   error: the canary is looked for in the store and checkpoint files, an export, the
   History page as rendered, and everything logged.
5. Issue 34's cases, each counting double runs, lost runs, uncaught errors and keys
   shown (``bench/chaos_tally.py``), then their totals: **frozen owner** and **database
   restart** (``bench/chaos_owners.py``, on a PostgreSQL server the bench starts),
   **crafted imports** and **disk full** (``bench/chaos_inputs.py``), **hostile servers**
   (``bench/chaos_servers.py``).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import graph.registry  # noqa: E402,F401  (registers the systems)
from bench.chaos_models import (  # noqa: E402
    WAIT_S,
    disk,
    malformed,
    run_against,
    settings_for,
)
from bench.chaos_tally import settings_line, totals  # noqa: E402
from graph.kernel.system import systems  # noqa: E402
from graph.models.scripted import ScriptedChatModel  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import get_settings  # noqa: E402
from tests.support_procs.fake_server import LocalOpenAIServer  # noqa: E402
from ui.views import view_of  # noqa: E402

HOST = ROOT / "tests" / "support_procs" / "service_host.py"
KILL_QUESTION = "What caused the dot-com crash? Save a report."
KILL_APPROVALS = '{"report_writer": "never"}'
KILL_DELAY_S = 0.25  # per scripted model call in the host: a run of a few seconds
NEW_CASES = ["frozen", "restart", "imports", "hostile", "diskfull"]  # issue 34's


# --------------------------------------------------------------------------- kills


def _host(home: Path) -> tuple[subprocess.Popen, str]:
    env = {
        **os.environ,
        "STEPWISE_HOME": str(home),
        "STEPWISE_SCRIPTED_DELAY": str(KILL_DELAY_S),
        "STEPWISE_PROVIDER": "scripted",
    }
    proc = subprocess.Popen(
        [sys.executable, str(HOST), KILL_QUESTION, KILL_APPROVALS],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    run_id = proc.stdout.readline().strip()
    if not run_id:
        raise RuntimeError("the host process did not start a run")
    return proc, run_id


def _ledger_rows(home: Path, run_id: str) -> int:
    path = home / "side_effects.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT COUNT(*) FROM side_effects WHERE key LIKE ?", (run_id + "%",)
        ).fetchone()[0]


def _reports(home: Path) -> list[Path]:
    return sorted((home / "reports").glob("*.md")) if (home / "reports").exists() else []


def _observe(service: RunService, home: Path, run_id: str) -> dict:
    store = service.store
    record = store.run(run_id)
    snapshot = store.snapshot(run_id) or {}
    ends = [e for e in store.events(run_id, kinds=("end",))]
    return {
        "status": record.status if record else "missing",
        "reason": record.reason if record else "",
        "answer": bool((snapshot.get("final_answer") or "").strip()),
        "rows": [(r.get("agent"), r.get("status")) for r in snapshot.get("rows") or []],
        "path": store.nodes_run(run_id),
        "done_ends": sum(1 for e in ends if (e.get("data") or {}).get("status") == "done"),
        "llm_calls": sum(
            1
            for e in store.events(run_id, kinds=("custom",))
            if isinstance(e.get("data"), dict) and "llm_call" in e["data"]
        ),
        "reports": len(_reports(home)),
        "report_bodies": sorted(p.read_text(encoding="utf-8") for p in _reports(home)),
        "ledger": _ledger_rows(home, run_id),
    }


def _resume_after_kill(home: Path, run_id: str) -> RunService:
    """A new service on the same home takes the dead run over and finishes it."""
    deadline = time.monotonic() + WAIT_S
    while True:
        service = RunService(Store.open(settings_for(home)), settings_for(home))
        if service.store.run(run_id).status in ("done", "failed", "cancelled", "waiting"):
            return service  # it ended (or asked a human) before the kill landed
        try:
            service.resume(run_id)
            break
        except Exception:
            service.shutdown()
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)  # e.g. the dead process's lease has not expired yet
    try:
        service.wait(run_id, timeout=WAIT_S)
    except TimeoutError:
        pass
    return service


def _reference(work: Path) -> tuple[dict, float]:
    home = Path(tempfile.mkdtemp(prefix="ref-", dir=work))
    started = time.monotonic()
    proc, run_id = _host(home)
    store = Store.open(settings_for(home))
    while store.run(run_id).status in ("queued", "running"):
        time.sleep(0.05)
    duration = time.monotonic() - started
    proc.kill()
    proc.wait()
    service = RunService(Store.open(settings_for(home)), settings_for(home), claim_orphans=False)
    observed = _observe(service, home, run_id)
    service.shutdown()
    return observed, duration


def _kill_at(work: Path, trigger: Callable[[Path, str, float], bool]) -> dict:
    home = Path(tempfile.mkdtemp(prefix="kill-", dir=work))
    proc, run_id = _host(home)
    started = time.monotonic()
    while not trigger(home, run_id, time.monotonic() - started):
        if proc.poll() is not None or time.monotonic() - started > WAIT_S:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    service = _resume_after_kill(home, run_id)
    observed = _observe(service, home, run_id)
    service.shutdown(wait=False)
    return observed


def kills(work: Path, count: int) -> None:
    reference, duration = _reference(work)
    print(
        f"reference run: {duration:.1f} s, path {len(reference['path'])} nodes, "
        f"{reference['llm_calls']} model calls, {reference['reports']} report file(s)"
    )
    side = [
        ("report file appears", lambda h, r, t: bool(_reports(h))),
        ("ledger row appears", lambda h, r, t: _ledger_rows(h, r) > 0),
    ]
    timed = max(count - 2 * len(side), 1)
    points: list[tuple[str, Callable]] = []
    for i in range(timed):
        at = duration * (i + 0.5) / timed
        points.append((f"t={at:.2f}s", lambda h, r, t, at=at: t >= at))
    points += side * 2
    results = {"resumed": 0, "lost": 0, "duplicated": 0, "mismatch": 0}
    calls = []
    for label, trigger in points:
        o = _kill_at(work, trigger)
        resumed = o["status"] == "done"
        lost = not o["answer"] or o["rows"] != reference["rows"]
        duplicated = o["reports"] > reference["reports"] or o["ledger"] > reference["ledger"]
        mismatch = (
            o["path"] != reference["path"]
            or any(n.startswith("__") for n in o["path"])
            or o["done_ends"] != 1
        )
        results["resumed"] += resumed
        results["lost"] += lost
        results["duplicated"] += duplicated
        results["mismatch"] += mismatch
        calls.append(o["llm_calls"])
        flags = [n for n, bad in (("lost", lost), ("dup", duplicated), ("log", mismatch)) if bad]
        print(f"  kill at {label:<22} -> {o['status']:<10} {' '.join(flags) or 'ok'}")
    print(
        f"KILLS: {len(points)} points: resumed {results['resumed']}/{len(points)} "
        f"[{len(points)}/{len(points)}], lost {results['lost']} [0], duplicated side effects "
        f"{results['duplicated']} [0], event-log mismatches {results['mismatch']} [0]; "
        f"model calls recorded {min(calls)}-{max(calls)} (reference {reference['llm_calls']})"
    )


# --------------------------------------------------------------------------- secrets

CANARY = "sk-canary-" + "7f3a9c" * 6


def _page_text(at) -> str:
    """Everything a page shows as text, tables and JSON included."""
    parts = []
    for kind in (
        "markdown",
        "caption",
        "error",
        "warning",
        "info",
        "success",
        "code",
        "text",
        "json",
        "dataframe",
        "table",
        "text_input",
        "text_area",
        "expander",
    ):
        for element in getattr(at, kind, []):
            value = getattr(element, "value", None)
            value = value.to_csv() if hasattr(value, "to_csv") else value
            parts.append(f"{getattr(element, 'label', '')} {value}")
    return "\n".join(parts)


def secrets(work: Path) -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    found: dict[str, int] = {"store": 0, "checkpoints": 0, "exports": 0, "pages": 0, "logs": 0}
    log_text = io.StringIO()
    handler = logging.StreamHandler(log_text)
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG)
    runs = 0
    for system in systems():
        for echo in (False, True):
            home = Path(tempfile.mkdtemp(prefix="secret-", dir=work))
            server = LocalOpenAIServer(ScriptedChatModel).start()
            if echo:
                server.inject("slow:0", "echo_auth")  # the second call's error echoes the key
            err = io.StringIO()
            with redirect_stderr(err):
                _, _, _, _ = run_against(
                    server, home, system, view_of(system).examples[0], openai_api_key=CANARY
                )
            server.stop()
            runs += 1
            log_text.write(err.getvalue())
            store = Store.open(settings_for(home))
            (run,) = store.runs()
            for path in home.rglob("*"):
                if path.is_file() and CANARY.encode() in path.read_bytes():
                    found["checkpoints" if "checkpoint" in path.name else "store"] += 1
            found["exports"] += CANARY in json.dumps(store.export_run(run.id))
            env = {"STEPWISE_HOME": str(home), "OPENAI_API_KEY": CANARY}
            old = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            get_settings.cache_clear()  # the pages read this run's home
            st.cache_resource.clear()
            try:
                at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
                at.query_params.update({"run": run.id})
                at.run()
                at.switch_page("app_pages/history.py").run()
                found["pages"] += CANARY in _page_text(at)
            finally:
                for k, v in old.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
    found["logs"] = log_text.getvalue().count(CANARY)
    logging.getLogger().removeHandler(handler)
    print(
        f"SECRETS: {runs} runs with a canary key (half against a server echoing it in an "
        f"error): found in store {found['store']}, checkpoints {found['checkpoints']}, "
        f"exports {found['exports']}, pages {found['pages']}, logs {found['logs']} [all 0]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--malformed", type=int, default=0, help="cap the cases (0: all)")
    parser.add_argument("--repeats", type=int, default=2, help="frozen owner and restart")
    parser.add_argument(
        "--only",
        choices=["kills", "malformed", "disk", "secrets", *NEW_CASES],
        action="append",
    )
    args = parser.parse_args()
    parts = args.only or ["kills", "malformed", "disk", "secrets", *NEW_CASES]
    print(f"chaos.py {' '.join(parts)}: {settings_line(f'Python {sys.version.split()[0]}')}")
    with tempfile.TemporaryDirectory(prefix="stepwise-chaos-") as tmp:
        work = Path(tmp)
        os.environ["STEPWISE_HOME"] = str(work / "default")
        if "kills" in parts:
            kills(work, args.kills)
        if "malformed" in parts:
            malformed(work, args.malformed)
        if "disk" in parts:
            disk(work)
        if "secrets" in parts:
            secrets(work)
        new_cases(work, parts, args.repeats)


def new_cases(work: Path, parts: list[str], repeats: int) -> None:
    """Issue 34's cases, then their totals: double runs, lost runs, uncaught errors, keys
    shown (``bench/chaos_tally.py``)."""
    from bench import chaos_inputs, chaos_servers
    from tests.support_procs import postgres_server

    pg = postgres_server.start() if {"frozen", "restart"} & set(parts) else None
    try:
        if pg is not None:
            from bench import chaos_owners

            if "frozen" in parts:
                chaos_owners.frozen_owner(work, pg, repeats)
            if "restart" in parts:
                chaos_owners.database_restart(work, pg, repeats)
        if "imports" in parts:
            chaos_inputs.crafted_imports(work)
        if "hostile" in parts:
            chaos_servers.hostile_servers(work)
        if "diskfull" in parts:
            chaos_inputs.disk_full(work)
    finally:
        if pg is not None:
            pg.stop()
    if set(NEW_CASES) & set(parts):
        print(totals())


if __name__ == "__main__":
    main()
