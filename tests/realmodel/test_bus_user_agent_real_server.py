"""A user agent on the bus, on the real llama.cpp server (issue 30.1): supervisor_bus with
"clock" (mcp-server-time's ``get_current_time`` over stdio) as its only worker runs the
question about the time to the end on a real small model.

Why clock being asked is asserted, not only printed: with clock the only ticked worker,
the supervisor's ``next_agent`` enum is ``clock, FINISH`` (``prompts.decision_names``),
and a run whose supervisor finishes before any worker answered ends ``failed``, never
``done`` (``answers.missing_answer``: no answer nobody wrote). So a ``done`` run means
clock was sent a request and answered it with a result; the test checks that on the bus
rather than leaving it implied. Whether the small model really called the tool (it may
answer without it) is printed, not asserted, with each model call's time.

Small on purpose (the whole suite's time): one worker, so the supervisor decides twice
(clock, then FINISH, the only name left once clock answered) around clock's ReAct turns."""

from __future__ import annotations

import time

import pytest

from graph.kernel.design import Design
from tests.call_report import call_report, model_calls, tool_report
from tests.realmodel.conftest import assert_done, drive
from tests.user_agent_support import CLOCK_QUESTION, clock, time_server

pytestmark = pytest.mark.timeout(1500)


def test_the_bus_supervisor_routes_the_time_question_to_clock_on_the_real_model(
    real_service, capsys
):
    store = real_service.store
    store.mcp_servers.add(time_server())
    design = Design(
        system="supervisor_bus",
        user_agents=[clock()],
        enabled_agents=["clock"],
        # a 135M model on two loaded cores takes seconds a call: give the request time
        bus_timeout_s=600,
    )
    started = time.monotonic()
    run_id = real_service.start(CLOCK_QUESTION, design)
    record = drive(real_service, run_id)
    took = time.monotonic() - started
    bus = store.snapshot(run_id)["bus"]
    report = call_report(
        "supervisor_bus with clock", model_calls(store, run_id), took, "the one-thread server"
    )
    with capsys.disabled():
        print(
            f"\n{report}"
            f"\n  bus: {[(m['from'], m['to'], m['type']) for m in bus]}"
            f"\n  {tool_report(store, run_id, 'get_current_time')}",
            flush=True,
        )
    assert_done(record)
    asked = [m for m in bus if m["to"] == "clock" and m["type"] == "request"]
    assert asked, bus
    assert asked[0]["consumed_by"] == ["clock"], asked
    answers = [m for m in bus if m["from"] == "clock" and m["type"] == "result"]
    assert answers and answers[0]["in_reply_to"] == asked[0]["id"], bus
    assert record.final_answer and record.final_answer.strip(), record
