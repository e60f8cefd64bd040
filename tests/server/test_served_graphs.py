"""Every hosted system served by a real LangGraph Server (``langgraph dev`` on loopback,
``langgraph.json``), driven through ``langgraph-sdk`` as any client would: runs of each
system on the offline scripted model, an approval answered with ``Command(resume=...)``,
and designs (agents, guardrail, limits) read from the run's or the assistant's config."""

from __future__ import annotations

import re

import pytest
from langgraph_sdk import get_sync_client

from graph.kernel.conversation import follow_up_plan
from graph.kernel.design import Design
from graph.kernel.system import get_system, systems
from graph.models.choice import ModelChoice
from graph.served import (
    DESIGN_KEY,
    redirect_command,
    resume_value,
    run_config,
    run_input,
    served_graph,
    snapshot_of,
)
from graph.service.runs import run_question
from ui.views import view_of

SCRIPTED = ModelChoice()  # the offline scripted model, named explicitly


@pytest.fixture(scope="module")
def client(langgraph_server):
    return get_sync_client(url=langgraph_server.url)


def _unattended(system: str, **fields) -> Design:
    """The system's default design on the scripted model, with no agent asking a person."""
    agents = get_system(system).agents
    never = {name: "never" for name, spec in agents.items() if spec.side_effects}
    return Design(system=system, approvals=never, model=SCRIPTED, **fields)


def _timeless(answer: str) -> str:
    """An answer without the response times it quotes (the demo API's)."""
    return re.sub(r'time_s": [0-9.]+', 'time_s": _', answer)


def _run(client, system: str, question: str, design: Design, **options):
    thread_id = client.threads.create()["thread_id"]
    values = client.runs.wait(
        thread_id,
        system,
        input=run_input(system, question, design),
        config=run_config(design),
        **options,
    )
    return thread_id, values


def test_langgraph_json_serves_every_hosted_system_by_its_name(client):
    served = {a["graph_id"] for a in client.assistants.search(limit=100)}
    assert set(systems()) <= served  # a test may serve a graph of its own too


@pytest.mark.parametrize("system", ["plan_execute", "supervisor_bus", "hierarchical_teams"])
def test_each_system_runs_on_the_server_to_the_answer_a_local_run_gives(client, system):
    question = view_of(system).examples[0]
    design = _unattended(system)
    thread_id, values = _run(client, system, question, design)

    assert client.threads.get(thread_id)["status"] == "idle"
    assert values["outcome"] == "done", values.get("outcome_reason")
    local = run_question(question, design)  # the same design, run in this process
    assert local.status == "done"
    assert _timeless(values["final_answer"]) == _timeless(local.state["final_answer"])


def test_an_approval_pauses_the_served_run_until_a_resume_command_answers_it(client):
    design = Design(system="supervisor_bus", model=SCRIPTED)  # the writer always asks
    assert design.approval_policy("writer") == "always"
    question = "What caused the dot-com crash?"
    thread_id, values = _run(client, "supervisor_bus", question, design)

    assert client.threads.get(thread_id)["status"] == "interrupted"
    assert not values.get("final_answer")
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["human"]
    [pending] = state["interrupts"]
    assert pending["value"]["kind"] == "approval"
    assert pending["value"]["agent"] == "writer"

    # an answer that is no decision is never taken for one: the gate asks again
    client.runs.wait(
        thread_id,
        "supervisor_bus",
        command={"resume": {"decision": "maybe"}},
        config=run_config(design),
    )
    assert client.threads.get(thread_id)["status"] == "interrupted"
    again = client.threads.get_state(thread_id)
    assert again["interrupts"][0]["value"]["agent"] == "writer"
    assert any("Unusable decision" in n for n in again["values"].get("notices", []))

    values = client.runs.wait(
        thread_id,
        "supervisor_bus",
        command={"resume": resume_value("approve", reason="fine")},
        config=run_config(design),
    )
    assert client.threads.get(thread_id)["status"] == "idle"
    assert values["outcome"] == "done", values.get("outcome_reason")
    assert values["final_answer"]
    decided = [a for a in values["approvals"] if a.get("decision") == "approve"]
    assert decided and decided[0]["by"] == "human" and decided[0]["reason"] == "fine"

    history = client.threads.get_history(thread_id, limit=200)
    paused = [h for h in history if h["next"] == ["human"]]
    assert paused, "the history keeps the checkpoint where the run waited"
    assert history[0]["values"]["final_answer"] == values["final_answer"]  # newest first


def test_an_approval_asked_inside_a_team_subgraph_is_answered_on_the_thread(client):
    design = Design(system="hierarchical_teams", model=SCRIPTED)  # site_requester asks
    question = view_of("hierarchical_teams").examples[1]  # ... then send their URLs
    thread_id, _ = _run(client, "hierarchical_teams", question, design)

    assert client.threads.get(thread_id)["status"] == "interrupted"
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["request_team"]  # the team subgraph waits
    [pending] = state["interrupts"]
    assert (pending["value"]["agent"], pending["value"]["team"]) == (
        "site_requester",
        "request_team",
    )
    assert pending["value"]["query"].startswith("POST http://127.0.0.1:")

    values = client.runs.wait(
        thread_id,
        "hierarchical_teams",
        command={"resume": resume_value("approve")},
        config=run_config(design),
    )
    assert client.threads.get(thread_id)["status"] == "idle"
    assert values["outcome"] == "done", values.get("outcome_reason")
    assert {s["status"] for s in values["subtasks"]} == {"done"}


def test_step_mode_on_the_server_is_the_clients_interrupt_before(client):
    design = _unattended("plan_execute")
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(
        thread_id,
        "plan_execute",
        input=run_input("plan_execute", "How did Tesla's stock do in 2008?", design),
        config=run_config(design),
        interrupt_before=["executor"],
    )
    paused = client.threads.get_state(thread_id)
    assert paused["next"] == ["executor"]
    assert paused["values"]["plan"]  # the planner ran, the executor has not

    values = client.runs.wait(thread_id, "plan_execute", input=None, config=run_config(design))
    assert values["outcome"] == "done", values.get("outcome_reason")


def test_an_experiment_design_decides_its_approvals_on_the_server_without_waiting(client):
    design = Design(system="supervisor_bus", approvals_by="experiment", model=SCRIPTED)
    thread_id, values = _run(client, "supervisor_bus", "What caused the dot-com crash?", design)

    assert client.threads.get(thread_id)["status"] == "idle"
    assert values["outcome"] == "done", values.get("outcome_reason")
    assert [a["by"] for a in values["approvals"]] == ["experiment"]


def test_a_streamed_served_run_reports_each_model_call_on_the_custom_stream(client):
    design = _unattended("plan_execute")
    thread_id = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            thread_id,
            "plan_execute",
            input=run_input("plan_execute", "How did Tesla's stock do in 2008?", design),
            config=run_config(design),
            stream_mode=["updates", "custom"],
            stream_subgraphs=True,
        )
    )
    calls = [p.data["llm_call"] for p in parts if p.event.startswith("custom")]
    calls = [c for c in calls if c]
    updates = [p.data for p in parts if p.event == "updates"]

    assert {c["node"] for c in calls} >= {"planner", "executor"}
    assert all(c["model"] and c["latency_s"] >= 0 for c in calls)
    assert any("synthesizer" in u for u in updates)


def test_a_follow_up_message_on_a_finished_served_thread_answers_a_second_turn(client):
    design = _unattended("plan_execute")
    thread_id, first = _run(client, "plan_execute", "How did Tesla's stock do in 2008?", design)
    assert first["outcome"] == "done"

    plan = follow_up_plan(
        served_graph("plan_execute", run_config(design)),
        design,
        "And how did Apple do in 2007?",
        get_system("plan_execute"),
    )
    update, goto = plan(snapshot_of(client.threads.get_state(thread_id)))
    second = client.runs.wait(
        thread_id,
        "plan_execute",
        command=redirect_command(update, goto),
        config=run_config(design),
    )

    assert second["outcome"] == "done"
    assert second["final_answer"].startswith('Answer to "And how did Apple do in 2007?"')
    turns = sorted(second["turns"].values(), key=lambda t: t["at"])
    assert [(t["text"], t["status"]) for t in turns] == [
        ("How did Tesla's stock do in 2008?", "answered"),
        ("And how did Apple do in 2007?", "answered"),
    ]


def test_a_design_without_an_agent_serves_a_graph_without_its_node(client):
    design = Design(
        system="plan_execute",
        enabled_agents=["web_researcher", "data_researcher", "synthesizer"],
        model=SCRIPTED,
    )
    assistant = client.assistants.create("plan_execute", config=run_config(design))
    nodes = {n["id"] for n in client.assistants.get_graph(assistant["assistant_id"])["nodes"]}
    default = {n["id"] for n in client.assistants.get_graph("plan_execute")["nodes"]}

    assert "chart_generator" in default and "report_writer" in default
    assert "chart_generator" not in nodes and "report_writer" not in nodes
    assert {"planner", "executor", "web_researcher", "synthesizer"} <= nodes


def test_a_served_run_follows_the_guardrail_and_agents_of_its_assistant_design(client):
    design = Design(
        system="plan_execute",
        enabled_agents=["web_researcher", "data_researcher", "synthesizer"],
        guardrail=True,
        model=SCRIPTED,
    )
    assistant = client.assistants.create("plan_execute", config=run_config(design))
    thread_id = client.threads.create()["thread_id"]
    question = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
    values = client.runs.wait(
        thread_id, assistant["assistant_id"], input=run_input("plan_execute", question, design)
    )  # no config on the run: the assistant's design applies

    assert "chart_generator is not enabled" in values["final_answer"]
    assert values["enabled_agents"] == ["web_researcher", "data_researcher", "synthesizer"]


def test_a_run_whose_design_is_wrong_fails_saying_which_field(client):
    design = _unattended("plan_execute")
    config = run_config(design)
    config["configurable"][DESIGN_KEY]["enabled_agents"] = ["web_researcher", "astrologer"]
    thread_id = client.threads.create()["thread_id"]
    values = client.runs.wait(
        thread_id,
        "plan_execute",
        input=run_input("plan_execute", "How did Tesla's stock do in 2008?", design),
        config=config,
        raise_error=False,
    )

    assert values["__error__"]["error"] == "DesignError"
    assert client.threads.get(thread_id)["status"] == "error"
    message = client.threads.get(thread_id)["error"]["message"]
    assert message.startswith(f"{DESIGN_KEY}.enabled_agents: unknown agent(s): astrologer")


def test_the_recursion_limit_of_the_design_reaches_the_served_run(client):
    question = " ".join(f"What was the highest price of AAPL in {y}?" for y in range(2001, 2009))
    design = _unattended("plan_execute", recursion_limit=5)  # steps: 15 node runs
    thread_id, values = _run(client, "plan_execute", question, design, raise_error=False)

    assert values["__error__"]["error"] == "GraphRecursionError"
    assert "Recursion limit of 15" in values["__error__"]["message"]
    _, enough = _run(client, "plan_execute", question, _unattended("plan_execute"))
    assert enough["outcome"] == "done"


def test_the_server_stayed_on_loopback_all_along(client, langgraph_server):
    """Last in this file: by now the server has started and run every system."""
    client.runs.wait(
        None,
        "hierarchical_teams",
        input=run_input("hierarchical_teams", view_of("hierarchical_teams").examples[0]),
        config=run_config(_unattended("hierarchical_teams")),
    )
    assert langgraph_server.off_loopback() == []
