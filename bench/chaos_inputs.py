"""Chaos cases of issue 34 on what comes in and where it goes: crafted import files and a
full disk. Called by ``bench/chaos.py``.

1. **Crafted imports.** Malformed run exports (``tests/import_cases.py``: not objects,
   bad times and sequences, deep nesting, NaN, a path in an id...), design files and eval
   sets, each fed to the function the page's upload calls. Each must be refused in a
   sentence (``ImportProblem`` / ``EvalSetError``) with nothing stored; a canary key in a
   crafted field must not be quoted back. Then the History and Run pages are drawn
   (AppTest) over what was stored: no page error.
2. **Disk full.** A small tmpfs as STEPWISE_HOME, in a mount namespace of a child process
   (``unshare -Urm``: no loop device, no root needed where user namespaces are allowed),
   filled to leave 0 KB to 1 MB free; a run is started there (the service, as the app
   does) and the CLI is run there. Counted: an exception or traceback out of either, a raw
   reason, and a run left ``queued`` or ``running`` once its worker has ended. Then, as
   root, the same on PostgreSQL: its database's tablespace on a small tmpfs that fills
   (``tests/support_procs/postgres_small_disk.py``), at a run's start and mid-run.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.chaos_tally import CANARY, Tally, is_raw, show, tally  # noqa: E402
from graph.errors import StepwiseError  # noqa: E402
from graph.settings import Settings, get_settings  # noqa: E402

DISK_QUESTION = "What caused the dot-com crash? Save a report."
FREE_KB = (0, 16, 64, 256, 1024)
TMPFS_MB = 8
CLI_WAIT_S = 60  # a CLI run of the offline model takes seconds; past this it hangs


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _design_cases() -> list[tuple[str, str]]:
    from graph.kernel.design import Design, export_design

    def with_design(**changes: Any) -> str:
        data = export_design(Design())
        data["design"].update(changes)
        return json.dumps(data)

    def _older_shape(**changes: Any) -> str:  # before systems owned their settings
        data = export_design(Design())
        data["design"].pop("settings")
        data["design"].update(changes)
        return json.dumps(data)

    return [
        ("not an object", "[1, 2]"),
        ("not JSON", "{design"),
        ("nested 100000 deep", '{"format": "stepwise-design", "design": ' + _nested(100_000) + "}"),
        ("timeout NaN", with_design(approval_timeout_s=math.nan)),
        ("timeout Infinity", with_design(approval_timeout_s=math.inf)),
        ("no agent", with_design(enabled_agents=[])),
        ("unknown agent", with_design(enabled_agents=["hal"])),
        ("unknown system", with_design(system="skynet")),
        # A system's setting lives in its settings now; a file giving one also at the top,
        # where older designs kept it, has the new place win (by design: see
        # test_a_setting_given_in_its_new_place_wins_over_an_old_field).
        ("replans text", with_design(settings={"plan_execute": {"max_replans": "many"}})),
        ("replans text, older shape", _older_shape(max_replans="many")),
        ("canary in a field", with_design(system=CANARY)),
    ]


def _eval_set_cases() -> list[tuple[str, str]]:
    from graph.service.eval_sets import export_eval_set, load_starter

    def with_set(change) -> str:
        data = export_eval_set(load_starter())
        change(data)
        return json.dumps(data)

    return [
        ("not an object", '"eval"'),
        ("not JSON", "{eval"),
        ("nested 100000 deep", '{"format": "stepwise-eval-set", "x": ' + _nested(100_000) + "}"),
        ("no eval_set", with_set(lambda d: d.pop("eval_set"))),
        ("questions a text", with_set(lambda d: d["eval_set"].update(questions="q"))),
        ("question a number", with_set(lambda d: d["eval_set"]["questions"][0].update(text=5))),
        ("NaN in metadata", with_set(lambda d: d["eval_set"].update(metadata={"x": math.nan}))),
        ("version from the future", with_set(lambda d: d.update(version=99))),
        ("canary as the version", with_set(lambda d: d.update(version=CANARY))),
    ]


def _refused(found: Tally, kind: str, name: str, attempt, count) -> None:
    """One crafted file: refused in words with nothing stored, or counted."""
    before = count()
    found.tried += 1
    try:
        attempt()
        found.lost += 1  # taken in although malformed
        found.note(f"{kind} / {name}: accepted")
        return
    except StepwiseError as exc:
        message = str(exc)
    except Exception as exc:  # not a refusal in words: what the bench looks for
        found.uncaught += 1
        found.note(f"{kind} / {name}: {type(exc).__name__}: {str(exc)[:100]}")
        return
    if count() != before:
        found.lost += 1
        found.note(f"{kind} / {name}: refused, but something was stored")
    if is_raw(message):
        found.uncaught += 1
        found.note(f"{kind} / {name}: raw refusal: {message[:120]}")
    if CANARY in message:
        found.keys += 1
        found.note(f"{kind} / {name}: the key quoted back: {message[:120]}")


def crafted_imports(work: Path) -> None:
    from graph.service.eval_sets import import_eval_set
    from graph.service.import_checks import check_design_file, load_json
    from graph.service.store import Store
    from tests.import_cases import MALFORMED, valid_export

    found = tally("crafted imports")
    home = work / "imports"
    home.mkdir()
    settings = Settings(home=home)
    store = Store.open(settings)
    valid = valid_export()
    store.import_run(valid)  # the pages below must still show it
    runs = [(name, text) for name, text, _ in MALFORMED]
    runs.append(
        (
            "canary as created_at",
            json.dumps({**valid, "run": {**valid["run"], "created_at": CANARY}}),
        )
    )
    for name, text in runs:
        _refused(
            found,
            "run",
            name,
            lambda t=text: store.import_run_noting(load_json(t)),
            lambda: len(store.runs()),
        )
    for name, text in _design_cases():
        _refused(
            found,
            "design",
            name,
            lambda t=text: check_design_file(load_json(t), settings),
            lambda: 0,
        )
    for name, text in _eval_set_cases():
        _refused(found, "eval set", name, lambda t=text: import_eval_set(t), lambda: 0)
    _pages(found, home, valid["run"]["id"])
    store.close()
    show(found)


def _pages(found: Tally, home: Path, run_id: str) -> None:
    """The Run and History pages drawn over the store the crafted files were fed to."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    old = os.environ.get("STEPWISE_HOME")
    os.environ["STEPWISE_HOME"] = str(home)
    get_settings.cache_clear()
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params.update({"run": run_id})
        at.run()
        errors = list(at.exception)
        at.switch_page("app_pages/history.py").run()
        errors += list(at.exception)
    finally:
        os.environ["STEPWISE_HOME"] = old or ""
        get_settings.cache_clear()
    found.tried += 2
    found.uncaught += len(errors)
    for error in errors:
        found.note(f"page error: {str(getattr(error, 'value', error))[:120]}")


# --------------------------------------------------------------------------- disk full


def disk_full(work: Path) -> None:
    found = tally("disk full")
    if not shutil.which("unshare"):
        found.note("skipped: no unshare(1) on this machine")
        show(found)
        return
    for free_kb in FREE_KB:
        mount = work / f"full-{free_kb}"
        mount.mkdir()
        child = subprocess.run(
            ["unshare", "-Urm", sys.executable, __file__, "--disk-child", str(mount), str(free_kb)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )
        lines = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
        if child.returncode != 0 or len(lines) < 2:
            found.tried += 1
            found.uncaught += 1
            found.note(f"{free_kb} KB free: the child failed: {child.stderr.strip()[-200:]}")
        for o in lines:
            found.tried += 1
            found.uncaught += o["uncaught"]
            found.lost += o["left_running"]
            found.keys += o["keys"]
            found.note(f"{free_kb} KB free, {o['what']}: {o['said'][:150]}", limit=12)
    _postgres_disk_full(found, work)
    show(found)


def _postgres_disk_full(found: Tally, work: Path) -> None:
    """A PostgreSQL store whose tablespace fills (``tests/support_procs/postgres_small_disk``,
    root only): a run started on the full disk, then one the disk fills under."""
    from tests.support_procs import postgres_small_disk

    if why := postgres_small_disk.unusable():
        found.note(f"PostgreSQL part skipped: {why}", limit=14)
        return
    from graph.kernel.design import Design
    from graph.models.scripted import ScriptedChatModel
    from graph.service.run_service import RunService
    from graph.service.store import Store

    server = postgres_small_disk.start()
    try:
        settings = Settings(
            home=work / "pg-full-home",  # the tools' files: on the ordinary disk
            provider="scripted",
            openai_api_key=CANARY,
            database_url=server.create_database(),
        )
        service = RunService(
            Store.open(settings),
            settings,
            timeout_tick_s=0,
            model_factory=lambda r: ScriptedChatModel(delay_s=0.2),
        )
        question = "What caused the dot-com crash?"
        for what, fill_first in (("PostgreSQL, start", True), ("PostgreSQL, mid-run", False)):
            found.tried += 1
            said, run_id = "", ""
            try:
                if fill_first:
                    server.fill()
                run_id = service.start(question, Design())
                if not fill_first:
                    _until(lambda rid=run_id: len(service.store.events(rid)) >= 4)
                    server.fill()
                record = service.wait(run_id, timeout=120)
                said = f"run {record.status}: {record.reason}"
            except StepwiseError as exc:
                said = f"start refused: {exc}"
            except Exception as exc:  # what the bench looks for
                said, found.uncaught = f"raised {type(exc).__name__}: {exc}", found.uncaught + 1
            server.free()
            if run_id:  # once there is room: how the store says it ended
                _until(
                    lambda rid=run_id: service.store.run(rid).status not in ("queued", "running")
                )
                record = service.store.run(run_id)
                found.lost += record.status in ("queued", "running")
                said += f" (then {record.status})"
            found.uncaught += is_raw(said)
            found.keys += CANARY in said
            found.note(f"{what}: {said[:150]}", limit=14)
        service.shutdown(wait=False)
    finally:
        server.stop()


def _until(predicate: Any, timeout: float = 60.0) -> None:
    import time

    deadline = time.time() + timeout
    while time.time() < deadline and not predicate():
        time.sleep(0.05)


def _text(out: bytes | str | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else out or ""


def _fill(mount: Path, free_kb: int) -> None:
    stat = os.statvfs(mount)
    free = stat.f_bavail * stat.f_frsize - free_kb * 1024
    with open(mount / "filler", "wb") as out:
        while free > 0:
            out.write(b"\0" * min(free, 1 << 20))
            free -= 1 << 20


def _disk_child(mount: Path, free_kb: int) -> None:
    """Inside a mount namespace: a tmpfs on ``mount``, nearly full; a run, then the CLI."""
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MB}m", "tmpfs", str(mount)], check=True
    )
    home = mount / "home"
    home.mkdir()
    os.environ.update({"STEPWISE_HOME": str(home), "STEPWISE_PROVIDER": "scripted"})
    from graph.kernel.design import Design
    from graph.models.scripted import ScriptedChatModel
    from graph.service.run_service import RunService
    from graph.service.store import Store

    settings = Settings(home=home, provider="scripted", openai_api_key=CANARY)
    store = Store.open(settings)  # made while there is room, as an app running for a while
    service = RunService(
        store, settings, timeout_tick_s=0, model_factory=lambda r: ScriptedChatModel(delay_s=0.05)
    )
    _fill(mount, free_kb)
    said, uncaught, left, run_id = "", 0, 0, ""
    try:
        run_id = service.start(DISK_QUESTION, Design(approvals={"report_writer": "never"}))
        record = service.wait(run_id, timeout=120)
        said = f"run {record.status}: {record.reason}"
        uncaught = is_raw(record.reason)
        os.remove(mount / "filler")  # room again: what the store says of the run now
        left = Store.open(settings).run(run_id).status in ("queued", "running")
    except StepwiseError as exc:
        said = f"start refused: {exc}"
        uncaught = is_raw(str(exc))
    except Exception as exc:  # what the bench looks for
        said, uncaught = f"start raised {type(exc).__name__}: {exc}", 1
    service.shutdown(wait=False)
    print(
        json.dumps(
            {
                "what": "run",
                "said": said,
                "uncaught": int(uncaught),
                "left_running": int(left),
                "keys": int(CANARY in said),
            }
        ),
        flush=True,
    )
    if (mount / "filler").exists():
        os.remove(mount / "filler")
    _fill(mount, free_kb)
    try:
        cli = subprocess.run(
            [sys.executable, "-m", "graph", "run", DISK_QUESTION],
            capture_output=True,
            text=True,
            timeout=CLI_WAIT_S,
            cwd=ROOT,
            env={**os.environ, "OPENAI_API_KEY": CANARY},
        )
    except subprocess.TimeoutExpired as hung:  # killed by run(): what it printed, and why
        cli = subprocess.CompletedProcess(
            hung.cmd, -9, _text(hung.stdout), _text(hung.stderr) + f"\nhung > {CLI_WAIT_S} s"
        )
    text = (cli.stderr.strip() or cli.stdout.strip()).splitlines()
    last = text[-1] if text else ""
    os.remove(mount / "filler")
    left = sum(
        r.status in ("queued", "running") and r.id != run_id for r in Store.open(settings).runs()
    )
    print(
        json.dumps(
            {
                "what": f"CLI (exit {cli.returncode})",
                "said": last,
                "uncaught": int("Traceback" in cli.stderr or is_raw(last) or cli.returncode < 0),
                "left_running": left,
                "keys": int(CANARY in cli.stderr + cli.stdout),
            }
        ),
        flush=True,
    )


if __name__ == "__main__" and sys.argv[1:2] == ["--disk-child"]:
    _disk_child(Path(sys.argv[2]), int(sys.argv[3]))
