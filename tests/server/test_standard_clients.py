"""Any LangGraph client can answer a Stepwise run: a client written from LangChain's
documented human-in-the-loop schema alone (``HITLRequest`` in, ``{"decisions": [...]}``
out, plain ``langgraph-sdk`` calls, no Stepwise import on the answering side) answers
each system's approval on a real ``langgraph dev`` with approve, edit and reject, and the
run goes on as decided.

The runs are started the way an Agent Inbox user's are: by an assistant that carries the
design (``assistants.create(graph, config=run_config(design))``), so the answering client
needs nothing but the assistant's id and the thread's."""

from __future__ import annotations

import pytest
from langgraph_sdk import get_sync_client

from graph.kernel.design import Design
from graph.models.choice import ModelChoice
from graph.served import run_config, run_input
from tests.support_procs import langgraph_server
from ui.views import view_of

QUESTIONS = {
    "plan_execute": "What caused the dot-com crash? Save a report.",  # report_writer asks
    "supervisor_bus": "What caused the dot-com crash?",  # the writer asks
    "hierarchical_teams": view_of("hierarchical_teams").examples[1],  # site_requester asks
}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """A server of this module's own: the teams' approved calls store sites in its demo
    API, which the session's server must not see (its runs compare answers that count
    them)."""
    served = langgraph_server.start(tmp_path_factory.mktemp("langgraph-dev"))
    yield get_sync_client(url=served.url)
    served.stop()


@pytest.fixture(scope="module")
def assistants(client):
    """One assistant per system carrying its default design on the scripted model."""
    return {
        system: client.assistants.create(
            system, config=run_config(Design(system=system, model=ModelChoice()))
        )["assistant_id"]
        for system in QUESTIONS
    }


def _waiting(client, assistant_id: str, system: str) -> tuple[str, dict]:
    """A new thread of ``system`` stopped at its first approval, and what it asks."""
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, assistant_id, input=run_input(system, QUESTIONS[system]))
    client.runs.join(thread_id, run["run_id"])
    assert client.threads.get(thread_id)["status"] == "interrupted"
    [pending] = client.threads.get_state(thread_id)["interrupts"]
    return thread_id, pending


# ------------------------------------------------------ the standard-only client


def asked(pending: dict) -> tuple[dict, list[str]]:
    """The one action a HITLRequest asks about and the decisions its review allows."""
    request = pending["value"]
    [action] = request["action_requests"]
    [review] = [r for r in request["review_configs"] if r["action_name"] == action["name"]]
    return action, review["allowed_decisions"]


def answer(client, thread_id: str, assistant_id: str, pending: dict, decision: dict) -> dict:
    """Resume the thread with ``{"decisions": [decision]}`` and wait for its next stop."""
    run = client.runs.create(
        thread_id,
        assistant_id,
        command={"resume": {pending["id"]: {"decisions": [decision]}}},
    )
    client.runs.join(thread_id, run["run_id"])
    return client.threads.get_state(thread_id)


def approve_the_rest(client, thread_id: str, assistant_id: str, state: dict) -> dict:
    while state["interrupts"]:
        state = answer(client, thread_id, assistant_id, state["interrupts"][0], {"type": "approve"})
    return state["values"]


def edited(system: str, args: dict) -> dict:
    if system == "hierarchical_teams":  # the call: the same URL, another body
        return {**args, "body": {**(args.get("body") or {}), "note": "edited by a client"}}
    return {**args, "query": "Keep it to three lines."}


# ------------------------------------------------------------------------ tests


@pytest.mark.parametrize("system", list(QUESTIONS))
@pytest.mark.parametrize("decision", ["approve", "edit", "reject"])
def test_a_standard_client_answers_each_systems_approval(client, assistants, system, decision):
    assistant_id = assistants[system]
    thread_id, pending = _waiting(client, assistant_id, system)
    action, allowed = asked(pending)
    assert decision in allowed and "respond" not in allowed
    given: dict = {"type": decision}
    if decision == "edit":
        new_args = edited(system, action["args"])
        given["edited_action"] = {"name": action["name"], "args": new_args}
    if decision == "reject":
        given["message"] = "Not this one."

    state = answer(client, thread_id, assistant_id, pending, given)
    values = approve_the_rest(client, thread_id, assistant_id, state)

    first = values["approvals"][0]
    assert (first["decision"], first["by"]) == (decision, "human")
    if decision == "edit":
        if system == "hierarchical_teams":
            assert '"note": "edited by a client"' in first["query"]
        else:
            assert first["query"] == "Keep it to three lines."
    if decision == "reject":
        assert first["reason"] == "Not this one."
    if system == "plan_execute" and decision == "reject":  # the planner replanned the step
        assert values["replan_attempts"][str(first["step"])] == 1
        assert values["outcome"] == "done", values.get("outcome_reason")
    elif system == "hierarchical_teams" and decision == "reject":  # nothing was sent
        sent = [t for t in values["subtasks"] if t["team"] == "request_team"]
        assert sent[0]["status"] == "failed" and "nothing was sent" in sent[0]["result"]
    else:
        assert values["outcome"] == "done", values.get("outcome_reason")


def test_a_decision_the_request_does_not_allow_is_asked_again(client, assistants):
    assistant_id = assistants["plan_execute"]
    thread_id, pending = _waiting(client, assistant_id, "plan_execute")
    state = answer(
        client, thread_id, assistant_id, pending, {"type": "respond", "message": "Sure."}
    )
    [again] = state["interrupts"]
    assert again["id"] != pending["id"] and asked(again) == asked(pending)
    assert any("'respond' is not allowed" in n for n in state["values"]["notices"])
