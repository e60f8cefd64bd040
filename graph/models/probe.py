"""*Test connection*: ask the configured server what it supports, and say it in words.

Five small requests, each bounded by the request timeout: the model list (is it there,
how long a round trip takes), a reply under ``json_schema``, one under ``json_object``
with the schema, a tool call, and a short streamed reply (the server's speed in tokens a
second, and its wait before the first token). What it finds is learnt into the mode book,
exactly as a run would learn it, so the first run after a check asks the right way.

A check may be bounded as a whole (``bound_s``: no request outlives it) and stopped
between requests (``stop``); it says each step as it begins (``progress``), so a page can
run it in the background and show where it is. Stopped, it reports what it found so far.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import openai
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from graph.models.chat import describe_error
from graph.models.http_bounds import BoundedTransport2, bounded
from graph.models.modes import (
    OPENAI_API,
    STRUCTURED_WORDS,
    ModeBook,
    describe_structured,
    is_refusal,
)
from graph.models.replies import parse_json_object
from graph.models.server import ServerChatModel
from graph.models.structured import tight_schema
from graph.redaction import shown_text
from graph.settings import Settings

log = logging.getLogger(__name__)


class Ping(BaseModel):
    answer: Literal["pong"]
    ok: bool


# What a report keeps of the server's own text: model ids, and why a request failed.
MODEL_ID_CHARS, MODELS_KEPT, DETAIL_CHARS = 100, 50, 300
MODEL_LIST_BYTES = 5_000_000  # a list of thousands of models fits; 100 MB is not read

PING_PROMPT = 'Connection check. Reply with JSON only: {"answer": "pong", "ok": true}'
TOOL_PROMPT = "Connection check. Call the tool echo with the word pong. Do not answer in words."
SPEED_PROMPT = "Count from one to forty in words, separated by commas."
SPEED_TOKENS = 32  # enough for a rate, short on a slow server


def _echo(word: str) -> str:
    """Echo a word back."""
    return word


@dataclass
class ServerReport:
    server: str
    planner_model: str
    worker_model: str
    reachable: bool = False
    error: str = ""
    models: list[str] = field(default_factory=list)
    round_trip_s: float = 0.0
    json_schema: bool | None = None  # None: not tried (unreachable)
    json_schema_detail: str = ""
    json_object_schema: bool | None = None
    json_object_detail: str = ""
    tools: str | None = None  # "native" or "prompted"
    tools_detail: str = ""
    tokens_per_s: float | None = None  # the server's writing speed (a streamed reply)
    first_token_s: float | None = None  # seconds from the request to its first token
    speed_detail: str = ""  # why the speed was not measured
    stopped: str = ""  # why the check ended before its last step, in words

    def summary(self) -> str:
        """The report in words, one finding a line."""
        if not self.reachable:
            return f"{self.server}: {self.stopped or f'not reachable. {self.error}'}"
        listed = ", ".join(self.models[:8]) or "none listed"
        lines = [
            f"{self.server}: reachable, round trip {self.round_trip_s * 1000:.0f} ms.",
            f"models: {listed}.",
        ]
        for name, ok, detail in (
            ("json_schema", self.json_schema, self.json_schema_detail),
            ("json_object with the schema", self.json_object_schema, self.json_object_detail),
        ):
            verdict = "accepted" if ok else "refused" if ok is False else "not tried"
            lines.append(f"{name}: {verdict}{f' ({detail.rstrip(chr(46))})' if detail else ''}.")
        if self.tools:
            detail = self.tools_detail.rstrip(".")
            lines.append(f"tool calling: {self.tools}{f' ({detail})' if detail else ''}.")
        elif self.stopped:
            lines.append("tool calling: not tried.")
        if self.tokens_per_s is not None:
            lines.append(
                f"speed: {self.tokens_per_s:.1f} tokens/s (first token after "
                f"{self.first_token_s:.1f} s)."
            )
        elif self.speed_detail:
            lines.append(f"speed: not measured ({self.speed_detail.rstrip('.')}).")
        if self.stopped:
            lines.append(self.stopped)
        return "\n".join(lines)


class _Ended(Exception):
    """The check was stopped, or ran out of its time, before a step."""


def _model(settings: Settings, role: str, modes: ModeBook, **extra: Any) -> ServerChatModel:
    extra.setdefault("max_tokens", 64)
    return ServerChatModel(
        model=settings.planner_model if role == "planner" else settings.worker_model,
        api_key=settings.openai_api_key or "not-needed",
        base_url=settings.openai_base_url,
        timeout=settings.request_timeout_s,
        call_deadline_s=settings.request_timeout_s,
        max_retries=0,
        temperature=0,
        stream_replies=settings.stream_replies,
        stall_timeout_s=settings.stall_timeout_s,
        server_slots=settings.model_server_slots,
        modes=modes,
        **extra,
    )


def _try_json(settings: Settings, mode: str) -> tuple[bool, str]:
    """Whether a JSON reply under ``mode`` comes back and matches the schema, and why not."""
    model = _model(settings, "planner", ModeBook(), structured_setting=mode)
    request = {"name": "Ping", "schema": tight_schema(Ping)}
    started = time.perf_counter()
    try:
        reply = model.bind(json_request=request).invoke([HumanMessage(PING_PROMPT)])
    except openai.APIStatusError as exc:
        word = is_refusal(exc, STRUCTURED_WORDS)
        return False, f"HTTP {exc.status_code}" + (f" naming {word}" if word else "")
    except Exception as exc:  # a timeout, a dropped connection: say so, in words
        log.info("model server check step failed: %r", exc)
        return False, shown_text(describe_error(exc, settings), DETAIL_CHARS)
    took = f"{(time.perf_counter() - started) * 1000:.0f} ms"
    try:
        Ping.model_validate(parse_json_object(str(reply.content)))
    except ValueError:
        return False, f"the reply did not follow the schema ({took})"
    return True, took


def new_report(settings: Settings) -> ServerReport:
    """An empty report on the server ``settings`` name."""
    server = (settings.openai_base_url or OPENAI_API).rstrip("/")
    return ServerReport(server, settings.planner_model, settings.worker_model)


def check_server(
    settings: Settings,
    modes: ModeBook,
    *,
    bound_s: float | None = None,
    stop: threading.Event | None = None,
    progress: Callable[[str], None] | None = None,
    report: ServerReport | None = None,
) -> ServerReport:
    """What the configured server supports; learnt into ``modes``. ``bound_s``: seconds
    the whole check may take (each request's timeout is cut to what is left);
    ``stop``: set, the check ends before its next request; ``progress``: told each step;
    ``report``: filled in as the check goes (a caller may read it before the end)."""
    report = report or new_report(settings)
    try:
        _check(report, settings, modes, _Steps(settings, bound_s, stop, progress))
    except _Ended as ended:
        report.stopped = str(ended)
    return report


class _Steps:
    """The check's steps: each begins by saying so, and none begins (nor is an answer
    counted) once the check is stopped or out of time."""

    def __init__(
        self,
        settings: Settings,
        bound_s: float | None,
        stop: threading.Event | None,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.settings = settings
        self.bound_s = bound_s
        self.ends_at = time.monotonic() + bound_s if bound_s else None
        self.stop = stop
        self.progress = progress
        self.doing = ""

    def still_on(self, what: str = "") -> float | None:
        """Seconds left (None: unbounded); _Ended when stopped or out of time."""
        if self.stop is not None and self.stop.is_set():
            raise _Ended(f"Cancelled while {self.doing or what}.")
        left = self.ends_at - time.monotonic() if self.ends_at is not None else None
        if left is not None and left <= 0:
            raise _Ended(f"Gave up after {self.bound_s:g} s, while {self.doing or what}.")
        return left

    def begin(self, what: str) -> Settings:
        """Begin a step: the settings its requests use (timeout cut to the time left)."""
        left = self.still_on(what)
        self.doing = what
        if self.progress is not None:
            self.progress(what)
        if left is None or left >= self.settings.request_timeout_s:
            return self.settings
        return self.settings.model_copy(update={"request_timeout_s": max(left, 0.1)})


def _check(report: ServerReport, settings: Settings, modes: ModeBook, steps: _Steps) -> None:
    server = report.server
    now = steps.begin("listing the models")
    client = openai.OpenAI(
        api_key=(
            settings.openai_api_key.get_secret_value() if settings.openai_api_key else "not-needed"
        ),
        base_url=settings.openai_base_url,
        max_retries=0,
        timeout=now.request_timeout_s,
        http_client=openai.DefaultHttpxClient(transport=BoundedTransport2()),
    )
    started = time.perf_counter()
    # in all within the request timeout (a server dripping a byte at a time too), and
    # at most MODEL_LIST_BYTES read
    with bounded(now.request_timeout_s, MODEL_LIST_BYTES) as bounds:
        try:  # ids as the server wrote them: a hostile one may echo the key it was sent
            listed = [shown_text(m.id, MODEL_ID_CHARS) for m in client.models.list()]
        except Exception as exc:  # said in the report, in words
            log.info("model server check step failed: %r", exc)
            steps.still_on()
            if bounds.why:
                said = f"The server at {server} {bounds.why} (the model list)."
            elif isinstance(exc, openai.OpenAIError):
                said = describe_error(exc, now)
            else:  # the client could not read the answer as a list of models
                said = (
                    f"The server at {server} answered, but not with a list of models: is it "
                    "an OpenAI-compatible server (GET /models)?"
                )
            report.error = shown_text(said, DETAIL_CHARS)
            return
        finally:
            client.close()
    steps.still_on()
    report.models = sorted(listed)[:MODELS_KEPT]
    report.round_trip_s = time.perf_counter() - started
    report.reachable = True

    found = _try_json(steps.begin("trying json_schema"), "json_schema")
    steps.still_on()
    report.json_schema, report.json_schema_detail = found
    found = _try_json(steps.begin("trying json_object with the schema"), "json_object")
    steps.still_on()
    report.json_object_schema, report.json_object_detail = found
    best = (
        "json_schema"
        if report.json_schema
        else "json_object"
        if report.json_object_schema
        else None
    )
    if best:
        note = (
            None
            if best == "json_schema"
            else (
                f"Test connection: the server refused json_schema ({report.json_schema_detail}); "
                f"use {describe_structured(best)}."
            )
        )
        modes.learn(server, settings.planner_model, structured=best, note=note)

    now = steps.begin("trying a tool call")
    tool = StructuredTool.from_function(_echo, name="echo")
    model = _model(now, "worker", modes)
    try:
        reply = model.bind_tools([tool]).invoke([HumanMessage(TOOL_PROMPT)])
        steps.still_on()
        report.tools = (reply.response_metadata.get("stepwise") or {}).get("tools")
        report.tools_detail = (reply.response_metadata.get("stepwise") or {}).get("tools_why") or (
            "the model called the tool"
            if reply.tool_calls
            else "the model did not call the tool either way"
        )
    except _Ended:
        raise
    except Exception as exc:  # said in the report, in words
        log.info("model server check step failed: %r", exc)
        steps.still_on()
        report.tools_detail = shown_text(describe_error(exc, now), DETAIL_CHARS)
    _measure_speed(report, settings, modes, steps)


class _TokenTimes(BaseCallbackHandler):
    """When each streamed token came."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def on_llm_new_token(self, token: str | list[str | dict[str, Any]], **kwargs: Any) -> None:
        self.times.append(time.perf_counter())


def _measure_speed(
    report: ServerReport, settings: Settings, modes: ModeBook, steps: _Steps
) -> None:
    """Tokens a second of a short streamed reply, and the wait for its first token: a slow
    server is told apart from a dead one before a run finds out."""
    now = steps.begin("measuring the speed")
    if not now.stream_replies:
        report.speed_detail = "replies are not streamed (STEPWISE_STREAM_REPLIES=false)"
        return
    times = _TokenTimes()
    model = _model(now, "worker", modes, max_tokens=SPEED_TOKENS)
    started = time.perf_counter()
    try:
        model.invoke([HumanMessage(SPEED_PROMPT)], config={"callbacks": [times]})
    except Exception as exc:  # said in the report, in words
        log.info("model server check step failed: %r", exc)
        steps.still_on()
        report.speed_detail = shown_text(describe_error(exc, now), DETAIL_CHARS)
        return
    steps.still_on()
    if len(times.times) < 2 or times.times[-1] <= times.times[0]:
        report.speed_detail = f"the reply came in {len(times.times)} piece(s)"
        return
    report.first_token_s = times.times[0] - started
    report.tokens_per_s = (len(times.times) - 1) / (times.times[-1] - times.times[0])
