"""A fork with another prompt for every prompt the node playground can try, not only the
tuned ones: the teams lead's routing, a teams worker's, the guardrail classifier's. The
fork runs with the new text from the checkpoint on (its live calls' recorded requests
carry it) and replays the parent's calls before it.

Real parts: the run service with the SQLite checkpointer, the offline scripted model, the
demo API over real HTTP.
"""

from __future__ import annotations

import pytest

from graph.hierarchical_teams import SYSTEM as TEAMS
from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.playground import target, tryable_points
from tests.unit.conftest import wait_status
from tests.unit.test_hierarchical_teams import teams_settings
from tests.unit.test_prompt_forks import _calls, counting
from tests.unit.test_teams_fork import NEVER_ASK, THREE_INTENTS, _finished_run, api, teams
from ui.views import view_of

__all__ = ["api", "counting", "teams", "teams_settings"]  # fixtures

MARK = "FORK-MARK-7319: tuned in a fork."
ROUTE = "hierarchical_teams/route"
SEARCHER = "hierarchical_teams/searcher"
CLASSIFIER = "guardrail/classifier"
REPLAN = "hierarchical_teams/replan"


def _fork_and_check(service, parent: str, checkpoint_id: str, prompt: str, node: str) -> dict:
    """Fork with ``prompt`` marked and check what every such fork must show: the calls
    before the checkpoint are the parent's, replayed, with the old text; the later ones
    live, the first of ``node`` asked with the new text; the version is recorded."""
    store = service.store
    before = [c["request"] for c in _calls(store, parent)]
    text = MARK + "\n" + default_text(prompt)
    fork = service.fork_with_prompt(parent, checkpoint_id, prompt, text=text)
    record = service.wait(fork, timeout=120)
    assert record.status == "done", record.reason
    calls = _calls(store, fork)
    replayed = [c for c in calls if c.get("replayed") is True]
    live = [c for c in calls if c.get("replayed") is False]
    assert len(replayed) + len(live) == len(calls), "a fork call says neither"
    assert replayed and calls[: len(replayed)] == replayed, "a replayed call after a live one"
    assert [c["request"] for c in replayed] == before[: len(replayed)]
    assert MARK not in str([c["request"] for c in replayed])
    asked = [c for c in live if c["node"] == node]
    assert asked and MARK in str(asked[0]["request"]["messages"])
    assert record.parent_run == parent and record.parent_checkpoint == checkpoint_id
    assert store.prompt_version(record.prompt_versions[prompt]).text == text
    assert record.design["prompts"][prompt] == text
    return {"fork": fork, "replayed": replayed, "live": live}


def test_a_teams_run_forks_with_another_lead_routing_prompt(teams):
    run_id = _finished_run(teams)
    point = next(p for p in teams.timeline(run_id) if p["node"] == "search_team")
    rows = view_of("hierarchical_teams").fork_table("subtasks", point["fields"], NEVER_ASK).rows
    for again in ("again", "once more"):  # two more subtasks: the lead routes twice
        rows.append(
            {
                "id": "",
                "team": "request_team",
                "instruction": f"Check that the API is healthy {again}",
                "status": "pending",
                "depends_on": "s1",
            }
        )
    parent = teams.fork(run_id, point["checkpoint_id"], {"subtasks": rows})
    assert wait_status(teams, parent, "done").status == "done"
    index = {p["checkpoint_id"]: p["index"] for p in teams.timeline(parent)}
    routes = [p for p in tryable_points(teams, parent) if p["prompt"] == ROUTE]
    # the fork's first checkpoint has nothing of its own before it: a later routing
    route = next(p for p in routes if index.get(p["checkpoint_id"], 0) > 0)
    assert target(teams, parent, route["checkpoint_id"]).inside == ""  # a top checkpoint

    seen = _fork_and_check(teams, parent, route["checkpoint_id"], ROUTE, "lead_supervisor")
    assert seen["live"][0]["node"] == "lead_supervisor"  # the routing is the first live call


def test_a_teams_run_forks_with_another_workers_prompt_from_before_its_team(teams):
    parent = _finished_run(teams)
    point = next(p for p in tryable_points(teams, parent) if p["node"] == "search_team:searcher")
    before_team = target(teams, parent, point["checkpoint_id"]).fork_from
    assert before_team

    seen = _fork_and_check(teams, parent, before_team, SEARCHER, "searcher")
    # the team runs again from its start: its supervisor first, then the searcher
    assert [c["node"] for c in seen["live"][:2]] == ["supervisor", "searcher"]
    assert not any(c["node"] == "searcher" for c in seen["replayed"])


def test_a_run_forks_with_another_guardrail_classifier_prompt_at_a_follow_up(counting):
    design = Design(guardrail=True, guardrail_classifier=True)
    parent = counting.start("How did Tesla's stock do in 2008?", design)
    assert counting.wait(parent, timeout=120).status == "done"
    counting.send_message(parent, "And how did Apple's stock do in 2008?")
    assert wait_status(counting, parent, "done", timeout=120).status == "done"
    checks = [p for p in counting.timeline(parent) if p["next"] == ["guardrail"]]
    assert len(checks) == 2  # the first question's check and the follow-up's

    seen = _fork_and_check(counting, parent, checks[-1]["checkpoint_id"], CLASSIFIER, "guardrail")
    assert seen["live"][0]["node"] == "guardrail"
    # the first turn's calls, its classifier's among them, are replayed
    assert [c["node"] for c in seen["replayed"]].count("guardrail") == 1
    assert any(c["node"] == "executor" for c in seen["replayed"])


def test_the_classifier_prompt_of_a_run_without_the_classifier_is_refused_in_words(counting):
    store = counting.store
    parent = counting.start("How did Tesla's stock do in 2008?", Design(guardrail=True))
    assert counting.wait(parent, timeout=120).status == "done"
    point = next(p for p in counting.timeline(parent) if p["next"] == ["guardrail"])
    runs = len(store.runs())
    with pytest.raises(ValueError, match="does not ask the guardrail's classifier model"):
        counting.fork_with_prompt(
            parent, point["checkpoint_id"], CLASSIFIER, text=default_text(CLASSIFIER)
        )
    assert len(store.runs()) == runs and store.prompt_versions(CLASSIFIER) == []


def test_a_disabled_workers_prompt_is_not_offered_for_a_fork():
    design = NEVER_ASK.model_copy(
        update={"enabled_agents": [a for a in NEVER_ASK.enabled_agents if a != "url_builder"]}
    )
    offered = set(TEAMS.prompts.fork_prompts(design).values())
    assert SEARCHER in offered and ROUTE in offered and "hierarchical_teams/replan" in offered
    assert "hierarchical_teams/url_builder" not in offered
    assert CLASSIFIER not in offered  # the design asks no classifier


def test_a_teams_run_forks_with_another_lead_replan_prompt_after_an_edit(
    store, teams_settings, api
):
    from graph.service.run_service import RunService

    service = RunService(store, teams_settings, timeout_tick_s=0)
    try:
        design = Design(system="hierarchical_teams", approvals={"health_checker": "never"})
        parent = service.start(THREE_INTENTS, design)
        wait_status(service, parent, "waiting")  # sending the URLs waits for a human
        service.edit_request(
            parent, "Check that the API is healthy and find news sites about interest rates"
        )
        assert wait_status(service, parent, "done").status == "done"
        replan = next(p for p in tryable_points(service, parent) if p["prompt"] == REPLAN)

        seen = _fork_and_check(service, parent, replan["checkpoint_id"], REPLAN, "lead_supervisor")
        assert seen["live"][0]["node"] == "lead_supervisor"
    finally:
        service.shutdown()
