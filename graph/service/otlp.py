"""Spans as data, and as OTLP/JSON: the shape a run's trace takes between the builder
(``run_spans``), the SDK exporter (``otel_export``) and the History page's download.

OTLP/JSON is the OTLP protobuf ``ExportTraceServiceRequest`` in JSON as the OTLP
specification writes it (not plain proto3 JSON): ids in hex, not base64; times in
nanoseconds since the epoch, as strings; enums as numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SCOPE = "stepwise"
SERVICE_NAME = "stepwise"
KINDS = {"INTERNAL": 1, "CLIENT": 3}  # OTLP's SpanKind numbers
STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}

Attribute = str | int | float | bool | list[str]


@dataclass
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, Attribute] = field(default_factory=dict)


@dataclass
class Span:
    name: str
    span_id: str  # 16 hex digits
    parent_id: str | None
    start_ns: int
    end_ns: int
    kind: str = "INTERNAL"
    attributes: dict[str, Attribute] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    status: str = "UNSET"
    status_message: str = ""


@dataclass
class RunTrace:
    trace_id: str  # 32 hex digits
    spans: list[Span]

    def named(self, name: str) -> list[Span]:
        return [s for s in self.spans if s.name == name]


def _any_value(value: Attribute) -> dict:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 as a string, as proto3's JSON mapping says
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": value}


def _key_values(attributes: dict[str, Attribute]) -> list[dict]:
    return [{"key": k, "value": _any_value(v)} for k, v in attributes.items()]


def otlp_json(trace: RunTrace, resource: dict[str, Attribute] | None = None) -> dict:
    """The trace as OTLP/JSON (an ``ExportTraceServiceRequest``): what an OTLP/HTTP
    backend accepts with ``Content-Type: application/json``, and what a file of traces
    holds. Ids are hex, times nanoseconds since the epoch as strings."""
    spans = [
        {
            "traceId": trace.trace_id,
            "spanId": s.span_id,
            "parentSpanId": s.parent_id or "",
            "name": s.name,
            "kind": KINDS[s.kind],
            "startTimeUnixNano": str(s.start_ns),
            "endTimeUnixNano": str(s.end_ns),
            "attributes": _key_values(s.attributes),
            "events": [
                {
                    "timeUnixNano": str(e.time_ns),
                    "name": e.name,
                    "attributes": _key_values(e.attributes),
                }
                for e in s.events
            ],
            "status": {"code": STATUS_CODES[s.status], "message": s.status_message},
        }
        for s in trace.spans
    ]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _key_values(resource or {"service.name": SERVICE_NAME})},
                "scopeSpans": [{"scope": {"name": SCOPE}, "spans": spans}],
            }
        ]
    }
