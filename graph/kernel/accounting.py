"""Per-step accounting: LLM calls, tokens, latency and cost of a run.

A callback handler, attached to the run's config, sees every chat-model call in every
node and sub-agent; it reports each call as it ends, to a callback (the run's event log,
written before the node's result can reach a checkpoint, so a crash never leaves a call
that happened unrecorded) or else as a ``custom`` stream event. Each call names the id
of the reply message it produced, and (with ``on_tool``) each tool run is timed under its
tool call's id, so the Run page's trace can put a latency on every message. Cost comes
from the price table in the settings; a model missing from it has an unknown cost
(shown as unknown, never as zero). Each call also carries its request and the reply the
run received (``graph.models.recorded``), so it can be answered again: a replay or a fork.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langgraph.config import get_stream_writer

from graph.models.recorded import reply_record, request_record

log = logging.getLogger(__name__)


def calls_logged() -> bool:
    """Whether the log records each model call (DEBUG here): a run whose events nobody
    reads still carries the handler then, for those lines."""
    return log.isEnabledFor(logging.DEBUG)


class UsageRecorder(BaseCallbackHandler):
    """Reports each chat-model call (model, tokens, latency, reply message id): to
    ``on_call(call, namespace)`` when given (namespace: the sub-agent's path, as the
    stream names it), else to the graph's stream. ``on_tool(timing, namespace)``, when
    given, gets each tool run's latency under its tool call id."""

    # Only model and tool events are read: LangChain skips this handler for the rest
    # (every node, sub-agent step and runnable starts and ends a chain).
    ignore_chain = True
    ignore_retriever = True
    ignore_custom_event = True
    ignore_retry = True
    # What ``on_call`` raises (the store full, unreachable, the run's lease lost) fails the
    # model call and so its node: LangChain would otherwise log it and go on, and the
    # node's writes could be checkpointed before the call's event is stored.
    raise_error = True

    def __init__(
        self,
        on_call: Callable[[dict, str], None] | None = None,
        on_tool: Callable[[dict, str], None] | None = None,
    ) -> None:
        self._started: dict[UUID, tuple[float, str, str]] = {}
        self._namespaces: dict[UUID, str] = {}
        self._requests: dict[UUID, dict] = {}
        self._tools: dict[UUID, tuple[float, str, str, str]] = {}
        self.on_call = on_call
        self.on_tool = on_tool

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        invocation_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        params = invocation_params or {}
        model = (
            params.get("model")
            or params.get("model_name")
            or ((serialized or {}).get("kwargs", {}).get("model_name"))
            or ""
        )
        self._started[run_id] = (
            time.perf_counter(),
            str(model),
            (metadata or {}).get("langgraph_node", ""),
        )
        if messages:  # what is needed to answer this call again (graph.models.recorded)
            self._requests[run_id] = request_record(messages[0], params)
        # The stream names a sub-agent's events by its task's path minus the task itself.
        checkpoint_ns = str((metadata or {}).get("langgraph_checkpoint_ns") or "")
        self._namespaces[run_id] = "/".join(checkpoint_ns.split("|")[:-1])

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        started, model, node = self._started.pop(run_id, (time.perf_counter(), "", ""))
        namespace = self._namespaces.pop(run_id, "")
        request = self._requests.pop(run_id, None)
        message = (
            getattr(response.generations[0][0], "message", None) if response.generations else None
        )
        usage = (getattr(message, "usage_metadata", None) or {}) if message else {}
        model = (getattr(message, "response_metadata", {}) or {}).get("model_name") or model
        call = {
            "model": model or "unknown",
            "node": node,
            "input_tokens": int(usage.get("input_tokens") or 0),
            "output_tokens": int(usage.get("output_tokens") or 0),
            "latency_s": round(time.perf_counter() - started, 4),
            # the reply's id as the state keeps it: the trace puts this call on that message
            "message_id": getattr(message, "id", None) if message is not None else None,
        }
        log.debug(
            "model call by %s: %s in, %s out tokens, %.3f s",
            node or "?",
            call["input_tokens"],
            call["output_tokens"],
            call["latency_s"],
        )
        # How the server was asked (structured output and tool calling modes, the reply
        # limit and the field it went in) and why.
        modes = (
            ((getattr(message, "response_metadata", None) or {}).get("stepwise") or {})
            if message is not None
            else {}
        )
        call.update(
            {
                k: modes[k]
                for k in (
                    "structured",
                    "structured_why",
                    "tools",
                    "tools_why",
                    "call_kind",
                    "max_tokens",
                    "token_field",
                    "cut_at",
                    "notes",
                )
                if modes.get(k)
            }
        )
        if "replayed" in modes:  # answered from a recording, or live in a replay or fork
            call["replayed"] = bool(modes["replayed"])
        if request is not None and message is not None:
            call["request"] = request
            call["reply"] = reply_record(message)
        if self.on_call is not None:
            self.on_call(call, namespace)
            return
        try:
            get_stream_writer()({"llm_call": call})
        except RuntimeError:  # called outside a graph run: nothing to report to
            log.debug("a model call made outside a graph run was not reported")

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._started.pop(run_id, None)
        self._namespaces.pop(run_id, None)
        self._requests.pop(run_id, None)

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if self.on_tool is None:
            return
        checkpoint_ns = str((metadata or {}).get("langgraph_checkpoint_ns") or "")
        self._tools[run_id] = (
            time.perf_counter(),
            str(tool_call_id or ""),
            str((serialized or {}).get("name") or kwargs.get("name") or ""),
            "/".join(checkpoint_ns.split("|")[:-1]),
        )

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._tool_ended(run_id, getattr(output, "tool_call_id", None), failed=False)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._tool_ended(run_id, None, failed=True)

    def _tool_ended(self, run_id: UUID, tool_call_id: str | None, failed: bool) -> None:
        found = self._tools.pop(run_id, None)
        if found is None or self.on_tool is None:
            return
        started, call_id, name, namespace = found
        call_id = call_id or str(tool_call_id or "")
        if not call_id:
            return  # a tool run outside a model's tool call: no message to put it on
        timing = {
            "tool_call_id": call_id,
            "name": name,
            "latency_s": round(time.perf_counter() - started, 4),
        }
        if failed:
            timing["failed"] = True
        self.on_tool(timing, namespace)


def model_modes(events: list[dict]) -> dict[str, dict[str, str]]:
    """The modes a run's model calls used, from its stored events: ``{"structured":
    {mode: why}, "tools": {mode: why}}`` (why: "" for the strongest mode)."""
    found: dict[str, dict[str, str]] = {"structured": {}, "tools": {}}
    for event in events:
        data = event.get("data")
        call = data.get("llm_call") if isinstance(data, dict) else None
        if not isinstance(call, dict):
            continue
        for kind in found:
            if mode := call.get(kind):
                found[kind][mode] = found[kind].get(mode) or call.get(f"{kind}_why") or ""
    return found


def call_cost(call: dict, prices: dict[str, tuple[float, float]]) -> float | None:
    """Cost in dollars of one call, or None when the model has no price."""
    price = prices.get(call.get("model", ""))
    if price is None:
        return None
    return (call["input_tokens"] * price[0] + call["output_tokens"] * price[1]) / 1_000_000


@dataclass
class Usage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost: float | None = 0.0  # None once any call's model has no price
    unpriced: set[str] = field(default_factory=set)
    # Of a replay's or a fork's calls: answered from a recording, or made to a model.
    replayed: int = 0
    live: int = 0

    def add(self, call: dict, prices: dict) -> None:
        self.calls += 1
        if "replayed" in call:
            if call["replayed"]:
                self.replayed += 1
            else:
                self.live += 1
        self.input_tokens += call["input_tokens"]
        self.output_tokens += call["output_tokens"]
        self.latency_s += call["latency_s"]
        cost = call_cost(call, prices)
        if cost is None:
            self.unpriced.add(call["model"])
            self.cost = None
        elif self.cost is not None:
            self.cost += cost

    def as_dict(self) -> dict[str, Any]:
        return {
            "llm_calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "llm_latency_s": round(self.latency_s, 3),
            "cost_usd": None if self.cost is None else round(self.cost, 6),
        }


def usage_by_step(events: list[dict], prices: dict) -> tuple[dict[int | None, Usage], Usage]:
    """Per-step and total usage from a run's stored event records."""
    per_step: dict[int | None, Usage] = {}
    total = Usage()
    for event in events:
        data = event.get("data")
        if event.get("kind") != "custom" or not isinstance(data, dict) or "llm_call" not in data:
            continue
        call = data["llm_call"]
        per_step.setdefault(event.get("step"), Usage()).add(call, prices)
        total.add(call, prices)
    return per_step, total


def format_cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"
