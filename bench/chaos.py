"""Chaos: processes killed mid-run, malformed model output, huge replies and leaked
secrets, measured in one go. Prints figures only (issue #14's targets in brackets).

    python bench/chaos.py [--kills 20] [--malformed 108]

1. **Kills.** A host process (``tests/support_procs/service_host.py``, a RunService as
   the app runs it) runs a plan_execute question that saves a report; it is SIGKILLed at
   points spread over the run and at the side effect (the report file appearing, the
   ledger row appearing); a new service resumes the run. Each outcome is compared with an
   unkilled reference run of the same deterministic offline model: resumed to ``done``,
   lost (no answer, or a step that ended differently), duplicated side effects (report
   files or ledger rows beyond the reference), event-log mismatches (the stored path
   through the graph differs from the reference's, a ``__pseudo__`` node was stored, or
   not exactly one ``done`` end event).
2. **Malformed output.** Each system runs against the real ``ChatOpenAI`` client over
   HTTP to the fake server, whose N-th reply is corrupted (broken JSON, prose, empty,
   deep nesting, wrong shapes, unknown agents or tools, control characters, transport
   faults). Crashes (an exception out of the service), runs hung > 60 s, and reasons
   that are raw exception text instead of a sentence are counted.
3. **Disk.** A run whose model adds 2 MB to every reply: bytes in STEPWISE_HOME after it.
4. **Secrets.** A canary API key, and a server that echoes the Authorization header in its
   error: the canary is looked for in the store and checkpoint files, an export, the
   History page as rendered, and everything logged.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.messages.tool import invalid_tool_call  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult  # noqa: E402

import graph.registry  # noqa: E402,F401  (registers the systems)
from graph.kernel.design import Design  # noqa: E402
from graph.kernel.system import get_system, systems  # noqa: E402
from graph.models.scripted import ScriptedChatModel  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings, get_settings  # noqa: E402
from tests.support_procs.fake_server import LocalOpenAIServer  # noqa: E402

HOST = ROOT / "tests" / "support_procs" / "service_host.py"
KILL_QUESTION = "What caused the dot-com crash? Save a report."
KILL_APPROVALS = '{"report_writer": "never"}'
KILL_DELAY_S = 0.25  # per scripted model call in the host: a run of a few seconds
WAIT_S = 60  # a run not ended after this long is "hung"

# A reason that is raw exception text rather than a sentence about what happened.
RAW_REASON = re.compile(
    r"Traceback|File \"|\b[A-Z]\w*(Error|Exception)\b|\{'|\[\{|<[a-z_.]+ object at 0x|"
    r"\\x[0-9a-f]{2}|\bNone\b|NoneType|maximum recursion depth|Expecting value|"
    r"has no attribute|codec can't|index out of range|not subscriptable|unexpected keyword|"
    r"validation error for|Input should be|line \d+ column \d+ \(char"
)


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _settings(home: Path, **more: Any) -> Settings:
    return Settings(home=home, **more)


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
        service = RunService(Store.open(_settings(home)), _settings(home))
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
    store = Store.open(_settings(home))
    while store.run(run_id).status in ("queued", "running"):
        time.sleep(0.05)
    duration = time.monotonic() - started
    proc.kill()
    proc.wait()
    service = RunService(Store.open(_settings(home)), _settings(home), claim_orphans=False)
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


# --------------------------------------------------------------------------- malformed


def _deep(depth: int = 5000) -> str:
    return "[" * depth + "]" * depth


CORRUPTIONS: dict[str, Callable[[AIMessage], AIMessage]] = {
    "broken JSON": lambda m: AIMessage(content='{"steps": [{"agent": "web_res'),
    "prose": lambda m: AIMessage(content="Sure! I would be glad to help with that."),
    "empty": lambda m: AIMessage(content=""),
    "deep nesting": lambda m: AIMessage(content=_deep()),
    "wrong shape": lambda m: AIMessage(content='{"steps": "lots of them", "next": 7}'),
    "JSON array": lambda m: AIMessage(content="[1, 2, 3]"),
    "unknown agent": lambda m: AIMessage(
        content=json.dumps(
            {
                "steps": [{"agent": "ghost", "action": "haunt"}],
                "next_agent": "ghost",
                "subtasks": [{"team": "ghost_team", "instruction": "boo"}],
            }
        )
    ),
    "control characters": lambda m: AIMessage(content="\x00\x01\x02\x1b[31m\ufffd\ufffd"),
    "100 KB of one word": lambda m: AIMessage(content="data " * 20_000),
    "unknown tool": lambda m: AIMessage(
        content="", tool_calls=[{"name": "format_disk", "args": {"really": True}, "id": "c1"}]
    ),
    "broken tool arguments": lambda m: AIMessage(
        content="",
        invalid_tool_calls=[invalid_tool_call(name="run_sql", args='{"sql": "SEL', id="c2")],
    ),
    "null content, no calls": lambda m: AIMessage(content=" \n\t "),
}
# Faults of the HTTP answer itself, served by the fake server (tests/support_procs/fake_server.py).
TRANSPORT = (
    "http_500",
    "http_429",
    "disconnect",
    "half_body",
    "never_answer",
    "drip:1",
    "deep_json",
    "body_invalid_utf8",
    "body_not_json",
    "body_html",
    "body_empty",
    "body_no_choices",
    "body_null_choices",
    "body_empty_choices",
    "body_deep_nesting",
)
CALL_DEADLINE_S = 8  # a server that never answers or drips is given up after this


class CorruptingModel(ScriptedChatModel):
    """The offline model behind the fake server, with its N-th reply corrupted."""

    corrupt_at: int = 0
    corruption: str = ""
    calls: int = 0

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        self.calls += 1
        if self.calls == self.corrupt_at and self.corruption in CORRUPTIONS:
            message = CORRUPTIONS[self.corruption](result.generations[0].message)
            return ChatResult(generations=[ChatGeneration(message=message)])
        return result

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        message = self._generate(messages, stop=stop, **kwargs).generations[0].message
        yield ChatGenerationChunk(message=message)  # one chunk is enough for the server


def _run_against(
    server: LocalOpenAIServer, home: Path, system: str, question: str, **settings: Any
) -> tuple[str, str, bool, bool]:
    """(status, reason, crashed, hung) of one run through the real client."""
    base = dict(
        provider="openai",
        openai_base_url=server.base_url,
        openai_api_key="sk-chaos-not-a-real-key",
        max_retries=0,
        request_timeout_s=20,
        model_call_deadline_s=CALL_DEADLINE_S,
        planner_model="stepwise-local",
        worker_model="stepwise-local",
    )
    cfg = _settings(home, **{**base, **settings})
    service = RunService(Store.open(cfg), cfg, timeout_tick_s=0)
    crashed = hung = False
    status = reason = ""
    try:
        design = Design(system=system, approvals={})
        run_id = service.start(question, design)
        deadline = time.monotonic() + WAIT_S
        try:
            while True:  # a human approves whatever is asked, so the run goes all the way
                record = service.wait(run_id, timeout=max(deadline - time.monotonic(), 0.1))
                status, reason = record.status, record.reason
                asked = [p for p in service.pending_approvals() if p["run_id"] == run_id]
                if status != "waiting" or not asked or time.monotonic() > deadline:
                    break
                for item in asked:
                    service.decide(run_id, item["id"], "approve")
        except TimeoutError:
            hung = True
            service.cancel(run_id)
    except Exception as exc:  # a crash: the service let an exception out
        crashed, reason = True, f"{type(exc).__name__}: {exc}"
    finally:
        service.shutdown(wait=False)
    return status, reason, crashed, hung


def malformed(work: Path, limit: int) -> None:
    cases: list[tuple[str, str, int]] = []
    for name in systems():
        for corruption in list(CORRUPTIONS) + list(TRANSPORT):
            for at in (1, 2, 3):
                cases.append((name, corruption, at))
    cases = cases[:limit] if limit else cases
    crashes = hung = raw = 0
    examples: list[str] = []
    started = time.monotonic()
    for system, corruption, at in cases:
        home = Path(tempfile.mkdtemp(prefix="bad-", dir=work))
        server = LocalOpenAIServer(
            lambda c=corruption, a=at: CorruptingModel(corrupt_at=a, corruption=c)
        ).start()
        if corruption in TRANSPORT:
            server.inject(*(["slow:0"] * (at - 1) + [corruption]))
        question = get_system(system).examples[0]
        try:
            status, reason, crashed, was_hung = _run_against(server, home, system, question)
        finally:
            server.stop()
        is_raw = bool(reason and RAW_REASON.search(reason))
        crashes += crashed
        hung += was_hung
        raw += is_raw
        if (crashed or was_hung or is_raw) and len(examples) < 8:
            examples.append(f"  {system} / {corruption} @ call {at}: {status}: {reason[:160]}")
    print("\n".join(examples))
    print(
        f"MALFORMED: {len(cases)} cases across {len(systems())} systems in "
        f"{time.monotonic() - started:.0f} s: crashes {crashes} [0], hung > {WAIT_S} s "
        f"{hung} [0], raw-text reasons {raw} [0]"
    )


# --------------------------------------------------------------------------- disk


class HugeReplies(ScriptedChatModel):
    """The offline model, with 2 MB added to every reply (to a JSON reply's longest
    string, so it still parses)."""

    pad_bytes: int = 2_000_000
    pad_json: bool = True  # also JSON replies (plans, routing): the cap then breaks them

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        message = result.generations[0].message
        text = message.content if isinstance(message.content, str) else ""
        pad = " " + "padding " * (self.pad_bytes // 8)
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            if not self.pad_json:
                return result
            _pad_longest(data, pad)
            text = json.dumps(data)
        elif not message.tool_calls:
            text = text + pad
        padded = message.model_copy(update={"content": text})
        return ChatResult(generations=[ChatGeneration(message=padded)])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        yield ChatGenerationChunk(
            message=self._generate(messages, stop=stop, **kwargs).generations[0].message
        )


def _pad_longest(data: Any, pad: str) -> None:
    best: tuple[int, Any, Any] = (-1, None, None)

    def walk(node: Any) -> None:
        nonlocal best
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, str) and len(value) > best[0]:
                best = (len(value), node, key)
            elif isinstance(value, (dict, list)):
                walk(value)

    walk(data)
    if best[1] is not None:
        best[1][best[2]] += pad


def disk(work: Path) -> None:
    """Every reply 2 MB longer (JSON ones too: cut to the cap they no longer parse, and the
    run fails in words), then prose replies only (the run goes to its end)."""
    for pad_json, which in ((True, "every reply"), (False, "prose replies")):
        for system in systems():
            home = Path(tempfile.mkdtemp(prefix="disk-", dir=work))
            server = LocalOpenAIServer(lambda p=pad_json: HugeReplies(pad_json=p)).start()
            try:
                status, reason, _, _ = _run_against(
                    server, home, system, get_system(system).examples[0], request_timeout_s=60
                )
            finally:
                server.stop()
            size = _dir_bytes(home)
            print(
                f"DISK: {system}, 2 MB added to {which}: {size / 1e6:.1f} MB in "
                f"STEPWISE_HOME [< 20 MB] ({status}: {reason[:70]})"
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
                _, _, _, _ = _run_against(
                    server, home, system, get_system(system).examples[0], openai_api_key=CANARY
                )
            server.stop()
            runs += 1
            log_text.write(err.getvalue())
            store = Store.open(_settings(home))
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
    parser.add_argument(
        "--only", choices=["kills", "malformed", "disk", "secrets"], action="append"
    )
    args = parser.parse_args()
    parts = args.only or ["kills", "malformed", "disk", "secrets"]
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


if __name__ == "__main__":
    main()
