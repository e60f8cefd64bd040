"""User agents (issue 30, points 1 and 5): an agent "clock" defined with mcp-server-time's
``get_current_time`` is planned for a question about the time on the offline scripted
model, really calls the tool (started over stdio), and the run is done; names are checked;
a design brings its user agents through export and import. (Tier ``processes``: the run
starts a program.)"""

from __future__ import annotations

import json

import pytest

from graph.agents.user_agents import UserAgent, mcp_tool_ref
from graph.kernel.design import Design, export_design, import_design
from graph.plan_execute import SYSTEM
from tests.unit.conftest import wait_status
from tests.user_agent_support import CLOCK_QUESTION, clock, clock_design, time_server


def test_a_question_about_the_time_is_planned_for_clock_which_really_calls_the_time_tool(
    service,
):
    service.store.mcp_servers.add(time_server())
    run_id = service.start(CLOCK_QUESTION, clock_design())
    record = wait_status(service, run_id, "done", timeout=90)
    snapshot = service.store.snapshot(run_id)
    assert [r["agent"] for r in snapshot["rows"]] == ["clock", "synthesizer"], record
    tool_results = [
        m
        for m in service.store.messages(run_id)
        if m.get("type") == "tool" and m.get("name") == "get_current_time"
    ]
    assert tool_results, "the time tool was not called"
    answer = json.loads(tool_results[0]["content"])
    assert answer["timezone"] == "Europe/Rome" and answer["datetime"][:2] == "20"
    step_result = snapshot["rows"][0]["result"]
    assert step_result.startswith(
        "offline scripted model: called `get_current_time` with arguments from the step"
    )


def test_without_arguments_in_the_step_the_agent_says_it_needs_a_real_model_and_the_run_goes_on(
    service,
):
    service.store.mcp_servers.add(time_server())
    run_id = service.start("What time is it?", clock_design())
    wait_status(service, run_id, "done", timeout=90)
    rows = service.store.snapshot(run_id)["rows"]
    assert rows[0]["agent"] == "clock"
    assert "This needs a real model" in rows[0]["result"]
    assert rows[-1]["agent"] == "synthesizer" and rows[-1]["status"] == "done"


def test_a_server_that_is_not_connected_fails_the_call_with_a_sentence_and_the_run_goes_on(
    service,
):
    run_id = service.start(CLOCK_QUESTION, clock_design())  # no "time" server stored
    wait_status(service, run_id, "done", timeout=60)
    said = " ".join(m.get("content") or "" for m in service.store.messages(run_id))
    assert "The MCP server “time” is not connected on this machine" in said


def test_the_compiled_graph_draws_the_user_agent_with_its_route_back_to_the_executor():
    graph = SYSTEM.build_graph(clock_design()).get_graph()
    assert "clock" in graph.nodes
    assert ("clock", "executor") in {(e.source, e.target) for e in graph.edges}
    assert ("executor", "clock") in {(e.source, e.target) for e in graph.edges}


def test_a_design_brings_its_user_agents_through_export_and_import():
    design = clock_design()
    again = import_design(json.loads(json.dumps(export_design(design))))
    assert again.user_agents == design.user_agents
    assert again.enabled_agents == ["web_researcher", "synthesizer", "clock"]


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("Clock", "not a usable agent name"),
        ("9lives", "not a usable agent name"),
        ("rm -rf", "not a usable agent name"),
        ("synthesizer", "built-in agent or node"),
        ("supervisor", "built-in agent or node"),
    ],
)
def test_a_user_agent_name_must_be_a_safe_identifier_and_not_a_built_in_one(name, problem):
    with pytest.raises(ValueError, match=problem):
        Design(
            user_agents=[
                UserAgent.model_construct(
                    name=name, description="Does a thing well.", tools=(), prompt="{name}"
                )
            ]
        )


def test_two_user_agents_of_one_design_cannot_share_a_name():
    with pytest.raises(ValueError, match="already an agent named “clock”"):
        Design(user_agents=[clock(), clock()])


def test_a_tool_reference_that_names_no_tool_is_refused():
    with pytest.raises(ValueError, match="names no tool"):
        UserAgent(name="clock", description="Tells the time somewhere.", tools=("time",))
    assert mcp_tool_ref("time", "get_current_time") == "mcp:time/get_current_time"


def test_a_design_ticking_an_agent_it_does_not_define_says_which():
    with pytest.raises(ValueError, match="unknown agent\\(s\\): clock"):
        Design(enabled_agents=["clock", "synthesizer"])
