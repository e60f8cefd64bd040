"""User agents in supervisor_bus (issue 30, point 1): a ticked user agent is one more bus
worker. The agent "clock" with mcp-server-time's ``get_current_time`` (started over stdio)
is routed the question about the time by the offline scripted supervisor, reads its request
from its inbox, really calls the tool and answers on the bus, and the run is done; an agent
whose description does not fit the question is not asked; the compiled graph draws it with
its routes to and from the supervisor; the design's validation takes it for supervisor_bus
and still refuses it for hierarchical_teams."""

from __future__ import annotations

import json

import pytest

from graph.agents.user_agents import UserAgent
from graph.kernel.design import Design, takes_user_agents_list
from graph.kernel.render import to_dot
from graph.supervisor_bus import SYSTEM
from graph.supervisor_bus.answers import final_answer
from graph.supervisor_bus.state import Message
from tests.unit.conftest import wait_status
from tests.user_agent_support import CLOCK_QUESTION, clock, time_server


def bus_design(*agents: UserAgent, enabled: tuple[str, ...] = ("researcher",)) -> Design:
    return Design(
        system="supervisor_bus",
        user_agents=list(agents),
        enabled_agents=[*enabled, *(a.name for a in agents)],
    )


def test_the_time_question_goes_to_clock_on_the_bus_which_really_calls_the_time_tool(service):
    service.store.mcp_servers.add(time_server())
    run_id = service.start(CLOCK_QUESTION, bus_design(clock()))
    record = wait_status(service, run_id, "done", timeout=90)
    assert "clock" in service.store.nodes_run(run_id)
    snapshot = service.store.snapshot(run_id)
    rows = {r["agent"]: r for r in snapshot["rows"]}
    assert snapshot["rows"][0]["agent"] == "clock", snapshot["rows"]
    assert rows["clock"]["status"] == "answered"
    tool_results = [
        m
        for m in service.store.messages(run_id)
        if m.get("type") == "tool" and m.get("name") == "get_current_time"
    ]
    assert tool_results, "the time tool was not called"
    answer = json.loads(tool_results[0]["content"])
    assert answer["timezone"] == "Europe/Rome" and answer["datetime"][:2] == "20"
    assert rows["clock"]["answer"].startswith(
        "offline scripted model: called `get_current_time` with arguments from the step"
    )
    # its answer went back to the supervisor on the bus, and is part of the run's answer
    request = next(m for m in snapshot["bus"] if m["to"] == "clock" and m["type"] == "request")
    assert request["consumed_by"] == ["clock"]
    assert any(
        m["from"] == "clock" and m["to"] == "supervisor" and m["type"] == "result"
        for m in snapshot["bus"]
    )
    assert "Europe/Rome" in (record.final_answer or "")
    # what clock saved inside the run is read as its own model and tool turns (a graph
    # its node invokes: LangGraph would read it with the bus's channels)
    inner = [p for p in service.inner_checkpoints(run_id) if p["inside"] == "clock"]
    assert [p["node"] for p in inner][:4] == ["input", "__start__", "model", "tools"], inner
    assert all("bus" not in p["fields"] for p in inner)


def test_without_arguments_in_the_request_clock_says_it_needs_a_real_model_and_the_run_goes_on(
    service,
):
    service.store.mcp_servers.add(time_server())
    run_id = service.start("What time is it now?", bus_design(clock()))
    wait_status(service, run_id, "done", timeout=90)
    rows = {r["agent"]: r for r in service.store.snapshot(run_id)["rows"]}
    assert "This needs a real model" in rows["clock"]["answer"]
    assert rows["researcher"]["status"] == "answered"


def test_a_user_agent_whose_description_does_not_fit_the_question_is_not_asked(service):
    weather = UserAgent(
        name="weather",
        description="Reports the weather forecast for a city.",
        tools=("builtin:search_knowledge_base",),
    )
    run_id = service.start("What caused the dot-com crash?", bus_design(weather))
    wait_status(service, run_id, "done", timeout=60)
    assert [r["agent"] for r in service.store.snapshot(run_id)["rows"]] == ["researcher"]
    assert "weather" not in service.store.nodes_run(run_id)


def test_the_compiled_bus_graph_draws_the_user_agent_with_its_routes_to_and_from_the_supervisor():
    compiled = SYSTEM.build_graph(bus_design(clock()))
    edges = {(e.source, e.target) for e in compiled.get_graph().edges}
    assert {("supervisor", "clock"), ("clock", "supervisor")} <= edges
    lines = {line.strip() for line in to_dot(compiled, SYSTEM).splitlines()}
    assert "clock [label=clock]" in lines  # the Design and Run pages' drawing
    assert {"supervisor -> clock [style=dashed]", "clock -> supervisor [style=dashed]"} <= lines


def test_the_design_takes_user_agents_for_supervisor_bus_but_not_for_hierarchical_teams():
    design = bus_design(clock())
    assert design.enabled_agents == ["researcher", "clock"]
    assert "supervisor_bus" in takes_user_agents_list()
    with pytest.raises(ValueError, match="hierarchical_teams does not take user agents"):
        Design(system="hierarchical_teams", user_agents=[clock()])


def test_without_a_writer_the_answer_is_the_findings_and_the_user_agents_answers_in_order():
    bus = [
        Message(id="m1", from_="clock", to="supervisor", type="result", payload={"text": "10:00"}),
        Message(id="m2", from_="researcher", to="supervisor", type="result", payload={"text": "F"}),
    ]
    SYSTEM.build_graph(bus_design(clock()))  # defines clock as a worker, as a run does
    assert final_answer(bus) == "10:00\n\nF"


@pytest.mark.parametrize("name", ["user", "all"])
def test_a_user_agent_cannot_take_a_name_the_bus_uses_as_a_sender_or_an_address(name):
    with pytest.raises(ValueError, match="built-in agent or node"):
        Design(
            system="supervisor_bus",
            user_agents=[UserAgent.model_construct(name=name, description="x" * 10, tools=())],
        )
