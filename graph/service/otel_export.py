"""Runs' traces sent to an OpenTelemetry backend over OTLP/HTTP as each run ends.

Why this shape: the spans are built from what the run recorded (``run_spans``), not by
instrumenting the systems as they run, so a run in a worker process or on a LangGraph
Server is traced the same way, nothing in the engine changes, and the History page's
OTLP/JSON download holds exactly what was sent. The SDK is imported only here, and only
when an endpoint is configured (``for_settings``): with tracing off nothing of
OpenTelemetry is loaded. The endpoint and headers come from the settings (the standard
``OTEL_EXPORTER_OTLP_*`` variables); the exporter and the span processor read the other
``OTEL_*`` variables (timeout, batch sizes) themselves. Spans leave on the processor's
own thread, so a slow or absent backend never holds a run.
"""

from __future__ import annotations

import atexit
import logging
from typing import Any

from graph.service.otlp import SCOPE, SERVICE_NAME, RunTrace, Span
from graph.service.run_spans import stored_trace
from graph.service.store import Store
from graph.settings import Settings

log = logging.getLogger(__name__)

# The ends a run is sent at: final ones (an interrupted run is resumed, and would be sent
# twice).
ENDED = ("done", "failed", "cancelled")


class OtelExporter:
    """Sends each finished run's spans to the configured OTLP endpoint."""

    def __init__(self, settings: Settings, processor: Any = None) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import OTELResourceDetector, Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self.content = settings.otel_capture_content
        # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win over the default name.
        self.resource = Resource({"service.name": SERVICE_NAME}).merge(
            OTELResourceDetector().detect()
        )
        self.scope = InstrumentationScope(SCOPE)
        self.processor = processor or BatchSpanProcessor(
            OTLPSpanExporter(endpoint=traces_endpoint(settings), headers=settings.otlp_headers())
        )
        atexit.register(self.shutdown)

    def export(self, trace: RunTrace) -> None:
        """Hand the trace's spans to the processor (sent on its thread)."""
        for span in trace.spans:
            self.processor.on_end(self._readable(trace.trace_id, span))

    def export_run(self, store: Store, run_id: str, thread_id: str | None = None) -> None:
        self.export(stored_trace(store, run_id, thread_id=thread_id, content=self.content))

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Send what waits now; whether it all went."""
        return bool(self.processor.force_flush(int(timeout_s * 1000)))

    def shutdown(self) -> None:
        self.processor.shutdown()

    def _readable(self, trace_id: str, span: Span) -> Any:
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        def context(span_id: str) -> SpanContext:
            return SpanContext(
                int(trace_id, 16),
                int(span_id, 16),
                is_remote=False,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )

        return ReadableSpan(
            name=span.name,
            context=context(span.span_id),
            parent=context(span.parent_id) if span.parent_id else None,
            resource=self.resource,
            attributes=span.attributes,
            events=[Event(e.name, e.attributes, e.time_ns) for e in span.events],
            kind=SpanKind.CLIENT if span.kind == "CLIENT" else SpanKind.INTERNAL,
            status=Status(StatusCode[span.status], span.status_message or None),
            start_time=span.start_ns,
            end_time=span.end_ns,
            instrumentation_scope=self.scope,
        )


def traces_endpoint(settings: Settings) -> str | None:
    """Where spans are posted: the traces endpoint as given, or ``/v1/traces`` under the
    OTLP endpoint (as the OTLP exporter specification says)."""
    if settings.otel_traces_endpoint:
        return settings.otel_traces_endpoint
    if settings.otel_endpoint:
        return settings.otel_endpoint.rstrip("/") + "/v1/traces"
    return None


def for_settings(settings: Settings) -> OtelExporter | None:
    """The exporter the settings ask for, or None (tracing off: nothing imported). An SDK
    that cannot be loaded is said in the log, and runs go on untraced."""
    if not settings.otel_enabled:
        return None
    try:
        return OtelExporter(settings)
    except ImportError as exc:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK cannot be loaded "
            "(%s): runs are not traced. Install requirements.txt.",
            exc,
        )
        return None
