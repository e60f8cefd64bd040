"""Movement inside teams (issue 28 point 2): the worker a team is on is marked in the
team's box like a top-level node, the team's edges taken so far are drawn as taken, and
the pace holds each node inside a team as it holds a top-level node.

Real parts: the hierarchical_teams graph on the offline scripted model, SQLite
checkpoints, the run service's worker threads, its store, and a demo HTTP API.
"""

from __future__ import annotations

import re

import pytest

from graph.hierarchical_teams import SYSTEM as TEAMS
from graph.kernel.checkpoints import running_node
from graph.kernel.design import Design
from graph.kernel.render import to_dot
from graph.service.run_storage import checkpointer_for
from graph.service.runs import run_question
from graph.tools.demo_api import start_demo_api
from tests.unit.conftest import wait_status
from ui.run_view import load_run_view

QUESTION = "Check that the API is healthy and find reliable news sites about semiconductor tariffs"
RUNNING = "#ffd54f"  # the fill of the node marked running (render.to_dot)
TAKEN = "#e65100"
JUST_TAKEN = "#bf360c"


@pytest.fixture
def teams_settings(settings):
    server = start_demo_api()
    yield settings.model_copy(update={"teams_api_base": server.base_url})
    server.server.shutdown()


def _cluster(dot: str, team: str) -> str:
    """The DOT text of ``team``'s box, up to its closing brace."""
    found = re.search(r"subgraph cluster_" + team + r" \{(.*?)\n\t\}", dot, re.S)
    assert found, f"no box for {team} in:\n{dot}"
    return found.group(1)


def _edge(dot: str, source: str, target: str) -> str:
    found = re.search(rf"\t{source} -> {target}( \[[^\]]*\])?\n", dot)
    assert found, f"no edge {source} -> {target} in:\n{dot}"
    return found.group(1) or ""


def test_a_worker_a_team_is_on_is_marked_running_in_its_box_with_the_teams_edges_taken(
    service, store, teams_settings
):
    # call_api asks a human before health_checker's real HTTP call: the run stops on a
    # node inside request_team, which is where the test looks.
    service.settings = teams_settings
    run_id = service.start(QUESTION, Design(system=TEAMS.name))
    wait_status(service, run_id, "waiting")
    graph = TEAMS.build_graph(
        Design(system=TEAMS.name),
        settings=teams_settings,
        checkpointer=checkpointer_for(teams_settings),
    )
    snapshot = graph.get_state({"configurable": {"thread_id": run_id}}, subgraphs=True)
    assert running_node(snapshot) == "request_team:call_api"
    view = load_run_view(store, run_id)
    assert view is not None

    dot = to_dot(
        graph, TEAMS, active=running_node(snapshot), taken=view.taken, active_note="running"
    )

    box = _cluster(dot, "request_team")
    marked = re.search(r"\t\trequest_team__call_api \[([^\]]*)\]", box)
    assert marked, box
    assert f'fillcolor="{RUNNING}"' in marked.group(1) and "peripheries=2" in marked.group(1)
    assert "▶ running" in marked.group(1)
    assert "penwidth=3" in box.splitlines()[1]  # the team's box is marked too
    assert sum(RUNNING in line for line in dot.splitlines()) == 1  # nothing else runs
    # The way in: lead -> the team's start -> its supervisor -> health_checker, all
    # taken, the last one just now (thickest); call_api has not run yet.
    assert TAKEN in _edge(dot, "lead_supervisor", "request_team____start__")
    assert TAKEN in _edge(dot, "request_team____start__", "request_team__supervisor")
    last = _edge(dot, "request_team__supervisor", "request_team__health_checker")
    assert JUST_TAKEN in last and "penwidth=6" in last
    assert "bold" not in _edge(dot, "request_team__health_checker", "request_team__call_api")
    # The other team has not been entered.
    assert "bold" not in _edge(dot, "lead_supervisor", "search_team____start__")
    assert "bold" not in _edge(dot, "search_team____start__", "search_team__supervisor")


def _holds(events: list, namespace: str) -> list:
    return [
        e for e in events if e.kind == "custom" and "paced" in e.data and (e.namespace == namespace)
    ]


def test_a_paced_teams_run_holds_after_each_node_inside_a_team(teams_settings):
    design = Design(
        system=TEAMS.name,
        pace_s=0.01,
        approvals={"health_checker": "never", "site_requester": "never"},
    )
    graph = TEAMS.build_graph(design, settings=teams_settings)
    events: list = []
    outcome = run_question(
        QUESTION, design, settings=teams_settings, graph=graph, on_event=events.append
    )
    assert outcome.status == "done", outcome.reason

    updates = [e for e in events if e.kind == "update"]
    inner = sorted({e.namespace for e in updates if e.namespace})
    assert {ns.split(":", 1)[0] for ns in inner} == {"request_team", "search_team"}
    for ns in inner:
        # In the log: each node's update, then one hold, then the next node's update; the
        # last node's hold is the team's own (top-level) one.
        mine = [
            e for e in events if e.namespace == ns and (e.kind == "update" or "paced" in e.data)
        ]
        kinds = ["update" if e.kind == "update" else "hold" for e in mine]
        assert kinds == ["update", *["hold", "update"] * (kinds.count("update") - 1)], kinds
        assert kinds.count("update") >= 3
    top = [e for e in updates if not e.namespace]
    assert len(_holds(events, "")) == len(top)
    inner_updates = len(updates) - len(top)
    assert sum(len(_holds(events, ns)) for ns in inner) == inner_updates - len(inner)
