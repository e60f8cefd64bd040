"""A user agent on the real llama.cpp server (issue 30.1): the design with "clock"
(mcp-server-time's ``get_current_time`` over stdio) runs a question about the time to the
end on a real small model. The design ticks clock and the synthesizer only, so the
Planner's agent enum leaves a plan no other worker to route a step to: the plan routes to
clock, clock runs as its ReAct worker, and what the model did with the tool is recorded."""

from __future__ import annotations

import pytest

from tests.realmodel.conftest import assert_done, drive
from tests.user_agent_support import CLOCK_QUESTION, clock_design, time_server

pytestmark = pytest.mark.timeout(1500)


def test_a_design_with_clock_completes_its_run_on_the_real_model(real_service):
    real_service.store.mcp_servers.add(time_server())
    design = clock_design().model_copy(update={"enabled_agents": ["clock", "synthesizer"]})
    run_id = real_service.start(CLOCK_QUESTION, design)
    record = drive(real_service, run_id)
    assert_done(record)
    snapshot = real_service.store.snapshot(run_id)
    planned = {row["agent"] for row in snapshot["rows"]}
    assert "clock" in planned and planned <= {"clock", "synthesizer"}, planned
    clock_rows = [r for r in snapshot["rows"] if r["agent"] == "clock"]
    assert all(r["status"] == "done" and r["result"] for r in clock_rows), clock_rows
    print("planned:", sorted(planned))
    print(
        "tool called:",
        any(m.get("name") == "get_current_time" for m in real_service.store.messages(run_id)),
    )
