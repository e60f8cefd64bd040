"""OpenTelemetry out, into a real backend (issue #31, done when): a plan_execute run with an
approval, on a run service configured with an OTLP endpoint, arrives in Arize Phoenix
(started on loopback, ``tests/support_procs/phoenix_server.py``) as GenAI spans with their
names, parents and attributes, read back through Phoenix's REST API; a canary API key is
in none of them. Also: with no endpoint, a run loads no exporter at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.run_spans import stored_trace
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.conftest import wait_for, wait_status

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
CANARY = "canary-5e1b7c0a9d3f2468"


def _by_id(spans: list[dict]) -> dict[str, dict]:
    return {s["context"]["span_id"]: s for s in spans}


def _children(spans: list[dict], parent: dict) -> list[dict]:
    found = [s for s in spans if s.get("parent_id") == parent["context"]["span_id"]]
    return sorted(found, key=lambda s: s["start_time"])


def test_a_plan_execute_run_arrives_in_phoenix_as_genai_spans_without_the_key(phoenix, tmp_path):
    settings = Settings(
        home=tmp_path,
        provider="scripted",
        openai_api_key=CANARY,
        OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.url,
        OTEL_EXPORTER_OTLP_HEADERS=f"x-stepwise-test={CANARY}",
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=True,
    )
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        assert service.notices.otel is not None
        design = Design(max_replans=2, recursion_limit=60, approvals={"chart_generator": "always"})
        run_id = service.start(f"{QUESTION} My key is {CANARY}.", design)
        wait_status(service, run_id, "waiting")
        (pending,) = store.pending_interrupts(run_id)
        service.decide(run_id, pending["id"], "approve")
        assert service.wait(run_id, timeout=60).status == "done"
        wait_for(
            lambda: service.live_runs() == [], what="the worker to finish (it sends the trace)"
        )
        assert service.notices.otel.flush()
        expected = stored_trace(store, run_id).spans
    finally:
        service.shutdown()
        store.close()

    def arrived() -> list[dict]:
        spans = [s for s in phoenix.spans() if s["context"]["trace_id"] == run_id]
        return spans if len(spans) == len(expected) else []

    spans = wait_for(arrived, timeout=120, what=f"{len(expected)} spans in Phoenix")
    ids = _by_id(spans)
    (root,) = [s for s in spans if not s.get("parent_id")]
    assert root["name"] == "invoke_agent plan_execute"
    assert root["status_code"] == "OK"
    assert all(s["parent_id"] in ids for s in spans if s is not root)
    nodes = _children(spans, root)
    assert nodes[0]["name"] == "invoke_agent planner"
    assert nodes[-1]["name"] == "invoke_agent synthesizer"
    assert {"invoke_agent executor", "human", "invoke_agent chart_generator"} <= {
        n["name"] for n in nodes
    }
    researcher = next(n for n in nodes if n["name"] == "invoke_agent data_researcher")
    assert researcher["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert researcher["attributes"]["gen_ai.agent.name"] == "data_researcher"
    inside = _children(spans, researcher)
    assert [s["name"] for s in inside] == [
        "chat offline scripted model",
        "execute_tool run_sql",
        "chat offline scripted model",
    ]
    chat, tool = inside[0]["attributes"], inside[1]["attributes"]
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.request.model"] == "offline scripted model"
    assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
    assert list(chat["gen_ai.response.finish_reasons"]) == ["tool_calls"]
    assert tool["gen_ai.operation.name"] == "execute_tool"
    assert tool["gen_ai.tool.name"] == "run_sql"
    for span in spans:
        assert span["attributes"]["stepwise.run.id"] == run_id
        assert span["attributes"]["stepwise.thread.id"] == run_id
    (approval,) = root["events"]
    assert approval["name"] == "stepwise.approval"
    assert approval["attributes"]["stepwise.approval.decision"] == "approve"
    assert approval["attributes"]["stepwise.approval.decided_by"] == "human"
    everything = json.dumps(spans)
    assert CANARY not in everything
    assert "My key is [redacted]." in everything  # the contents went, without the key
    assert phoenix.off_loopback() == []


def test_with_no_endpoint_a_run_loads_no_otlp_exporter(tmp_path):
    code = (
        "import sys, graph.registry\n"
        "from graph.kernel.design import Design\n"
        "from graph.service.run_service import RunService\n"
        "from graph.service.store import Store\n"
        "from graph.settings import Settings\n"
        f"s = Settings(home={str(tmp_path)!r}, provider='scripted')\n"
        "service = RunService(Store.open(s), s, timeout_tick_s=0)\n"
        "run = service.wait(service.start('Which stock grew the most?', Design()), timeout=60)\n"
        "service.shutdown()\n"
        "loaded = [m for m in sys.modules if m.startswith(('opentelemetry.exporter',"
        " 'opentelemetry.sdk.trace.export'))]\n"
        "print(run.status, service.notices.otel, loaded)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["done", "None", "[]"]
