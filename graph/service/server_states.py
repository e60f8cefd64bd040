"""What a LangGraph Server sends back, read as a local run's: snapshots, states, messages;
and ``ServerSide``, what the server executor uses of its run service.

Shared by the server run service (``server_runs.py``) and its executor
(``server_executor.py``), so that neither imports the other for them.
"""

from __future__ import annotations

import logging
import typing
import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.schema import StreamMode
from pydantic import TypeAdapter, ValidationError

from graph.errors import StepwiseError
from graph.kernel.design import Design
from graph.service.run_controls import StopSignal
from graph.service.run_records import StateHistory
from graph.service.store import RunRecord, Store
from graph.settings import Settings

log = logging.getLogger(__name__)


STREAM_MODES: list[StreamMode] = ["updates", "custom", "values", "tasks"]
_MESSAGE = TypeAdapter(AnyMessage)
_MESSAGE_TYPES = {"human", "ai", "tool", "system", "function", "chat", "remove"}


class ServerUnavailable(StepwiseError, ValueError):
    """The LangGraph Server cannot be reached or refused the request (one sentence)."""


def thread_of(run_id: str) -> str:
    """The server thread of a run: the run's id as a UUID (the server wants one)."""
    return str(uuid.UUID(run_id))


def namespace_of(event: str) -> str:
    """A stream event's subgraph path as a local run names it (``a:1/b:2``; "" for the top
    graph): the server sends ``updates|a:1|b:2``."""
    return "/".join(event.split("|")[1:])


def revive(value: Any) -> Any:
    """JSON from the server back into what a local run's stream holds: message dicts
    become messages (the pages' message records are made from them)."""
    if isinstance(value, list):
        return [revive(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") in _MESSAGE_TYPES and "content" in value:
            try:
                return _MESSAGE.validate_python(value)
            except ValueError:
                pass
        return {k: revive(v) for k, v in value.items()}
    return value


def revive_state(values: dict, schema: type | None) -> dict:
    """A whole state from the server, each field typed by the system's state schema where
    it can be (a bus's ``Message`` objects), else as ``revive`` makes it."""
    out = {k: revive(v) for k, v in (values or {}).items()}
    if schema is None:
        return out
    try:
        hints = typing.get_type_hints(schema, include_extras=True)
    except (NameError, TypeError) as exc:
        log.warning(
            "state schema %s has unreadable type hints (%s): values kept as data", schema, exc
        )
        return out
    for key, value in (values or {}).items():
        hint = hints.get(key)
        if hint is None or key == "messages" or value is None:
            continue
        try:
            out[key] = TypeAdapter(hint).validate_python(value)
        except (ValidationError, TypeError, ValueError) as exc:
            # a shape the schema does not take (a partial dict): keep it as data
            log.debug("state field %r kept as data: %s", key, exc)
    return out


@dataclass
class ServerSnapshot:
    """A server checkpoint shaped like LangGraph's ``StateSnapshot`` (what the pages and
    ``checkpoint_row`` read of one)."""

    values: dict
    next: tuple
    config: dict
    created_at: str | None
    tasks: tuple = ()
    interrupts: tuple = ()
    metadata: dict = field(default_factory=dict)


def snapshot_from(state: dict, schema: type | None) -> ServerSnapshot:
    """A server's thread state (``threads.get_state`` / ``get_history``) as a ``ServerSnapshot``."""
    return ServerSnapshot(
        values=revive_state(state.get("values") or {}, schema),
        next=tuple(state.get("next") or ()),
        config={
            "configurable": {"checkpoint_id": (state.get("checkpoint") or {}).get("checkpoint_id")}
        },
        created_at=state.get("created_at"),
        tasks=tuple(
            SimpleNamespace(
                id=t.get("id"),
                name=t.get("name"),
                error=t.get("error"),
                result=t.get("result"),
                interrupts=tuple(
                    SimpleNamespace(id=i.get("id"), value=i.get("value"))
                    for i in t.get("interrupts") or []
                ),
            )
            for t in state.get("tasks") or []
        ),
        interrupts=tuple(
            SimpleNamespace(id=i.get("id"), value=i.get("value"))
            for i in state.get("interrupts") or []
        ),
        metadata=dict(state.get("metadata") or {}),
    )


class ServerStates(Protocol):
    """Where a ``ServerGraph`` reads a run's checkpoints: the server run service."""

    def snapshot_of(self, run_id: str, checkpoint_id: str | None = None) -> ServerSnapshot: ...

    def history_of(self, run_id: str) -> list[ServerSnapshot]: ...


class ServerGraph:
    """A design's compiled graph (for drawing it, its nodes and channels) whose
    checkpoints are read from the LangGraph Server: the pages read a run's state and
    history through ``get_state`` / ``get_state_history`` as they do locally."""

    def __init__(self, compiled: CompiledStateGraph, service: ServerStates) -> None:
        self._compiled = compiled
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)

    def get_state(self, config: RunnableConfig, subgraphs: bool = False) -> ServerSnapshot:
        configurable = config.get("configurable") or {}
        return self._service.snapshot_of(
            configurable["thread_id"], configurable.get("checkpoint_id")
        )

    def get_state_history(self, config: RunnableConfig, **kwargs: Any) -> Iterator[ServerSnapshot]:
        return iter(self._service.history_of(config["configurable"]["thread_id"]))


class ServerSide(Protocol):
    """What the executor uses of its service (``ServerRunService``)."""

    store: Store
    settings: Settings
    url: str
    owner: str
    lease_s: float
    elsewhere_checked_at: float  # answered_elsewhere.notice's last look
    client: SyncLangGraphClient  # requests that give up soon
    streams: SyncLangGraphClient  # a run's stream, which waits as long as the run takes

    def call(self, what: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...
    def health(self) -> str: ...
    def is_live(self, run_id: str) -> bool: ...
    def follow_again(self) -> int: ...
    def unavailable(self, exc: Exception) -> ServerUnavailable: ...
    def server_state(self, run_id: str, checkpoint_id: str | None = None) -> dict: ...
    def state(self, run_id: str) -> dict: ...
    def schema_of(self, design: Design) -> type | None: ...
    def prepare(
        self, design: Design
    ) -> tuple[CompiledStateGraph, BaseChatModel, BaseChatModel]: ...
    def run_metadata(self, run_id: str, design: Design) -> dict[str, Any]: ...
    def reconcile_events(self, run_id: str, design: Design, compiled: StateHistory) -> None: ...
    def release(self, run_id: str) -> None: ...
    def done_with(self, run_id: str, cancel: StopSignal | None) -> None: ...
    def trace_out(self, run_id: str) -> None: ...
    def tell_approval(self, kind: str, run_id: str, item: dict | None = None) -> None: ...
    def snapshot_of(self, run_id: str, checkpoint_id: str | None = None) -> Any: ...
    def stored(self, run_id: str) -> tuple[RunRecord, Design]: ...
    def note(self, run_id: str, data: dict, step: int | None = None) -> None: ...
    def history_of(self, run_id: str) -> list[Any]: ...
