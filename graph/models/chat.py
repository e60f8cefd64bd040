"""Which chat model a run gets, how a model is named, and model errors in words.

One factory, two providers: the offline scripted model (the default, no endpoint needed)
and ``ServerChatModel`` (``langchain-openai``'s ``ChatOpenAI``, taught what real servers
refuse) for OpenAI or any OpenAI-compatible server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from langchain_core.language_models import BaseChatModel

from graph.models.calls import ModelCallError
from graph.models.capped import capped
from graph.models.lazy import openai_loaded
from graph.models.modes import PROCESS_MODES, ModeBook
from graph.models.scripted import ScriptedChatModel
from graph.prompts import PromptSet
from graph.redaction import remember_secrets
from graph.settings import Settings, get_settings
from graph.stopping import Stopped

if TYPE_CHECKING:
    import openai

Role = Literal["planner", "worker"]

SCRIPTED_LABEL = "offline scripted model"


def make_chat_model(
    role: Role,
    settings: Settings | None = None,
    *,
    modes: ModeBook | None = None,
    prompts: PromptSet | None = None,
) -> BaseChatModel:
    """The model for the planning roles (``planner``: Planner, Executor, supervisors) or
    for the agents that use tools (``worker``). ``modes``: where what the server accepts is
    learnt and remembered (the run service's, persisted in the store); ``prompts``: the
    run's prompt texts (the tool-calling and JSON-shape prompts)."""
    settings = settings or get_settings()
    if settings.resolved_provider == "scripted":
        return ScriptedChatModel(
            delay_s=settings.scripted_delay_s,
            jitter_s=settings.scripted_jitter_s,
            seed=settings.scripted_seed,
        )
    remember_secrets(settings.secret_values())  # a key in use never reaches a stored text
    from graph.models.server import ServerChatModel  # the OpenAI client: graph.models.lazy

    return ServerChatModel(
        model=settings.planner_model if role == "planner" else settings.worker_model,
        api_key=settings.openai_api_key or "not-needed",  # local servers accept any key
        base_url=settings.openai_base_url,
        timeout=settings.request_timeout_s,
        max_retries=settings.max_retries,  # the client's own bounded exponential backoff
        call_deadline_s=settings.model_call_deadline_s,
        stream_replies=settings.stream_replies,
        stall_timeout_s=settings.stall_timeout_s,
        server_slots=settings.model_server_slots,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        structured_setting=settings.structured_output,
        tools_setting=settings.tool_calling,
        modes=modes if modes is not None else PROCESS_MODES,
        prompts=prompts,
    )


def model_label(model: BaseChatModel) -> str:
    """How the UI names a model; the scripted one never passes for an LLM."""
    if getattr(model, "is_scripted", False):
        return SCRIPTED_LABEL
    name = getattr(model, "model_name", None) or type(model).__name__
    base = getattr(model, "openai_api_base", None)
    return f"{name} @ {base}" if base else str(name)


def describe_error(exc: BaseException, settings: Settings | None = None) -> str:
    """One readable line for an exception that ended a run; never a traceback, never a
    secret (a server's error may echo the request's Authorization header)."""
    settings = settings or get_settings()
    return settings.redact(_describe(exc, settings))


def _describe(exc: BaseException, settings: Settings) -> str:
    server = settings.openai_base_url or "the OpenAI API"
    tries = f"after {settings.max_retries + 1} attempt(s)"
    if isinstance(exc, (ModelCallError, Stopped)):  # already a sentence
        return str(exc)
    if isinstance(exc, RecursionError):
        return "The run stopped: something it read (a model's reply) was nested too deeply to read."
    if not openai_loaded():  # no model server was used: the error is not the client's
        return _first_line(exc)
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return (
            f"The model server at {server} did not answer within "
            f"{settings.request_timeout_s:g} s {tries}."
        )
    if isinstance(exc, openai.APIConnectionError):
        return f"Could not reach the model server at {server} {tries}: is it running?"
    if isinstance(exc, openai.AuthenticationError):
        return f"The model server at {server} refused the API key (HTTP 401)."
    if isinstance(exc, openai.RateLimitError):
        return f"The model server at {server} kept rate-limiting requests (HTTP 429) {tries}."
    if isinstance(exc, openai.NotFoundError):
        return f"The model server at {server} does not know the model: {_api_message(exc)}"
    if isinstance(exc, openai.APIStatusError):
        return (
            f"The model server at {server} answered HTTP {exc.status_code} {tries}: "
            f"{_api_message(exc)}"
        )
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error", body) if isinstance(body, dict) else {}
    message = inner.get("message") if isinstance(inner, dict) else None
    return str(message or exc.message)


def role_models(
    settings: Settings,
    prompts: PromptSet,
    planner: BaseChatModel | None = None,
    worker: BaseChatModel | None = None,
) -> tuple[BaseChatModel, BaseChatModel]:
    """The (planner, worker) pair a system builds its graph with: the models given, or
    the configured ones, each reply capped at ``settings.max_reply_chars``."""
    cap = settings.max_reply_chars
    return (
        capped(planner or make_chat_model("planner", settings, prompts=prompts), cap),
        capped(worker or make_chat_model("worker", settings, prompts=prompts), cap),
    )
