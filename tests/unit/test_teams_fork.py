"""A teams run on History: the checkpoints saved inside its teams are listed in its
timeline, and it can be forked with an edited subtask plan that keeps done work.

Real parts: the run service with the SQLite checkpointer, the offline scripted model
(recording which team each worker call came from), the demo API over real HTTP.
"""

from __future__ import annotations

import pytest

from graph.hierarchical_teams import SYSTEM as TEAMS
from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.tools.demo_api import start_demo_api
from tests.unit.conftest import wait_status
from ui.views import view_of

THREE_INTENTS = (
    "Check that the API is healthy, find reliable news sites about semiconductor tariffs "
    "and send their URLs to the API"
)
NEVER_ASK = Design(
    system="hierarchical_teams", approvals={"health_checker": "never", "site_requester": "never"}
)


class Counting(ScriptedChatModel):
    """The scripted model, noting the team (graph namespace) and prompt of every call."""

    calls: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        ns = (
            ((run_manager.metadata or {}).get("langgraph_checkpoint_ns") or "")
            if run_manager
            else ""
        )
        self.calls.append((ns.split(":")[0], "\n".join(str(m.content) for m in messages)))
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.fixture
def api():
    server = start_demo_api()
    yield server
    server.server.shutdown()


@pytest.fixture
def teams(store, settings, api):
    """A run service on the demo API whose worker model counts its calls."""
    service = RunService(
        store, settings.model_copy(update={"teams_api_base": api.base_url}), timeout_tick_s=0
    )
    worker = Counting()
    worker.calls = []
    service.model_factory = lambda role: worker if role == "worker" else ScriptedChatModel()
    service.worker = worker
    yield service
    service.shutdown()


def _finished_run(service) -> str:
    run_id = service.start(THREE_INTENTS, NEVER_ASK)
    record = wait_status(service, run_id, "done")
    assert record.status == "done", record.reason
    return run_id


def _worker_calls(service, team: str, worker: str) -> int:
    return sum(1 for ns, text in service.worker.calls if ns == team and f"You are {worker}" in text)


def test_the_timeline_of_a_teams_run_lists_the_checkpoints_inside_each_team(teams):
    run_id = _finished_run(teams)
    root = teams.timeline(run_id)
    merged = teams.timeline(run_id, inner=True)
    assert [p for p in merged if not p["inside"]] == [
        {**p, "inside": "", "position": str(p["index"]), "fork_from": p["checkpoint_id"]}
        for p in root
    ]  # the top graph's checkpoints, unchanged and in order
    inner = [p for p in merged if p["inside"]]
    assert {p["inside"] for p in inner} == {"request_team", "search_team"}
    nodes = {
        team: [p["node"] for p in inner if p["inside"] == team]
        for team in ("request_team", "search_team")
    }
    assert {"supervisor", "health_checker", "call_api", "site_requester"} <= set(
        nodes["request_team"]
    )
    assert {"supervisor", "searcher", "url_builder"} <= set(nodes["search_team"])
    # each inner checkpoint comes right after the top-graph checkpoint that started its
    # team (the one a fork of that moment starts at), numbered under it, in order
    by_id = {p["checkpoint_id"]: p for p in root}
    for row in inner:
        started = by_id[row["fork_from"]]
        assert started["next"] == [row["inside"]]
        assert row["position"].startswith(f"{started['index']}.")
        if row["node"] not in ("input", "__start__"):
            assert row["fields"]["current_subtask_id"] == started["fields"]["current_subtask_id"]
    positions = [tuple(int(n) for n in p["position"].split(".")) for p in merged]
    assert positions == sorted(positions)
    searching = [p for p in inner if p["inside"] == "search_team" and p["node"] == "searcher"]
    assert searching and "reports" in searching[0]["diff"]


def test_a_fork_that_cancels_a_pending_subtask_and_adds_one_runs_that_plan_and_keeps_done_work(
    teams, api
):
    run_id = _finished_run(teams)
    assert (api.count("GET", "/health"), api.count("POST", "/sites")) == (1, 1)
    # after search_team handed back s2: s1 and s2 done, s3 (send the sites) still to do
    point = next(p for p in teams.timeline(run_id) if p["node"] == "search_team")
    rows = view_of("hierarchical_teams").fork_table("subtasks", point["fields"], NEVER_ASK).rows
    assert [(r["id"], r["status"]) for r in rows] == [
        ("s1", "done"),
        ("s2", "done"),
        ("s3", "pending"),
    ]
    rows[2]["status"] = "cancelled"
    rows.append(
        {
            "id": "",
            "team": "request_team",
            "instruction": "Check that the API is healthy again",
            "status": "pending",
            "depends_on": "s1",
        }
    )
    teams.worker.calls.clear()
    fork = teams.fork(run_id, point["checkpoint_id"], {"subtasks": rows})
    record = wait_status(teams, fork, "done")
    assert record.parent_run == run_id
    forked = {r["id"]: r for r in teams.store.snapshot(fork)["rows"]}
    parent = {r["id"]: r for r in teams.store.snapshot(run_id)["rows"]}
    assert [(i, r["status"]) for i, r in forked.items()] == [
        ("s1", "done"),
        ("s2", "done"),
        ("s3", "cancelled"),
        ("s4", "done"),
    ]
    assert forked["s3"]["reason"] == "Cancelled in the fork's edit of the subtask plan."
    assert forked["s4"]["instruction"] == "Check that the API is healthy again"
    assert forked["s1"]["result"] == parent["s1"]["result"]  # kept, not redone
    assert forked["s2"]["result"] == parent["s2"]["result"]
    # the worker calls of the fork: s4's health check only; no search, no sending
    assert _worker_calls(teams, "request_team", "health_checker") == 1
    assert _worker_calls(teams, "request_team", "site_requester") == 0
    assert not [ns for ns, _ in teams.worker.calls if ns == "search_team"]
    assert (api.count("GET", "/health"), api.count("POST", "/sites")) == (2, 1)
    plans = teams.state(fork)["plans"]
    assert plans[-1]["kind"] == "fork" and plans[-1]["added"] == ["s4"]
    assert [c["id"] for c in plans[-1]["cancelled"]] == ["s3"]


def test_a_fork_with_an_edited_instruction_runs_it_and_does_not_redo_the_done_subtask(teams):
    run_id = _finished_run(teams)
    # the lead has just handed s2 (the search) to search_team; s1 is done
    point = next(p for p in teams.timeline(run_id) if p["next"] == ["search_team"])
    rows = view_of("hierarchical_teams").fork_table("subtasks", point["fields"], NEVER_ASK).rows
    assert [(r["id"], r["status"]) for r in rows] == [
        ("s1", "done"),
        ("s2", "delegated"),
        ("s3", "pending"),
    ]
    rows[1]["instruction"] = "Find reliable news sites about copper prices"
    teams.worker.calls.clear()
    fork = teams.fork(run_id, point["checkpoint_id"], {"subtasks": rows})
    assert wait_status(teams, fork, "done")
    forked = {r["id"]: r for r in teams.store.snapshot(fork)["rows"]}
    assert [r["status"] for r in forked.values()] == ["done", "done", "done"]
    assert forked["s2"]["instruction"] == "Find reliable news sites about copper prices"
    assert (
        "copper+prices" in forked["s2"]["result"] and "semiconductor" not in forked["s2"]["result"]
    )
    assert _worker_calls(teams, "request_team", "health_checker") == 0  # s1 not redone
    assert _worker_calls(teams, "search_team", "searcher") >= 1
    assert teams.state(fork)["plans"][-1]["changed"] == ["s2"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda rows: rows[2].update(team="legal_team"),
            "s3 goes to team 'legal_team', which is not on in this run's design; use one of: "
            "request_team, search_team.",
        ),
        (
            lambda rows: rows.append(
                {
                    "id": "",
                    "team": "search_team",
                    "instruction": "More sites",
                    "status": "pending",
                    "depends_on": "s5",
                }
            ),
            "s4 depends on 's5', which is no subtask of the plan",
        ),
        (
            lambda rows: rows.extend(
                [
                    {
                        "id": "",
                        "team": "search_team",
                        "instruction": "A",
                        "status": "pending",
                        "depends_on": "s5",
                    },
                    {
                        "id": "",
                        "team": "search_team",
                        "instruction": "B",
                        "status": "pending",
                        "depends_on": "s4",
                    },
                ]
            ),
            "The dependencies form a cycle, so none of them could ever run: s4 → s5 → s4",
        ),
        (
            lambda rows: rows[0].update(instruction="Check it twice"),
            "s1 is done: a fork keeps its result",
        ),
        (
            lambda rows: rows.pop(0),
            "s1 is done and a fork keeps finished work: it cannot be removed",
        ),
        (
            lambda rows: rows[1].update(status="cancelled"),
            "s3 depends on s2, which is cancelled: it could never run.",
        ),
        (lambda rows: rows[2].update(status="done"), "s3 is not done: a fork cannot mark it done"),
        (lambda rows: rows.clear(), "The subtask plan is empty"),
        (
            lambda rows: rows.append(
                {"id": "s0", "team": "search_team", "instruction": "x", "depends_on": ""}
            ),
            "'s0' is no subtask of this plan: leave a new subtask's id empty",
        ),
    ],
)
def test_a_bad_subtask_plan_is_refused_with_a_clear_message_and_nothing_starts(
    teams, edit, message
):
    run_id = _finished_run(teams)
    point = next(p for p in teams.timeline(run_id) if p["next"] == ["search_team"])
    rows = view_of("hierarchical_teams").fork_table("subtasks", point["fields"], NEVER_ASK).rows
    edit(rows)
    before = teams.timeline(run_id, inner=True)
    with pytest.raises(ValueError) as refused:
        teams.fork(run_id, point["checkpoint_id"], {"subtasks": rows})
    assert message in str(refused.value)
    assert "Traceback" not in str(refused.value) and "KeyError" not in str(refused.value)
    assert [r.id for r in teams.store.runs()] == [run_id]  # nothing started
    assert teams.timeline(run_id, inner=True) == before  # nothing lost


def test_a_plan_typed_as_json_is_checked_for_its_shape(teams):
    design = NEVER_ASK
    with pytest.raises(ValueError, match="The subtask plan must be a list of subtasks"):
        TEAMS.forks.check_fork_change("subtasks", '{"s1": "x"}', design)
    with pytest.raises(ValueError, match="not valid JSON"):
        TEAMS.forks.check_fork_change("subtasks", '[{"id": ', design)
    rows = TEAMS.forks.check_fork_change(
        "subtasks", '[{"team": "search_team", "instruction": "x", "depends_on": ["s1"]}]', design
    )
    assert rows[0]["status"] == "pending" and rows[0]["depends_on"] == ["s1"]


def test_a_checkpoint_inside_a_team_cannot_be_forked_and_the_refusal_says_where_to_fork(teams):
    run_id = _finished_run(teams)
    inner = next(p for p in teams.timeline(run_id, inner=True) if p["inside"])
    with pytest.raises(ValueError, match="a checkpoint inside a team cannot be forked"):
        teams.fork(run_id, inner["checkpoint_id"], {"subtasks": []})
