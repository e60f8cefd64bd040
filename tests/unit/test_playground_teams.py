"""The node playground on hierarchical_teams runs: every model-calling node can be tried,
the lead supervisor's plan, replan and routing, a team's supervisor and a worker inside a
team's subgraph, and the guardrail classifier; nothing of the run executes, no tool runs
and no HTTP call is sent.

Real parts: the run service with the SQLite checkpointer, the offline scripted model, the
demo API over real HTTP (counting what it is sent).
"""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.model_profiles import OFFLINE
from graph.service.playground import (
    PlaygroundError,
    PromptTry,
    Trial,
    target,
    try_node,
    tryable_points,
)
from tests.unit.conftest import wait_status
from tests.unit.test_hierarchical_teams import teams_settings
from tests.unit.test_playground import Counting
from tests.unit.test_teams_fork import NEVER_ASK, THREE_INTENTS, _finished_run, api, teams
from ui.views import view_of

__all__ = ["api", "teams", "teams_settings"]  # fixtures


def _try(service, run_id: str, checkpoint_id: str, prompt: str, **kw) -> Trial:
    return try_node(
        service,
        run_id,
        checkpoint_id,
        [PromptTry("saved", default_text(prompt))],
        [service.profiles.get(OFFLINE)],
        **kw,
    )


def _point(service, run_id: str, node: str) -> dict:
    return next(p for p in tryable_points(service, run_id) if p["node"] == node)


def test_the_tryable_checkpoints_of_a_teams_run_reach_inside_its_teams_and_its_guardrail(teams):
    design = NEVER_ASK.model_copy(update={"guardrail": True, "guardrail_classifier": True})
    run_id = teams.start(THREE_INTENTS, design)
    assert wait_status(teams, run_id, "done").status == "done"
    points = tryable_points(teams, run_id)
    by_node = {p["node"]: p["prompt"] for p in points}
    assert by_node == {
        "guardrail": "guardrail/classifier",
        "lead_supervisor": "hierarchical_teams/plan",
        "request_team:supervisor": "hierarchical_teams/team_supervisor",
        "request_team:health_checker": "hierarchical_teams/health_checker",
        "request_team:site_requester": "hierarchical_teams/site_requester",
        "search_team:supervisor": "hierarchical_teams/team_supervisor",
        "search_team:searcher": "hierarchical_teams/searcher",
        "search_team:url_builder": "hierarchical_teams/url_builder",
    }
    # numbered as the History page's timeline numbers them, in its order
    timeline = {p["checkpoint_id"]: p["position"] for p in teams.timeline(run_id, inner=True)}
    assert [p["number"] for p in points] == [timeline[p["checkpoint_id"]] for p in points]
    assert any("." in p["number"] for p in points)
    guardrail = _try(teams, run_id, points[0]["checkpoint_id"], "guardrail/classifier")
    (sample,) = guardrail.samples
    assert guardrail.node == "guardrail" and sample.ok and sample.fields, sample.problem


def test_a_team_supervisor_inside_its_subgraph_is_asked_for_its_routing_only(teams, api):
    run_id = _finished_run(teams)
    events = len(teams.store.events(run_id))
    point = _point(teams, run_id, "search_team:supervisor")
    counting = Counting()
    trial = _try(
        teams,
        run_id,
        point["checkpoint_id"],
        "hierarchical_teams/team_supervisor",
        callbacks=[counting],
    )
    (sample,) = trial.samples
    assert sample.ok, sample.problem
    assert sample.fields["next_worker"] in ("searcher", "url_builder")
    assert counting.models == 1 and counting.tools == 0
    assert not {"searcher", "url_builder", "supervisor"} & set(counting.chains)
    assert len(teams.store.events(run_id)) == events
    # a fork of that moment starts at the run's checkpoint before search_team
    found = target(teams, run_id, point["checkpoint_id"])
    before = next(p for p in teams.timeline(run_id) if p["checkpoint_id"] == found.fork_from)
    assert before["next"] == ["search_team"] and found.inside == "search_team"
    assert trial.fork_from == found.fork_from


def test_a_worker_is_asked_once_and_its_proposed_tool_call_is_shown_not_run(teams, api):
    run_id = _finished_run(teams)
    sent = (api.count("GET", "/health"), api.count("POST", "/sites"))
    counting = Counting()
    searcher = _point(teams, run_id, "search_team:searcher")
    trial = _try(
        teams,
        run_id,
        searcher["checkpoint_id"],
        "hierarchical_teams/searcher",
        callbacks=[counting],
    )
    (sample,) = trial.samples
    assert sample.ok, sample.problem
    assert [r["tool"] for r in sample.rows] == ["find_news_sites"]
    assert "semiconductor tariffs" in sample.rows[0]["args"]
    checker = _point(teams, run_id, "request_team:health_checker")
    trial = _try(
        teams,
        run_id,
        checker["checkpoint_id"],
        "hierarchical_teams/health_checker",
        callbacks=[counting],
    )
    (sample,) = trial.samples
    assert sample.ok, sample.problem
    assert [r["tool"] for r in sample.rows] == ["http_get"] and "/health" in sample.rows[0]["args"]
    assert counting.models == 2 and counting.tools == 0
    assert (api.count("GET", "/health"), api.count("POST", "/sites")) == sent  # nothing sent


def test_the_lead_supervisors_replan_after_an_edit_can_be_tried(store, teams_settings, api):
    from graph.service.run_service import RunService

    service = RunService(store, teams_settings, timeout_tick_s=0)
    try:
        design = Design(system="hierarchical_teams", approvals={"health_checker": "never"})
        run_id = service.start(THREE_INTENTS, design)
        wait_status(service, run_id, "waiting")  # sending the URLs waits for a human
        service.edit_request(
            run_id, "Check that the API is healthy and find news sites about interest rates"
        )
        wait_status(service, run_id, "done")
        point = _point(service, run_id, "lead_supervisor")
        points = [p for p in tryable_points(service, run_id) if p["node"] == "lead_supervisor"]
        replan = next(p for p in points if p["prompt"] == "hierarchical_teams/replan")
        trial = _try(service, run_id, replan["checkpoint_id"], "hierarchical_teams/replan")
        (sample,) = trial.samples
        assert trial.prompt_name == "hierarchical_teams/replan"
        assert sample.ok, sample.problem
        assert set(sample.value) == {"keep", "cancel", "add"}
        assert "interest rates" in str(sample.value["add"])
        assert point["prompt"] == "hierarchical_teams/plan"  # the first plan comes first
    finally:
        service.shutdown()


def test_the_lead_supervisors_routing_among_several_subtasks_can_be_tried(teams):
    run_id = _finished_run(teams)
    point = next(p for p in teams.timeline(run_id) if p["node"] == "search_team")
    rows = view_of("hierarchical_teams").fork_table("subtasks", point["fields"], NEVER_ASK).rows
    rows.append(
        {
            "id": "",
            "team": "request_team",
            "instruction": "Check that the API is healthy again",
            "status": "pending",
            "depends_on": "s1",
        }
    )
    fork = teams.fork(run_id, point["checkpoint_id"], {"subtasks": rows})
    assert wait_status(teams, fork, "done").status == "done"
    route = next(
        p for p in tryable_points(teams, fork) if p["prompt"] == "hierarchical_teams/route"
    )
    trial = _try(teams, fork, route["checkpoint_id"], "hierarchical_teams/route")
    (sample,) = trial.samples
    assert trial.node == "lead_supervisor"
    assert sample.ok, sample.problem
    assert sample.fields["next_subtask_id"] in ("s3", "s4")


def test_a_checkpoint_inside_a_team_before_its_http_gate_is_refused_in_words(teams):
    run_id = _finished_run(teams)
    gate = next(
        p for p in teams.timeline(run_id, inner=True) if p["inside"] and p["next"] == ["call_api"]
    )
    with pytest.raises(PlaygroundError, match="next node here is request_team:call_api"):
        target(teams, run_id, gate["checkpoint_id"])
