"""The one approval gate (``graph.kernel.approval``), in every hosted system: an answer
that is not a decision never crashes a run and is never taken for one; the run asks the
same question again, says so, and goes on when a real decision comes."""

from __future__ import annotations

import pytest
from langgraph.types import Command

from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.service.run_storage import checkpointer_for
from graph.service.runs import continue_run, run_question
from graph.tools.demo_api import start_demo_api

CASES = {
    "plan_execute": ("What caused the dot-com crash? Save a report.", {}),
    "supervisor_bus": ("What caused the dot-com crash?", {}),
    "hierarchical_teams": ("Check that the API is healthy", {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_malformed_decision_asks_the_same_question_again(name, settings):
    question, approvals = CASES[name]
    api = start_demo_api() if name == "hierarchical_teams" else None
    try:
        if api is not None:
            settings = settings.model_copy(update={"teams_api_base": api.base_url})
        design = Design(system=name, **({"approvals": approvals} if approvals else {}))
        graph = get_system(name).build_graph(
            design, settings=settings, checkpointer=checkpointer_for(settings)
        )
        outcome = run_question(question, design, settings=settings, graph=graph)
        assert outcome.status == "waiting", outcome.reason
        asked = outcome.interrupts[0]

        for bad in ("yes please", {"decision": "maybe"}, None):
            outcome = continue_run(
                graph,
                Command(resume={asked["id"]: bad}),
                outcome.thread_id,
                design,
                settings=settings,
            )
            assert outcome.status == "waiting", (bad, outcome.reason)
            again = outcome.interrupts[0]
            assert again["id"] != asked["id"]  # a new question...
            assert {k: v for k, v in again.items() if k not in ("id", "asked_at")} == {
                k: v for k, v in asked.items() if k not in ("id", "asked_at")
            }  # ...the same one
            asked = again

        outcome = continue_run(
            graph,
            Command(resume={asked["id"]: {"decision": "approve"}}),
            outcome.thread_id,
            design,
            settings=settings,
        )
        while outcome.status == "waiting":  # later questions of the same run
            pending = outcome.interrupts[0]
            outcome = continue_run(
                graph,
                Command(resume={pending["id"]: {"decision": "approve"}}),
                outcome.thread_id,
                design,
                settings=settings,
            )
        assert outcome.status == "done", outcome.reason
        # said in the run's notices (a team's, when its subgraph hands back its results)
        for bad in ("yes please", {"decision": "maybe"}, None):
            assert f"Unusable decision {bad!r}; asking again." in outcome.state["notices"]
    finally:
        if api is not None:
            api.server.shutdown()
