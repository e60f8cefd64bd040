"""*Test connection*: ask the configured server what it supports, and say it in words.

Four small requests, each bounded by the request timeout: the model list (is it there,
how long a round trip takes), a reply under ``json_schema``, one under ``json_object``
with the schema, and a tool call. What it finds is learnt into the mode book, exactly
as a run would learn it, so the first run after a check asks the server the right way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import openai
from langchain_core.messages import HumanMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from graph.models.chat import describe_error
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


class Ping(BaseModel):
    answer: Literal["pong"]
    ok: bool


# What a report keeps of the server's own text: model ids, and why a request failed.
MODEL_ID_CHARS, MODELS_KEPT, DETAIL_CHARS = 100, 50, 300

PING_PROMPT = 'Connection check. Reply with JSON only: {"answer": "pong", "ok": true}'
TOOL_PROMPT = "Connection check. Call the tool echo with the word pong. Do not answer in words."


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

    def summary(self) -> str:
        """The report in words, one finding a line."""
        if not self.reachable:
            return f"{self.server}: not reachable. {self.error}"
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
        return "\n".join(lines)


def _model(settings: Settings, role: str, modes: ModeBook, **extra) -> ServerChatModel:
    return ServerChatModel(
        model=settings.planner_model if role == "planner" else settings.worker_model,
        api_key=settings.openai_api_key or "not-needed",
        base_url=settings.openai_base_url,
        timeout=settings.request_timeout_s,
        max_retries=0,
        temperature=0,
        max_tokens=64,
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
        return False, shown_text(describe_error(exc, settings), DETAIL_CHARS)
    took = f"{(time.perf_counter() - started) * 1000:.0f} ms"
    try:
        Ping.model_validate(parse_json_object(str(reply.content)))
    except ValueError:
        return False, f"the reply did not follow the schema ({took})"
    return True, took


def check_server(settings: Settings, modes: ModeBook) -> ServerReport:
    """What the configured server supports; learnt into ``modes``."""
    server = (settings.openai_base_url or OPENAI_API).rstrip("/")
    report = ServerReport(server, settings.planner_model, settings.worker_model)
    client = openai.OpenAI(
        api_key=(
            settings.openai_api_key.get_secret_value() if settings.openai_api_key else "not-needed"
        ),
        base_url=settings.openai_base_url,
        max_retries=0,
        timeout=settings.request_timeout_s,
    )
    started = time.perf_counter()
    try:  # ids as the server wrote them: a hostile one may echo the key it was sent
        listed = [shown_text(m.id, MODEL_ID_CHARS) for m in client.models.list()]
        report.models = sorted(listed)[:MODELS_KEPT]
    except Exception as exc:
        report.error = shown_text(describe_error(exc, settings), DETAIL_CHARS)
        return report
    report.round_trip_s = time.perf_counter() - started
    report.reachable = True

    report.json_schema, report.json_schema_detail = _try_json(settings, "json_schema")
    report.json_object_schema, report.json_object_detail = _try_json(settings, "json_object")
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

    tool = StructuredTool.from_function(_echo, name="echo")
    model = _model(settings, "worker", modes)
    try:
        reply = model.bind_tools([tool]).invoke([HumanMessage(TOOL_PROMPT)])
        report.tools = (reply.response_metadata.get("stepwise") or {}).get("tools")
        report.tools_detail = (reply.response_metadata.get("stepwise") or {}).get("tools_why") or (
            "the model called the tool"
            if reply.tool_calls
            else "the model did not call the tool either way"
        )
    except Exception as exc:
        report.tools_detail = shown_text(describe_error(exc, settings), DETAIL_CHARS)
    return report
