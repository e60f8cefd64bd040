"""Long plans and runaway loops (issue 33.6): the design's recursion limit counts steps of
a system's work, so a plan of 60 steps completes on the default design, while a loop that
keeps adding work still stops with its reason. Real run service, store and checkpointer,
offline scripted model."""

from __future__ import annotations

import json

from graph.kernel.design import Design, node_run_limit
from graph.kernel.system import get_system
from graph.service.runs import run_question
from tests.support import RewritingModel, is_executor, is_planner

SYMBOLS = ["AAPL", "MSFT", "AMZN", "GOOG", "IBM"]  # the bundled stock table's, 2000-2010


def long_question(clauses: int) -> str:
    """One database question per clause: the scripted Planner gives each its own step
    (and a synthesizer step after them)."""
    return " ".join(
        f"What was the {('highest', 'lowest')[i // 55 % 2]} price of {SYMBOLS[i // 11 % 5]} "
        f"in {2000 + i % 11}?"
        for i in range(clauses)
    )


def test_a_plan_of_sixty_steps_completes_on_the_default_design(service, store, settings):
    assert settings.recursion_limit == 60 and Design().system == "plan_execute"
    run_id = service.start(long_question(59), Design())
    run = service.wait(run_id, timeout=240)
    assert (run.status, run.reason) == ("done", "Finished: the synthesizer wrote the final answer.")
    rows = store.snapshot(run_id)["rows"]
    assert len(rows) == 60 and rows[-1]["agent"] == "synthesizer"
    assert all(r["status"] == "done" for r in rows)
    assert store.nodes_run(run_id)[-1] == "synthesizer"


def test_the_limit_given_to_langgraph_is_steps_times_each_systems_node_runs_per_step():
    for name in ("plan_execute", "hierarchical_teams", "supervisor_bus"):
        design = Design(system=name, recursion_limit=60)
        per_step = get_system(name).shape.node_runs_per_step
        assert per_step >= 2  # a step is at least a router's run and a worker's
        assert node_run_limit(design) == 60 * per_step


def _runaway(prompt: str, reply: str, n: int) -> str | None:
    """A Planner that adds a step at every revision, and an Executor that always asks for
    a replan: each step replans to its cap and the plan grows without end."""
    if is_executor(prompt):
        return json.dumps({"replan": True, "goto": "planner", "reason": "not enough yet"})
    if is_planner(prompt) and "revision at step" in prompt:
        more = {"agent": "web_researcher", "action": f"Search the documents again, round {n}."}
        *steps, last = json.loads(reply)["steps"]  # the synthesizer's step stays last
        return json.dumps({"steps": [*steps, more, last]})
    return None


def test_a_replan_loop_that_keeps_lengthening_the_plan_stops_at_the_limit_with_a_reason(
    tmp_path,
):
    from graph.kernel.checkpoints import open_checkpointer

    system = get_system("plan_execute")
    saver = open_checkpointer(tmp_path / "cp.sqlite", system.shape.state_types)
    design = Design(settings={"plan_execute": {"max_replans": 1, "escalate_at_cap": False}})
    model = RewritingModel(rewrite=_runaway)
    graph = system.build_graph(design, checkpointer=saver, planner_model=model)
    outcome = run_question("Who founded Apple?", design, graph=graph)
    assert outcome.status == "failed"
    limit = node_run_limit(design)
    assert outcome.reason.startswith(
        f"Stopped at the recursion limit (60 steps: {limit} node runs) after {limit} node run(s)"
    )
    assert limit == 180 and len(outcome.state["plan"]) > 20  # it grew until the limit
    assert outcome.state["step_results"]  # partial results kept from the checkpoints


def test_a_request_of_sixty_subtasks_completes_on_hierarchical_teams(service, store):
    topics = ["Apple", "Microsoft", "Amazon", "Google", "IBM", "Intel"]
    request = " ".join(f"Find news sites about {topics[i % 6]} in {1991 + i}." for i in range(60))
    run_id = service.start(request, Design(system="hierarchical_teams"))
    run = service.wait(run_id, timeout=240)
    assert run.status == "done", run.reason
    rows = store.snapshot(run_id)["rows"]
    assert len(rows) == 60 and all(r["status"] == "done" for r in rows)


def _lead_at(step: int, subtasks: int, settings) -> dict:
    """The lead supervisor's command at dispatch ``step`` of a plan of ``subtasks``
    subtasks, the first done and the rest pending."""
    import graph.hierarchical_teams  # noqa: F401 (registers prompts)
    from graph.hierarchical_teams.deps import Deps
    from graph.hierarchical_teams.lead import lead_supervisor_node
    from graph.hierarchical_teams.system import LEAD, MAX_DISPATCHES
    from graph.kernel.ledger import SideEffectLedger
    from graph.models.scripted import ScriptedChatModel
    from graph.prompts import PromptSet

    def subtask(i: int) -> dict:
        return {
            "id": f"s{i}",
            "team": "search_team",
            "status": "delegated" if i == 1 else "pending",
            "instruction": f"Find reliable news sites about topic {i}",
            "depends_on": [],
        }

    state = {
        "subtasks_planned": True,
        "request": "x",
        "current_step": step,
        "subtasks": [subtask(i) for i in range(1, subtasks + 1)],
        "team_results": {"s1": {"status": "done", "result": "ok", "ended_at": 1.0}},
    }
    deps = Deps(
        settings=settings,
        lead_model=ScriptedChatModel(),
        worker_model=ScriptedChatModel(),
        prompts=PromptSet(),
        ledger=SideEffectLedger(settings.home / "l.sqlite"),
        enabled=list(get_system("hierarchical_teams").agents),
        teams=["search_team", "request_team"],
        nodes=frozenset({LEAD, "search_team", "request_team"}),
        max_dispatches=MAX_DISPATCHES,
    )
    command = lead_supervisor_node(state, deps)
    return {"goto": command.goto, **command.update}


def test_the_lead_supervisors_dispatch_limit_grows_with_the_plan_and_still_stops(settings):
    from graph.hierarchical_teams.system import MAX_DISPATCHES

    limit = MAX_DISPATCHES + 40  # one dispatch per subtask of the plan, and the spare
    below = _lead_at(limit - 1, 40, settings)
    assert below["goto"] == "search_team" and "outcome" not in below
    at = _lead_at(limit, 40, settings)
    assert (at["goto"], at["outcome"]) == ("__end__", "failed")
    assert f"dispatched {limit} subtasks, its limit" in at["outcome_reason"]
