"""An agent defined in the browser runs on the real model (issue 30's done-when), in
Chromium at 1280×720: the app is pointed at the suite's llama.cpp server (one thread) as a
user would point it, by variables; on the Design page *New agent* defines "clock" with
mcp-server-time's ``get_current_time`` (the server registered and its tools listed
beforehand, as the Tools page does), ticks it and sees it drawn; the question about the
time is asked on the Run page and followed to its end, approving what asks.

The design saved before the page opens ticks the synthesizer only, so once clock is ticked
in the browser the Planner's agent enum leaves a plan no other worker to route a step to:
the plan must route to clock, and clock runs as its ReAct worker. Whether the small model
really called the tool (it may answer without it) is printed, not asserted, with each
model call's time. This is the suite's one real-model run of a user agent in plan_execute
(it replaced a service-only run of the same design)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from graph.kernel.design import Design
from graph.service.store import Store
from graph.settings import Settings
from tests.call_report import call_report, model_calls, tool_report
from tests.e2e.conftest import SHOTS, serve
from tests.e2e.test_slow_server_in_browser import _follow
from tests.e2e.user_agent_steps import ask, define_and_tick_clock, graph_node, register_time_server
from tests.support_procs.llama_server import MODEL_NAME
from tests.user_agent_support import CLOCK_QUESTION

pytestmark = pytest.mark.timeout(1500)


def test_clock_defined_in_the_browser_answers_the_time_question_on_the_real_model(
    small_page, llama, tmp_path, capsys
):
    page = small_page
    register_time_server(tmp_path)
    store = Store.open(Settings(home=tmp_path))
    store.save_design(Design(system="plan_execute", enabled_agents=["synthesizer"]))
    env = {
        "OPENAI_BASE_URL": llama.base_url,
        "STEPWISE_PLANNER_MODEL": MODEL_NAME,
        "STEPWISE_WORKER_MODEL": MODEL_NAME,
    }
    try:
        with serve(tmp_path, env=env) as url:
            page.goto(url)
            expect(graph_node(page, "synthesizer")).to_have_count(1)
            expect(graph_node(page, "web_researcher")).to_have_count(0)
            define_and_tick_clock(page, "user-agent-real-model-design.png")
            design = store.load_design()
            assert design is not None and design.enabled_agents == ["synthesizer", "clock"], design

            started = time.monotonic()
            run_id = ask(page, url, CLOCK_QUESTION)
            status, _ = _follow(page, url, store, run_id)
            took = time.monotonic() - started
            calls = model_calls(store, run_id)
            report = call_report("plan_execute with clock", calls, took, "the one-thread server")
            snapshot = store.snapshot(run_id)
            planned = {row["agent"] for row in snapshot["rows"]}
            with capsys.disabled():
                print(
                    f"\n{report}"
                    f"\n  planned: {sorted(planned)}"
                    f"\n  {tool_report(store, run_id, 'get_current_time')}",
                    flush=True,
                )
            record = store.run(run_id)
            assert status == "done", f"the run ended {status}: {record.reason}\n{report}"
            assert calls, "no model call was recorded"
            assert "clock" in planned and planned <= {"clock", "synthesizer"}, planned
            clock_rows = [r for r in snapshot["rows"] if r["agent"] == "clock"]
            assert all(r["status"] == "done" and r["result"] for r in clock_rows), clock_rows

            page.goto(url + f"/run?run={run_id}")
            expect(page.get_by_text(re.compile(r"^status done"))).to_be_visible()
            table = page.locator('[data-testid="stTable"]').first
            expect(table).to_contain_text("clock")
            table.scroll_into_view_if_needed()  # the steps, clock's among them, in the shot
            page.wait_for_timeout(600)
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "user-agent-real-model-run.png"))
    finally:
        store.close()
