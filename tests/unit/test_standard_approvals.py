"""Every Stepwise approval asks in LangChain's standard human-in-the-loop shape
(``action_requests`` + ``review_configs``, its own fields kept alongside) and takes the
standard decisions (``{"decisions": [...]}``) as a resume, in each hosted system, on real
graphs with a real checkpointer and the offline scripted model."""

from __future__ import annotations

import pytest
from langgraph.types import Command

from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.service.run_storage import checkpointer_for
from graph.service.runs import continue_run, run_question
from graph.tools.demo_api import start_demo_api

REPORT = "What caused the dot-com crash? Save a report."


def _start(name: str, question: str, settings, **design_fields):
    design = Design(system=name, **design_fields)
    graph = get_system(name).build_graph(
        design, settings=settings, checkpointer=checkpointer_for(settings)
    )
    outcome = run_question(question, design, settings=settings, graph=graph)
    assert outcome.status == "waiting", outcome.reason
    return graph, design, outcome


def _answer(graph, design, outcome, settings, resume):
    asked = outcome.interrupts[0]
    return continue_run(
        graph, Command(resume={asked["id"]: resume}), outcome.thread_id, design, settings=settings
    )


def _finish(graph, design, outcome, settings):
    while outcome.status == "waiting":
        outcome = _answer(graph, design, outcome, settings, {"decisions": [{"type": "approve"}]})
    return outcome


def test_plan_execute_asks_a_standard_request_with_its_own_fields_alongside(settings):
    _, _, outcome = _start("plan_execute", REPORT, settings)
    asked = outcome.interrupts[0]
    assert asked["action_requests"] == [
        {
            "name": "report_writer",
            "args": {"query": asked["query"]},
            "description": f"approval for report_writer (step {asked['step']}): {asked['reason']}",
        }
    ]
    assert asked["review_configs"] == [
        {"action_name": "report_writer", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    assert asked["stepwise_decisions"] == ["skip"]
    assert (asked["kind"], asked["agent"]) == ("approval", "report_writer")  # the inbox's


def test_plan_execute_takes_standard_edit_reject_and_refuses_respond(settings):
    graph, design, outcome = _start("plan_execute", REPORT, settings)
    outcome = _answer(
        graph, design, outcome, settings, {"decisions": [{"type": "respond", "message": "hi"}]}
    )
    assert outcome.status == "waiting"  # asked again, not taken for a decision
    assert any("'respond' is not allowed" in n for n in outcome.state["notices"])

    edit = {
        "type": "edit",
        "edited_action": {"name": "report_writer", "args": {"query": "Short report on 2000"}},
    }
    outcome = _answer(graph, design, outcome, settings, {"decisions": [edit]})
    outcome = _finish(graph, design, outcome, settings)
    assert outcome.status == "done", outcome.reason
    first = outcome.state["approvals"][0]
    assert (first["decision"], first["query"], first["by"]) == (
        "edit",
        "Short report on 2000",
        "human",
    )

    graph, design, outcome = _start("plan_execute", REPORT, settings)
    reject = {"type": "reject", "message": "no files today", "by": "ana@example.com"}
    outcome = _answer(graph, design, outcome, settings, {"decisions": [reject]})
    outcome = _finish(graph, design, outcome, settings)
    first = outcome.state["approvals"][0]
    assert (first["decision"], first["reason"], first["by"]) == (
        "reject",
        "no files today",
        "ana@example.com",
    )


def test_two_decisions_for_one_action_are_refused(settings):
    graph, design, outcome = _start("plan_execute", REPORT, settings)
    twice = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    again = _answer(graph, design, outcome, settings, twice)
    assert again.status == "waiting"
    assert any("one decision is asked for" in n for n in again.state["notices"])


def test_supervisor_bus_takes_a_standard_edit_of_the_task(settings):
    graph, design, outcome = _start("supervisor_bus", REPORT, settings)
    asked = outcome.interrupts[0]
    assert asked["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    name = asked["action_requests"][0]["name"]
    edit = {"type": "edit", "edited_action": {"name": name, "args": {"query": "One line only"}}}
    outcome = _answer(graph, design, outcome, settings, {"decisions": [edit]})
    outcome = _finish(graph, design, outcome, settings)
    assert outcome.status == "done", outcome.reason
    first = outcome.state["approvals"][0]
    assert (first["decision"], first["action"], first["target"]) == ("edit", "send", asked["agent"])
    assert first["query"] == "One line only"


@pytest.fixture
def api():
    served = start_demo_api()
    yield served
    served.server.shutdown()


def test_hierarchical_teams_asks_about_the_http_call_and_takes_its_edited_args(settings, api):
    settings = settings.model_copy(update={"teams_api_base": api.base_url})
    graph, design, outcome = _start("hierarchical_teams", "Check that the API is healthy", settings)
    asked = outcome.interrupts[0]
    [action] = asked["action_requests"]
    assert action["name"] == "http_request"
    assert action["args"] == asked["call"]
    edited = {**action["args"], "url": action["args"]["url"].replace("health", "status")}
    edit = {"type": "edit", "edited_action": {"name": "http_request", "args": edited}}
    outcome = _answer(graph, design, outcome, settings, {"decisions": [edit]})
    outcome = _finish(graph, design, outcome, settings)
    # the edited call was the one sent (the demo API has no /status: the subtask fails)
    assert "no such endpoint: GET /status" in outcome.reason
    first = outcome.state["approvals"][0]
    assert first["decision"] == "edit"
    assert first["query"].startswith(f"{edited['method']} {edited['url']}")


@pytest.mark.parametrize(
    ("response", "decided"),
    [
        ([{"type": "accept", "args": None}], ("approve", "", "")),
        ({"type": "ignore", "args": None}, ("skip", "", "")),
        ([{"type": "response", "args": "Too long."}], ("reject", "", "Too long.")),
        (
            [{"type": "edit", "args": {"action": "report_writer", "args": {"query": "Brief"}}}],
            ("edit", "Brief", ""),
        ),
    ],
)
def test_agent_inbox_responses_are_taken_as_their_nearest_decision(settings, response, decided):
    graph, design, outcome = _start("plan_execute", REPORT, settings)
    outcome = _answer(graph, design, outcome, settings, response)
    assert not any("Unusable" in n for n in outcome.state.get("notices") or [])  # taken
    outcome = _finish(graph, design, outcome, settings)
    first = outcome.state["approvals"][0]
    assert (first["decision"], first["query"] if decided[0] == "edit" else "", first["reason"]) == (
        decided
    )
