"""Chat models for runs, and asking a model for JSON that we can trust.

One factory, two providers: the offline scripted model (default, no endpoint needed)
and ``langchain-openai``'s ``ChatOpenAI`` for OpenAI or any OpenAI-compatible server.
Servers differ in structured output (``json_schema``, only ``json_object``, or
neither), so ``ask_json`` asks in the strongest way the server accepts, then always
parses and validates the reply itself, and gives the model one chance to repair it.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Callable, Literal, TypeVar

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, SecretStr, ValidationError  # noqa: F401 (SecretStr re-exported for callers)

from graph.settings import Settings, get_settings

Role = Literal["planner", "worker"]
T = TypeVar("T", bound=BaseModel)

SCRIPTED_LABEL = "offline scripted model"


def make_chat_model(role: Role, settings: Settings | None = None) -> BaseChatModel:
    """The model for Planner/Executor (``planner``) or for the sub-agents (``worker``)."""
    settings = settings or get_settings()
    if settings.resolved_provider == "scripted":
        from graph.scripted import ScriptedChatModel

        return ScriptedChatModel(delay_s=settings.scripted_delay_s)
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.planner_model if role == "planner" else settings.worker_model,
        api_key=settings.openai_api_key or "not-needed",  # local servers accept any key
        base_url=settings.openai_base_url,
        timeout=settings.request_timeout_s,
        max_retries=settings.max_retries,  # the client's own bounded exponential backoff
        temperature=settings.temperature,
    )


def model_label(model: BaseChatModel) -> str:
    """How the UI names a model; the scripted one never passes for an LLM."""
    if getattr(model, "is_scripted", False):
        return SCRIPTED_LABEL
    name = getattr(model, "model_name", None) or type(model).__name__
    base = getattr(model, "openai_api_base", None)
    return f"{name} @ {base}" if base else str(name)


class ModelReplyError(RuntimeError):
    """A model reply that stayed unusable after the repair attempt; says why in words."""

    def __init__(self, message: str, replies: list[AIMessage] | None = None):
        super().__init__(message)
        self.replies = replies or []


@dataclass
class JsonReply:
    value: BaseModel
    replies: list[AIMessage]  # every model reply, the repaired one last
    repaired: bool
    notices: list[str] = field(default_factory=list)


# Which structured-output mode each server/model accepted, learnt on first use.
_learnt_modes: dict[tuple[str, str], str] = {}
_learnt_lock = threading.Lock()
_FALLBACK = {"json_schema": "json_object", "json_object": "none"}


def _response_format(mode: str, schema: type[BaseModel]) -> dict | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {
            "name": schema.__name__, "schema": schema.model_json_schema(), "strict": False}}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _invoke_structured(model: BaseChatModel, messages: list[BaseMessage],
                       schema: type[BaseModel], mode: str, notices: list[str]) -> AIMessage:
    """Invoke with the strongest response_format the server takes; learn its refusals."""
    if getattr(model, "is_scripted", False):
        return model.invoke(messages)
    key = (str(getattr(model, "openai_api_base", "")), str(getattr(model, "model_name", "")))
    if mode == "auto":
        with _learnt_lock:
            mode = _learnt_modes.get(key, "json_schema")
        adaptive = True
    else:
        adaptive = False
    while True:
        fmt = _response_format(mode, schema)
        try:
            reply = (model.bind(response_format=fmt) if fmt else model).invoke(messages)
        except openai.BadRequestError as exc:
            if not adaptive or mode not in _FALLBACK or "response_format" not in str(exc):
                raise
            notices.append(f"The server refused response_format {mode}; using {_FALLBACK[mode]}.")
            mode = _FALLBACK[mode]
            continue
        if adaptive:
            with _learnt_lock:
                _learnt_modes[key] = mode
        return reply


def reply_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


def parse_json_object(text: str) -> object:
    """The JSON object in a reply, tolerating code fences and prose around it."""
    text = text.strip()
    if fenced := _FENCE.match(text):
        text = fenced.group(1)
    try:
        return json.loads(text)
    except json.JSONDecodeError as first_error:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(text[start:end + 1])
            except json.JSONDecodeError:
                pass
        raise ValueError(f"the reply is not valid JSON ({first_error.msg} at line "
                         f"{first_error.lineno} column {first_error.colno})") from None


def _validate(text: str, schema: type[T], check: Callable[[T], None] | None) -> T:
    try:
        value = schema.model_validate(parse_json_object(text))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise ValueError(f"the JSON does not have the expected fields ({problems})") from None
    if check:
        check(value)  # raises ValueError with a readable message
    return value


def ask_json(model: BaseChatModel, prompt: str, schema: type[T], *, label: str,
             repair_prompt: Callable[[str, str], str], mode: str | None = None,
             check: Callable[[T], None] | None = None) -> JsonReply:
    """Ask for JSON matching ``schema``; on a bad reply, one repair round with the error.

    ``check`` adds rules the schema cannot express (e.g. only enabled agents).
    Raises ``ModelReplyError`` naming ``label`` and the last problem when both fail.
    """
    mode = mode or get_settings().structured_output
    notices: list[str] = []
    messages: list[BaseMessage] = [HumanMessage(content=prompt)]
    replies: list[AIMessage] = []
    error = ""
    for attempt in range(2):
        reply = _invoke_structured(model, messages, schema, mode, notices)
        replies.append(reply)
        text = reply_text(reply)
        try:
            value = _validate(text, schema, check)
            return JsonReply(value, replies, repaired=attempt > 0, notices=notices)
        except ValueError as exc:
            error = str(exc)
            notices.append(f"{label} reply unusable: {error}.")
            messages = messages + [reply, HumanMessage(content=repair_prompt(error, text))]
    raise ModelReplyError(f"{label} gave unusable output twice; last problem: {error}.", replies)


def describe_error(exc: BaseException, settings: Settings | None = None) -> str:
    """One readable line for an exception that ended a run; never a traceback."""
    settings = settings or get_settings()
    server = settings.openai_base_url or "the OpenAI API"
    tries = f"after {settings.max_retries + 1} attempt(s)"
    if isinstance(exc, openai.APITimeoutError):
        return (f"The model server at {server} did not answer within "
                f"{settings.request_timeout_s:g} s {tries}.")
    if isinstance(exc, openai.APIConnectionError):
        return f"Could not reach the model server at {server} {tries}: is it running?"
    if isinstance(exc, openai.AuthenticationError):
        return f"The model server at {server} refused the API key (HTTP 401)."
    if isinstance(exc, openai.RateLimitError):
        return f"The model server at {server} kept rate-limiting requests (HTTP 429) {tries}."
    if isinstance(exc, openai.NotFoundError):
        return f"The model server at {server} does not know the model: {_api_message(exc)}"
    if isinstance(exc, openai.APIStatusError):
        return (f"The model server at {server} answered HTTP {exc.status_code} {tries}: "
                f"{_api_message(exc)}")
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error", body) if isinstance(body, dict) else {}
    message = inner.get("message") if isinstance(inner, dict) else None
    return str(message or exc.message)
