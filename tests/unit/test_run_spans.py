"""A run's trace as OpenTelemetry GenAI spans (issue #31 points 4 and 6): built from a real
offline plan_execute run's event log and decisions (graph/service/run_spans.py), handed to
the real OpenTelemetry SDK (graph/service/otel_export.py), and written as OTLP/JSON."""

from __future__ import annotations

import json
import re

import pytest

from graph.kernel.design import Design
from graph.service.otlp import otlp_json
from graph.service.run_spans import stored_trace
from graph.settings import Settings
from tests.unit.conftest import wait_status

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
CANARY = "canary-0d6f1e9b4c2a7e35"  # a configured key, pasted into a question by mistake
HEX = {16: re.compile(r"[0-9a-f]{16}"), 32: re.compile(r"[0-9a-f]{32}")}


@pytest.fixture
def approved_run(service, store):
    """A plan_execute run that asked before charting, was approved, and ended done."""
    design = Design(max_replans=2, recursion_limit=60, approvals={"chart_generator": "always"})
    run_id = service.start(QUESTION, design)
    wait_status(service, run_id, "waiting")
    (pending,) = store.pending_interrupts(run_id)
    service.decide(run_id, pending["id"], "approve")
    assert service.wait(run_id, timeout=60).status == "done"
    return run_id


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def children(trace, span):
    return [s for s in trace.spans if s.parent_id == span.span_id]


def test_the_run_node_model_and_tool_spans_nest_as_the_trace_view_with_genai_names(
    store, approved_run
):
    trace = stored_trace(store, approved_run)
    assert trace.trace_id == approved_run  # a run id is a trace id
    (root,) = [s for s in trace.spans if s.parent_id is None]
    assert root.name == "invoke_agent plan_execute" and root.status == "OK"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    nodes = children(trace, root)
    names = [n.name for n in nodes]
    assert names[0] == "invoke_agent planner" and names[-1] == "invoke_agent synthesizer"
    assert {"invoke_agent executor", "invoke_agent data_researcher", "human"} <= set(names)
    researcher = next(n for n in nodes if n.name == "invoke_agent data_researcher")
    assert researcher.attributes["gen_ai.agent.name"] == "data_researcher"
    inside = children(trace, researcher)
    assert [s.name for s in inside] == [
        "chat offline scripted model",
        "execute_tool run_sql",
        "chat offline scripted model",
    ]
    chat, tool = inside[0], inside[1]
    assert chat.kind == "CLIENT"
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "offline scripted model"
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat.attributes["gen_ai.usage.output_tokens"] > 0
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert inside[2].attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "run_sql"
    for span in trace.spans:  # every span names the run and its thread
        assert span.attributes["stepwise.run.id"] == approved_run
        assert span.attributes["stepwise.thread.id"] == approved_run
        assert span.start_ns <= span.end_ns
        parent = next((p for p in trace.spans if p.span_id == span.parent_id), None)
        if parent is not None:  # a child lies within its parent
            assert parent.start_ns <= span.start_ns and span.end_ns <= parent.end_ns
    calls = [s for s in trace.spans if s.name.startswith("chat ")]
    events = store.events(approved_run)
    assert len(calls) == sum(1 for e in events if "llm_call" in (e["data"] or {}))
    assert root.attributes["gen_ai.usage.input_tokens"] == sum(
        c.attributes["gen_ai.usage.input_tokens"] for c in calls
    )


def test_an_approval_is_an_event_of_the_run_span_saying_who_decided(store, approved_run):
    (root,) = [s for s in stored_trace(store, approved_run).spans if s.parent_id is None]
    (event,) = root.events
    assert event.name == "stepwise.approval"
    assert event.attributes["stepwise.approval.decision"] == "approve"
    assert event.attributes["stepwise.approval.decided_by"] == "human"
    assert event.attributes["stepwise.approval.agent"] == "chart_generator"
    assert event.attributes["stepwise.approval.step"] == 3


def test_message_contents_are_in_the_spans_only_when_asked(store, approved_run):
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    plain = stored_trace(store, approved_run)
    assert not any(content_keys & set(s.attributes) for s in plain.spans)
    assert QUESTION not in json.dumps(otlp_json(plain))
    full = stored_trace(store, approved_run, content=True)
    (root,) = [s for s in full.spans if s.parent_id is None]
    asked = json.loads(str(root.attributes["gen_ai.input.messages"]))
    assert asked == [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    tool = next(s for s in full.spans if s.name == "execute_tool run_sql")
    assert "SELECT" in str(tool.attributes["gen_ai.tool.call.arguments"])
    chat = next(s for s in full.spans if s.name.startswith("chat "))
    sent = json.loads(str(chat.attributes["gen_ai.input.messages"]))
    assert sent[0]["role"] == "user" and sent[0]["parts"][0]["type"] == "text"
    replied = json.loads(str(chat.attributes["gen_ai.output.messages"]))
    assert replied[0]["role"] == "assistant" and replied[0]["finish_reason"] == "stop"


def test_a_configured_key_is_in_no_attribute_even_when_the_question_holds_it(tmp_path, monkeypatch):
    from graph.service.run_service import RunService
    from graph.service.store import Store

    settings = Settings(home=tmp_path, provider="scripted", openai_api_key=CANARY)
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(f"{QUESTION} (my key: {CANARY})", Design())
        assert service.wait(run_id, timeout=60).status == "done"
        assert CANARY in store.run(run_id).question  # the record keeps what was asked
        text = json.dumps(otlp_json(stored_trace(store, run_id, content=True)))
        assert CANARY not in text
        assert "(my key: [redacted])" in text
    finally:
        service.shutdown()
        store.close()


def test_the_otlp_json_has_the_structure_an_otlp_backend_loads(store, approved_run):
    data = json.loads(json.dumps(otlp_json(stored_trace(store, approved_run))))
    (resource_spans,) = data["resourceSpans"]
    assert {"key": "service.name", "value": {"stringValue": "stepwise"}} in resource_spans[
        "resource"
    ]["attributes"]
    (scope_spans,) = resource_spans["scopeSpans"]
    assert scope_spans["scope"]["name"] == "stepwise"
    spans = scope_spans["spans"]
    ids = {s["spanId"] for s in spans}
    assert len(ids) == len(spans) > 10
    value_kinds = {"stringValue", "intValue", "doubleValue", "boolValue", "arrayValue"}
    for span in spans:
        assert HEX[32].fullmatch(span["traceId"]) and HEX[16].fullmatch(span["spanId"])
        assert span["parentSpanId"] == "" or span["parentSpanId"] in ids
        assert span["kind"] in (1, 3)  # INTERNAL, CLIENT
        start, end = span["startTimeUnixNano"], span["endTimeUnixNano"]
        assert start.isdigit() and end.isdigit() and int(start) <= int(end)
        assert int(start) > 1_600_000_000 * 10**9  # nanoseconds since the epoch
        assert span["status"]["code"] in (0, 1, 2)
        for attribute in span["attributes"]:
            assert set(attribute) == {"key", "value"}
            assert len(attribute["value"]) == 1 and set(attribute["value"]) <= value_kinds
        for event in span["events"]:
            assert event["timeUnixNano"].isdigit() and event["name"]

    def first_chat_value(key: str) -> dict:
        return next(
            a["value"]
            for s in spans
            if s["name"].startswith("chat ")
            for a in s["attributes"]
            if a["key"] == key
        )

    assert first_chat_value("gen_ai.usage.input_tokens")["intValue"].isdigit()
    reasons = first_chat_value("gen_ai.response.finish_reasons")
    assert reasons["arrayValue"]["values"][0]["stringValue"] in ("stop", "tool_calls")


def test_the_sdk_gets_the_same_spans_ids_and_parents_as_the_json(settings, store, approved_run):
    """What goes to an OTLP backend is what the History page's download holds."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from graph.service.otel_export import OtelExporter

    memory = InMemorySpanExporter()
    exporter = OtelExporter(settings, processor=SimpleSpanProcessor(memory))
    exporter.export_run(store, approved_run)
    sent = memory.get_finished_spans()
    trace = stored_trace(store, approved_run)
    assert [s.name for s in sent] == [s.name for s in trace.spans]
    for got, built in zip(sent, trace.spans):
        assert format(got.context.trace_id, "032x") == approved_run
        assert format(got.context.span_id, "016x") == built.span_id
        parent = format(got.parent.span_id, "016x") if got.parent else None
        assert parent == built.parent_id
        assert (got.start_time, got.end_time) == (built.start_ns, built.end_ns)
        assert {k: _plain(v) for k, v in got.attributes.items()} == built.attributes
    assert sent[0].resource.attributes["service.name"] == "stepwise"
    assert sent[0].status.status_code.name == "OK"


def test_tracing_is_off_unless_an_endpoint_is_set_and_the_sdk_is_not_disabled(tmp_path):
    from graph.service.otel_export import for_settings

    assert for_settings(Settings(home=tmp_path)) is None
    on = Settings(home=tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318")
    assert on.otel_enabled
    assert not Settings(
        home=tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318", OTEL_SDK_DISABLED=True
    ).otel_enabled
    assert not Settings(
        home=tmp_path, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://x", OTEL_TRACES_EXPORTER="none"
    ).otel_enabled


def test_an_otlp_header_value_is_a_secret_redacted_everywhere(tmp_path):
    from graph.redaction import redact

    settings = Settings(
        home=tmp_path, OTEL_EXPORTER_OTLP_HEADERS=f"x-api-key={CANARY},team=core%20ops"
    )
    assert CANARY in settings.secret_values()
    assert redact(f"sent x-api-key {CANARY}") == "sent x-api-key [redacted]"
    assert settings.public_dict()["otel_headers"] == "set"
    assert CANARY not in json.dumps(settings.public_dict())


def test_a_failed_run_is_an_error_span_saying_why_without_the_key(tmp_path):
    from graph.service.run_service import RunService
    from graph.service.store import Store
    from tests.unit.test_run_service import BrokenModel

    settings = Settings(home=tmp_path, provider="scripted", openai_api_key=CANARY)
    store = Store.open(settings)

    class LeakingModel(BrokenModel):
        def _generate(self, *args, **kwargs):
            raise RuntimeError(f"401 from the server: Authorization: {CANARY} refused")

    service = RunService(
        store, settings, timeout_tick_s=0, model_factory=lambda role: LeakingModel()
    )
    try:
        run_id = service.start(QUESTION, Design())
        assert service.wait(run_id, timeout=60).status == "failed"
        trace = stored_trace(store, run_id)
        (root,) = [s for s in trace.spans if s.parent_id is None]
        assert root.status == "ERROR" and root.attributes["error.type"] == "_OTHER"
        assert "401 from the server" in root.status_message
        assert CANARY not in json.dumps(otlp_json(trace))
    finally:
        service.shutdown()
        store.close()


def test_opentelemetry_switches_are_read_as_the_sdk_reads_them_never_failing_the_app(
    tmp_path, monkeypatch
):
    for value, on in (("true", True), ("SPAN_ONLY", True), ("no_content", False), ("?", False)):
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
        assert Settings(home=tmp_path).otel_capture_content is on
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "TRUE")
    assert not Settings(home=tmp_path).otel_enabled
    monkeypatch.setenv("OTEL_SDK_DISABLED", "yes please")  # not "true": the SDK stays on
    assert Settings(home=tmp_path).otel_enabled
