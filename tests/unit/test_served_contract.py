"""The contract of ``graph.served`` a LangGraph Server client relies on, without a server:
a design goes into a run's config and comes back the same, the input is JSON, a resume
value is a decision. (tests/server/ runs it on a real ``langgraph dev``.)"""

from __future__ import annotations

import json

import pytest

from graph.kernel.approval import AUTOMATIC, HumanDecision
from graph.kernel.design import Design, DesignError
from graph.models.choice import ModelChoice
from graph.prompts import default_text
from graph.served import (
    DESIGN_KEY,
    design_of,
    resume_value,
    run_config,
    run_input,
    served_graph,
    served_systems,
)


def test_a_design_comes_back_from_its_run_config_with_prompts_and_model_applied():
    design = Design(system="plan_execute", enabled_agents=["web_researcher", "synthesizer"])
    model = ModelChoice(endpoint="http://127.0.0.1:9/v1", model="tiny")
    texts = {"plan_execute/planner": default_text("plan_execute/planner") + "\nBe brief."}
    config = run_config(design, prompt_texts=texts, model=model)

    assert json.loads(json.dumps(config)) == config  # plain JSON, as the SDK sends it
    back = design_of("plan_execute", config)
    assert back == design.model_copy(update={"prompts": texts, "model": model})
    # The design counts steps; LangGraph is given node runs: three per plan_execute step.
    assert config["recursion_limit"] == 3 * design.recursion_limit
    assert AUTOMATIC not in config["configurable"]
    assert set(config["configurable"][DESIGN_KEY]["model"]) == {"endpoint", "model"}  # no key


def test_an_experiment_design_makes_the_gate_answer_by_itself():
    config = run_config(Design(system="supervisor_bus", approvals_by="experiment"))
    assert config["configurable"][AUTOMATIC] == ["writer"]


def test_a_run_without_a_design_gets_the_system_default_and_a_wrong_one_is_named():
    assert design_of("supervisor_bus", {}) == Design(system="supervisor_bus")
    with pytest.raises(DesignError, match="a plan_execute design; this graph is supervisor_bus"):
        design_of("supervisor_bus", run_config(Design(system="plan_execute")))
    with pytest.raises(
        DesignError, match=f"{DESIGN_KEY}.settings: plan_execute setting max_replans"
    ):
        design_of("plan_execute", {"configurable": {DESIGN_KEY: {"max_replans": -1}}})
    with pytest.raises(DesignError, match="unknown placeholder {question}"):
        design_of("plan_execute", run_config(Design(), {"plan_execute/planner": "{question}"}))
    with pytest.raises(DesignError, match="not JSON"):
        design_of("plan_execute", {"configurable": {DESIGN_KEY: "{oops"}})


def test_the_input_is_the_initial_state_as_json():
    design = Design(system="supervisor_bus")
    state = run_input("supervisor_bus", "  What caused the dot-com crash?  ", design)

    assert json.loads(json.dumps(state)) == state
    assert state["messages"][0]["type"] == "human"
    assert state["messages"][0]["content"] == "What caused the dot-com crash?"
    assert state["bus"][0]["to"] == "supervisor"
    with pytest.raises(ValueError, match="empty"):
        run_input("supervisor_bus", "  ", design)
    with pytest.raises(DesignError):
        run_input("plan_execute", "hi", design)


def test_a_resume_value_is_a_decision_and_a_typo_fails_in_the_client():
    assert HumanDecision.model_validate(resume_value("edit", query="q")).query == "q"
    with pytest.raises(ValueError):
        resume_value("aprove")


def test_served_graphs_have_no_checkpointer_and_are_built_once_per_design():
    config = run_config(Design(system="plan_execute", enabled_agents=["synthesizer"]))
    graph = served_graph("plan_execute", config)

    assert graph.checkpointer is False  # the server puts its own in
    assert served_graph("plan_execute", json.loads(json.dumps(config))) is graph
    assert "web_researcher" not in graph.nodes
    assert served_graph("plan_execute", {}) is not graph
    assert set(served_systems()) == {"plan_execute", "supervisor_bus", "hierarchical_teams"}
