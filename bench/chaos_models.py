"""The model-server parts of ``bench/chaos.py`` (malformed output, huge replies), and
what its cases share: how a run is played against the fake server, and what counts as a
raw reason. See ``bench/chaos.py`` for how to run them.

2. **Malformed output.** Each system runs against the real ``ChatOpenAI`` client over
   HTTP to the fake server, whose N-th reply is corrupted (broken JSON, prose, empty,
   deep nesting, wrong shapes, unknown agents or tools, control characters, transport
   faults). Crashes (an exception out of the service), runs hung > 60 s, and reasons
   that are raw exception text instead of a sentence are counted.
3. **Disk.** A run whose model adds 2 MB to every reply: bytes in STEPWISE_HOME after it.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.tool import invalid_tool_call
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from graph.kernel.design import Design
from graph.kernel.system import systems
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer
from ui.views import view_of

WAIT_S = 60  # a run not ended after this long is "hung"

# A reason that is raw exception text rather than a sentence about what happened.
RAW_REASON = re.compile(
    r"Traceback|File \"|\b[A-Z]\w*(Error|Exception)\b|\{'|\[\{|<[a-z_.]+ object at 0x|"
    r"\\x[0-9a-f]{2}|\bNone\b|NoneType|maximum recursion depth|Expecting value|"
    r"has no attribute|codec can't|index out of range|not subscriptable|unexpected keyword|"
    r"validation error for|Input should be|line \d+ column \d+ \(char"
)


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def settings_for(home: Path, **more: Any) -> Settings:
    return Settings(home=home, **more)


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


def as_chunk(message: Any) -> ChatGenerationChunk:
    """A whole reply as the one chunk the fake server streams (replies are streamed):
    a chunk carries its tool calls, broken ones too, as tool-call chunks."""
    calls = [*message.tool_calls, *message.invalid_tool_calls]
    return ChatGenerationChunk(
        message=AIMessageChunk(
            content=message.content,
            tool_call_chunks=[
                {
                    "name": c.get("name"),
                    "args": c["args"] if isinstance(c.get("args"), str) else json.dumps(c["args"]),
                    "id": c.get("id"),
                    "index": i,
                }
                for i, c in enumerate(calls)
            ],
        )
    )


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
        yield as_chunk(self._generate(messages, stop=stop, **kwargs).generations[0].message)


def run_against(
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
    cfg = settings_for(home, **{**base, **settings})
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
        question = view_of(system).examples[0]
        try:
            status, reason, crashed, was_hung = run_against(server, home, system, question)
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
        yield as_chunk(self._generate(messages, stop=stop, **kwargs).generations[0].message)


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
                status, reason, _, _ = run_against(
                    server, home, system, view_of(system).examples[0], request_timeout_s=60
                )
            finally:
                server.stop()
            size = dir_bytes(home)
            print(
                f"DISK: {system}, 2 MB added to {which}: {size / 1e6:.1f} MB in "
                f"STEPWISE_HOME [< 20 MB] ({status}: {reason[:70]})"
            )
