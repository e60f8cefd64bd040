"""A run's trace as OpenTelemetry spans, built from what the run recorded: its event log
and the decisions people made. One builder for the two ways a trace leaves Stepwise: sent
to an OTLP backend as a run ends (``graph.service.otel_export``), and downloaded from the
History page as OTLP/JSON (``graph.service.otlp``), so the two carry the same spans and ids.

The spans follow the OpenTelemetry GenAI semantic conventions (development status; the
names of 2026: ``invoke_agent``, ``chat``, ``execute_tool``, ``gen_ai.*``), nested as the
Run page's trace nests them: the run (``invoke_agent <system>``), each top-level node that
ran (``invoke_agent <agent>`` for an agent or hub, the node's name for the rest), and in
each node its model calls (``chat <model>``) and tool runs (``execute_tool <tool>``),
sub-agents' included. A decision on an approval is an event of the run span, naming who
decided. Message contents go in only when asked (``content``), as the conventions advise
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``); every text is redacted
(``graph.redaction``) whatever it holds.

No OpenTelemetry import here: building an export costs nothing when tracing is off.
Times are the log's: a call ends at its event and lasted its recorded latency; a node
starts with the superstep (the state logged before it) and ends at its update.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable

from graph.kernel.system import get_system
from graph.redaction import redact
from graph.service.otlp import Attribute, RunTrace, Span, SpanEvent
from graph.service.repositories.shared import RunRecord
from graph.service.store import Store

SCRIPTED_LABEL = "offline scripted model"
# Not a provider of the conventions' list: a custom value, as they allow.
SCRIPTED_PROVIDER = "stepwise.offline_scripted_model"
ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_HEX32 = re.compile(r"[0-9a-f]{32}")


def trace_id_of(run_id: str) -> str:
    """A run's trace id: the run id itself when it is one (a Stepwise run id is 32 hex
    digits), else a hash of it; the same run always gets the same trace."""
    if _HEX32.fullmatch(run_id) and set(run_id) != {"0"}:
        return run_id
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def _span_id(run_id: str, key: str) -> str:
    return hashlib.sha256(f"{run_id}:{key}".encode()).hexdigest()[:16]


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _clean(value: Any) -> Attribute:
    """An attribute value as OTLP carries it, with no secret in any text of it."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [redact(str(v)) for v in value]
    return redact(str(value))


def _attributes(**values: Any) -> dict[str, Attribute]:
    return {k.replace("__", "."): _clean(v) for k, v in values.items() if v is not None}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def _data(message: dict) -> dict:
    """A message's fields: LangChain's dicts nest them under ``data``."""
    inner = message.get("data")
    return inner if isinstance(inner, dict) else message


def genai_messages(messages: Iterable[dict]) -> list[dict]:
    """LangChain message dicts (``{"type", "data"}`` or flat) as the conventions' input
    messages: a role and parts (text, tool calls, tool results)."""
    out = []
    for message in messages:
        data = _data(message)
        kind = str(message.get("type") or data.get("type") or "")
        parts: list[dict] = []
        if kind == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": data.get("tool_call_id"),
                    "result": _text(data.get("content")),
                }
            )
        elif data.get("content"):
            parts.append({"type": "text", "content": _text(data.get("content"))})
        for call in data.get("tool_calls") or ():
            if isinstance(call, dict):
                parts.append(
                    {
                        "type": "tool_call",
                        "id": call.get("id"),
                        "name": call.get("name"),
                        "arguments": call.get("args"),
                    }
                )
        out.append({"role": ROLES.get(kind, kind or "user"), "parts": parts})
    return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def finish_reason(call: dict) -> str | None:
    """Why the model stopped, as the server (or the scripted model) said in its reply."""
    meta = _data(call.get("reply") or {}).get("response_metadata") or {}
    reason = meta.get("finish_reason") or meta.get("stop_reason")
    return str(reason) if reason else None


class _Builder:
    def __init__(self, record: RunRecord, thread_id: str, content: bool) -> None:
        self.record = record
        self.content = content
        self.run_id = record.id
        self.common = _attributes(
            stepwise__run__id=record.id,
            stepwise__thread__id=thread_id,
            gen_ai__conversation__id=thread_id,
        )
        try:
            system = get_system(record.system)
            self.agents = set(system.agents) | set(system.shape.hubs)
        except (KeyError, ValueError):  # a run imported from a system not hosted here
            self.agents = set()
        self.root_id = _span_id(self.run_id, "run")
        self.spans: list[Span] = []
        self.pending: dict[str | None, list[Span]] = {}
        self.tool_args: dict[str, Any] = {}
        self.tool_results: dict[str, Any] = {}
        self.tokens = (0, 0)  # the run's model calls' input and output tokens

    def provider(self, model: str) -> str:
        return SCRIPTED_PROVIDER if model == SCRIPTED_LABEL else "openai"

    def chat(self, event: dict, call: dict) -> Span:
        model = str(call.get("model") or "unknown")
        request = call.get("request") or {}
        params = request.get("params") or {}
        end = _ns(event["ts"])
        reason = finish_reason(call)
        used = (int(call.get("input_tokens") or 0), int(call.get("output_tokens") or 0))
        self.tokens = (self.tokens[0] + used[0], self.tokens[1] + used[1])
        span = Span(
            name=f"chat {model}",
            span_id=_span_id(self.run_id, f"call:{event['seq']}"),
            parent_id=None,
            start_ns=end - _ns(float(call.get("latency_s") or 0.0)),
            end_ns=end,
            kind="CLIENT",
            attributes={
                **self.common,
                **_attributes(
                    gen_ai__operation__name="chat",
                    gen_ai__provider__name=self.provider(model),
                    gen_ai__request__model=params.get("model") or params.get("model_name") or model,
                    gen_ai__response__model=model,
                    gen_ai__response__id=call.get("message_id"),
                    gen_ai__request__max_tokens=params.get("max_tokens"),
                    gen_ai__request__temperature=params.get("temperature"),
                    gen_ai__usage__input_tokens=used[0],
                    gen_ai__usage__output_tokens=used[1],
                    gen_ai__response__finish_reasons=[reason] if reason else None,
                    gen_ai__output__type="json" if params.get("json_request") else None,
                    stepwise__node=call.get("node") or None,
                    stepwise__replayed=call.get("replayed"),
                ),
            },
        )
        if self.content and request.get("messages"):
            span.attributes["gen_ai.input.messages"] = _clean(
                _json(genai_messages(request["messages"]))
            )
        if self.content and call.get("reply"):
            output = genai_messages([call["reply"]])
            for message in output:
                message["finish_reason"] = reason or "stop"
            span.attributes["gen_ai.output.messages"] = _clean(_json(output))
        return span

    def tool(self, event: dict, timing: dict) -> Span:
        name = str(timing.get("name") or "tool")
        call_id = str(timing.get("tool_call_id") or "")
        end = _ns(event["ts"])
        span = Span(
            name=f"execute_tool {name}",
            span_id=_span_id(self.run_id, f"tool:{event['seq']}"),
            parent_id=None,
            start_ns=end - _ns(float(timing.get("latency_s") or 0.0)),
            end_ns=end,
            attributes={
                **self.common,
                **_attributes(
                    gen_ai__operation__name="execute_tool",
                    gen_ai__tool__name=name,
                    gen_ai__tool__call__id=call_id or None,
                    gen_ai__tool__type="function",
                ),
            },
        )
        if timing.get("failed"):
            span.status, span.attributes["error.type"] = "ERROR", "tool_error"
        if self.content and call_id in self.tool_args:
            span.attributes["gen_ai.tool.call.arguments"] = _clean(_json(self.tool_args[call_id]))
        if self.content and call_id in self.tool_results:
            span.attributes["gen_ai.tool.call.result"] = _clean(_text(self.tool_results[call_id]))
        return span

    def node(self, name: str, start: float, end_ns: int, step: Any, key: str) -> Span:
        children = self.pending.pop(name, []) + self.pending.pop(None, [])
        start_ns = min([_ns(start), *(c.start_ns for c in children)])
        agent = name in self.agents
        span = Span(
            name=f"invoke_agent {name}" if agent else name,
            span_id=_span_id(self.run_id, key),
            parent_id=self.root_id,
            start_ns=start_ns,
            end_ns=max([end_ns, *(c.end_ns for c in children)]),
            attributes={
                **self.common,
                **_attributes(
                    gen_ai__operation__name="invoke_agent" if agent else None,
                    gen_ai__agent__name=name if agent else None,
                    stepwise__node=name,
                    stepwise__step=step if isinstance(step, int) else None,
                ),
            },
        )
        for child in children:
            child.parent_id = span.span_id
        self.spans += [span, *children]
        return span

    def learn_tools(self, messages: Any) -> None:
        """Each tool call's arguments and result, for the tool spans' opt-in content."""
        for message in messages if isinstance(messages, list) else ():
            if not isinstance(message, dict):
                continue
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and call.get("id"):
                    self.tool_args[call["id"]] = call.get("args")
            if message.get("type") == "tool" and message.get("tool_call_id"):
                self.tool_results[message["tool_call_id"]] = message.get("content")

    def build(self, events: list[dict], decisions: list[dict]) -> RunTrace:
        record = self.record
        events = sorted(events, key=lambda e: e["seq"])
        first = record.started_at or record.created_at
        superstep = first
        if self.content:
            for event in events:
                if event["kind"] == "update" and isinstance(event.get("data"), dict):
                    self.learn_tools(event["data"].get("messages"))
        for event in events:
            data = event.get("data")
            namespace = event.get("namespace") or ""
            owner = namespace.split("/")[0].split(":")[0] if namespace else None
            if event["kind"] == "state" and not namespace:
                superstep = event["ts"]
            elif event["kind"] == "custom" and isinstance(data, dict):
                if isinstance(call := data.get("llm_call"), dict):
                    who = owner or call.get("node") or None
                    self.pending.setdefault(who, []).append(self.chat(event, call))
                elif isinstance(timing := data.get("tool_call"), dict):
                    self.pending.setdefault(owner, []).append(self.tool(event, timing))
            elif event["kind"] == "update" and not namespace and event.get("node"):
                key = event.get("key") or f"node:{event['seq']}"
                self.node(event["node"], superstep, _ns(event["ts"]), event.get("step"), key)
        last = events[-1]["ts"] if events else first
        for name in [n for n in self.pending if n is not None] + [None]:
            if self.pending.get(name):  # a node the run stopped in: its calls still count
                unfinished = self.node(
                    name or "unfinished", superstep, _ns(last), None, f"open:{name}"
                )
                unfinished.attributes["stepwise.node.finished"] = False
        return RunTrace(trace_id_of(self.run_id), [self.root(first, last, decisions), *self.spans])

    def root(self, first: float, last: float, decisions: list[dict]) -> Span:
        record = self.record
        end = record.finished_at if record.finished_at is not None else last
        span = Span(
            name=f"invoke_agent {record.system}",
            span_id=self.root_id,
            parent_id=None,
            start_ns=_ns(first),
            end_ns=max([_ns(end), *(s.end_ns for s in self.spans)]),
            attributes={
                **self.common,
                **_attributes(
                    gen_ai__operation__name="invoke_agent",
                    gen_ai__agent__name=record.system,
                    gen_ai__provider__name=self.provider(record.model_label),
                    gen_ai__usage__input_tokens=self.tokens[0],
                    gen_ai__usage__output_tokens=self.tokens[1],
                    stepwise__system=record.system,
                    stepwise__run__status=record.status,
                    stepwise__model=record.model_label,
                    stepwise__prompt_versions=[
                        f"{name}={version}"
                        for name, version in sorted(record.prompt_versions.items())
                    ]
                    or None,
                    stepwise__parent_run=record.parent_run,
                ),
            },
        )
        if record.status == "failed":
            span.status, span.status_message = "ERROR", redact(record.reason)
            span.attributes["error.type"] = "_OTHER"
        elif record.status == "done":
            span.status = "OK"
        if self.content:
            question = [{"role": "user", "parts": [{"type": "text", "content": record.question}]}]
            span.attributes["gen_ai.input.messages"] = _clean(_json(question))
            if record.final_answer:
                answer = [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": record.final_answer}],
                        "finish_reason": "stop",
                    }
                ]
                span.attributes["gen_ai.output.messages"] = _clean(_json(answer))
        for decided in sorted(decisions, key=lambda d: d["decided"]["at"]):
            said = decided["decided"]
            attributes = _attributes(
                stepwise__approval__decision=said.get("decision"),
                stepwise__approval__decided_by=said.get("by"),
                stepwise__approval__agent=decided.get("agent"),
                stepwise__approval__step=decided.get("step"),
                stepwise__approval__interrupt_id=decided.get("id"),
            )
            if self.content and said.get("reason"):
                attributes["stepwise.approval.reason"] = _clean(said["reason"])
            span.events.append(SpanEvent("stepwise.approval", _ns(said["at"]), attributes))
        return span


def run_trace(
    record: RunRecord,
    events: list[dict],
    decisions: Iterable[dict] = (),
    *,
    thread_id: str | None = None,
    content: bool = False,
) -> RunTrace:
    """The run's spans from its stored ``events`` and its answered ``decisions`` (as
    ``Decisions.of_run`` gives them); ``thread_id``: its LangGraph thread when not the run
    id (a LangGraph Server's); ``content``: message contents included (opt-in)."""
    return _Builder(record, thread_id or record.id, content).build(events, list(decisions))


def stored_trace(
    store: Store, run_id: str, *, thread_id: str | None = None, content: bool = False
) -> RunTrace:
    """``run_trace`` of a run in the store (KeyError: no such run)."""
    record = store.run(run_id)
    if record is None:
        raise KeyError(f"No run {run_id!r}.")
    return run_trace(
        record,
        store.events(run_id),
        store.decisions.of_run(run_id),
        thread_id=thread_id,
        content=content,
    )
