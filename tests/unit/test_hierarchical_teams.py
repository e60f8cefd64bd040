"""hierarchical_teams (docs/systems/hierarchical_teams.md): decomposition, dispatch, teams that see only
their own subtask, approval before real HTTP calls, and edits of the request mid-run.

Real parts throughout: the scripted model, LangGraph with SQLite checkpoints, the run
service's worker threads, and a real HTTP server (a demo API of each test's own, so the
requests it counts are exactly the test's).
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs, urlparse

import pytest
from langgraph.types import Command

from graph.hierarchical_teams import SYSTEM as TEAMS
from graph.hierarchical_teams.agents import AGENTS, design_warnings, enabled_teams
from graph.hierarchical_teams.lead import blocked_reasons, lead_supervisor_node
from graph.hierarchical_teams.system import LEAD
from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.run_storage import checkpointer_for
from graph.service.runs import continue_run, run_question
from graph.tools.demo_api import start_demo_api
from graph.tools.news import domain_of, find_sites, news_search_url
from graph.tools.team_api import ApiCall, RefusedCall, check_allowed
from tests.support import RewritingModel, edit_json
from tests.unit.conftest import wait_status

build_graph, edit_request, initial_state = (
    TEAMS.build_graph,
    TEAMS.forks.edit_request,
    TEAMS.initial_state,
)
snapshot, step_rows = TEAMS.snapshot, TEAMS.step_rows

NAME = TEAMS.name
TWO_INTENTS = (
    "Check that the API is healthy and find reliable news sites about semiconductor tariffs"
)
THREE_INTENTS = TWO_INTENTS + ", then send their URLs to the API"


@pytest.fixture
def api():
    server = start_demo_api()
    yield server
    server.server.shutdown()


@pytest.fixture
def teams_settings(settings, api):
    return settings.model_copy(update={"teams_api_base": api.base_url})


def _design(**approvals) -> Design:
    return Design(system=NAME, approvals=approvals)


def _run(question: str, design: Design, settings, **models):
    graph = build_graph(
        design, settings=settings, checkpointer=checkpointer_for(settings), **models
    )
    events = []
    outcome = run_question(question, design, settings=settings, graph=graph, on_event=events.append)
    return graph, outcome, events


def _approve_all(graph, outcome, design, settings, decision="approve", **extra):
    while outcome.status == "waiting":
        pending = outcome.interrupts[0]
        outcome = continue_run(
            graph,
            Command(resume={pending["id"]: {"decision": decision, **extra}}),
            outcome.thread_id,
            design,
            settings=settings,
        )
    return outcome


class Recording(ScriptedChatModel):
    """The scripted model, recording every prompt with the graph namespace it came from."""

    seen: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        ns = (
            ((run_manager.metadata or {}).get("langgraph_checkpoint_ns") or "")
            if run_manager
            else ""
        )
        text = "\n".join(str(m.content) for m in messages)
        self.seen.append((ns.split(":")[0], text, kwargs.get("tools")))
        return super()._generate(messages, stop, run_manager, **kwargs)


# --------------------------------------------------------------------------- decomposition


def test_a_two_intent_request_becomes_one_subtask_per_team_with_short_unique_ids(
    teams_settings, api
):
    design = _design(health_checker="never")
    _, outcome, events = _run(TWO_INTENTS, design, teams_settings)
    assert outcome.status == "done", outcome.reason
    rows = outcome.rows
    assert [(r.id, r.team, r.status) for r in rows] == [
        ("s1", "request_team", "done"),
        ("s2", "search_team", "done"),
    ]
    health, search = rows
    assert "health" in health.instruction and "semiconductor" not in health.instruction
    assert "semiconductor tariffs" in search.instruction and "health" not in search.instruction
    assert '"status": "ok"' in health.result
    assert (
        "https://news.google.com/search?q=site:reuters.com+semiconductor+tariffs" in search.result
    )
    # the plan object: in state, and in the run's event log as a custom event
    plans = outcome.state["plans"]
    assert len(plans) == 1 and plans[0]["kind"] == "initial"
    assert [s["id"] for s in plans[0]["subtasks"]] == ["s1", "s2"]
    assert all(s["request_id"] == outcome.state["request_id"] for s in plans[0]["subtasks"])
    logged = [e.data["plan"] for e in events if e.kind == "custom" and "plan" in e.data]
    assert logged and logged[0]["subtasks"] == plans[0]["subtasks"]
    assert "s1 · request_team · done" in outcome.state["final_answer"]
    assert api.count("GET", "/health") == 1


def test_dependencies_are_a_real_field_mapped_to_the_assigned_ids(teams_settings, api):
    design = _design(health_checker="never", site_requester="never")
    _, outcome, _ = _run(THREE_INTENTS, design, teams_settings)
    assert outcome.status == "done", outcome.reason
    assert [(r.id, r.team, r.depends_on) for r in outcome.rows] == [
        ("s1", "request_team", []),
        ("s2", "search_team", []),
        ("s3", "request_team", ["s2"]),
    ]
    # one team owns two subtasks; the sender got the search results it depends on
    assert api.sites and all(
        u.startswith("https://news.google.com/search?q=site:") for u in api.sites
    )
    assert api.count("POST", "/sites") == 1


def test_a_plan_for_a_team_that_is_off_is_repaired_once_then_the_run_fails_saying_why(
    teams_settings,
):
    def rewrite(prompt, reply, n):
        if '"depends_on"' in prompt and '"subtasks"' in prompt:
            return json.dumps(
                {
                    "subtasks": [
                        {
                            "id": "a",
                            "team": "legal_team",
                            "instruction": "Review it",
                            "depends_on": [],
                        }
                    ]
                }
            )
        return None

    lead = RewritingModel(rewrite=rewrite)
    _, outcome, _ = _run(TWO_INTENTS, _design(), teams_settings, planner_model=lead)
    assert outcome.status == "failed"
    assert "legal_team" in outcome.reason and "not on" in outcome.reason
    assert len([c for c in lead.calls if '"subtasks"' in c]) == 2  # the ask and one repair


def _plan_reply(subtasks: list[dict]):
    """A lead model whose every plan is ``subtasks``; the scripted model for the rest."""
    plan = json.dumps({"subtasks": subtasks})
    return RewritingModel(rewrite=lambda p, r, n: plan if '"subtasks"' in p else None)


def test_a_subtask_that_depends_on_itself_is_repaired_and_the_run_goes_on(teams_settings, api):
    """Seen on a small model: it failed the run twice over ("subtask '2' depends on
    itself"); the self-dependency has one reading, so it is dropped and the run says so."""
    lead = _plan_reply(
        [
            {
                "id": "1",
                "team": "request_team",
                "instruction": "Check that the API is healthy",
                "depends_on": [],
            },
            {
                "id": "2",
                "team": "search_team",
                "instruction": "Find reliable news sites about semiconductor tariffs",
                "depends_on": ["2"],
            },
        ]
    )
    design = _design(health_checker="never")
    _, outcome, _ = _run(TWO_INTENTS, design, teams_settings, planner_model=lead)
    assert outcome.status == "done", outcome.reason
    assert [(r.id, r.team, r.status, r.depends_on) for r in outcome.rows] == [
        ("s1", "request_team", "done", []),
        ("s2", "search_team", "done", []),
    ]
    assert (
        "The lead supervisor's plan had subtask 2 depend on itself: that dependency was "
        "dropped." in outcome.state["notices"]
    )
    assert len([c for c in lead.calls if '"subtasks"' in c]) == 1  # no repair round spent


def test_a_plan_whose_dependencies_form_a_cycle_is_repaired_at_the_later_subtask(
    teams_settings, api
):
    lead = _plan_reply(
        [
            {
                "id": "a",
                "team": "search_team",
                "instruction": "Find reliable news sites about semiconductor tariffs",
                "depends_on": ["b"],
            },
            {
                "id": "b",
                "team": "request_team",
                "instruction": "Send their URLs to the API",
                "depends_on": ["a"],
            },
        ]
    )
    design = _design(health_checker="never", site_requester="never")
    _, outcome, _ = _run(THREE_INTENTS, design, teams_settings, planner_model=lead)
    assert outcome.status == "done", outcome.reason
    assert [(r.id, r.status, r.depends_on) for r in outcome.rows] == [
        ("s1", "done", []),
        ("s2", "done", ["s1"]),
    ]
    assert any("to break the cycle" in n for n in outcome.state["notices"])
    assert api.count("POST", "/sites") == 1  # sent after the sites were found


def test_a_team_supervisor_naming_a_worker_in_another_case_reaches_that_worker(teams_settings, api):
    def upper(prompt, reply, n):
        if not prompt.startswith("You supervise "):
            return None
        name = json.loads(reply)["next_worker"]
        return edit_json(reply, next_worker=name.upper() if name != "FINISH" else name)

    workers = RewritingModel(rewrite=upper)
    _, outcome, _ = _run(
        TWO_INTENTS, _design(health_checker="never"), teams_settings, worker_model=workers
    )
    assert outcome.status == "done", outcome.reason
    assert [r.status for r in outcome.rows] == ["done", "done"]
    assert any(
        n.startswith("search_team's supervisor named next_worker 'SEARCHER'")
        for n in outcome.state["notices"]
    )


# --------------------------------------------------------------------------- dispatch


def test_a_subtask_whose_dependency_failed_blocks_the_run_with_the_reason(teams_settings, api):
    """search_team's supervisor gives up at once (no worker reports): s1 fails, so s2,
    which needs its sites, can never run; nothing is sent to the API."""

    def rewrite(prompt, reply, n):
        if prompt.startswith("You supervise search_team"):
            return json.dumps({"next_worker": "FINISH", "task": "", "reason": "giving up"})
        return None

    design = _design(site_requester="never")
    _, outcome, _ = _run(
        "Find reliable news sites about copper prices, then send their URLs to the API",
        design,
        teams_settings,
        worker_model=RewritingModel(rewrite=rewrite),
    )
    assert outcome.status == "failed"
    assert outcome.reason.startswith(
        "Stopped: blocked: s2 (request_team) waits on s1, which failed"
    )
    rows = {r.id: r for r in outcome.rows}
    assert rows["s1"].status == "failed"
    assert rows["s2"].status == "pending" and rows["s2"].reason.startswith("Blocked: s2")
    assert api.count() == 0


def test_blocked_reasons_follow_chains_of_pending_subtasks():
    subtasks = [
        {
            "id": "s1",
            "team": "search_team",
            "status": "cancelled",
            "depends_on": [],
            "reason": "stale",
        },
        {"id": "s2", "team": "search_team", "status": "pending", "depends_on": ["s1"]},
        {"id": "s3", "team": "request_team", "status": "pending", "depends_on": ["s2"]},
    ]
    reasons = blocked_reasons(subtasks)
    assert reasons["s2"] == "s2 (search_team) waits on s1, which cancelled (stale)"
    assert reasons["s3"] == "s3 (request_team) waits on s1, which cancelled (stale)"


def test_several_dispatchable_subtasks_go_to_a_routing_call_and_finish_cancels_the_rest(
    teams_settings, api
):
    def rewrite(prompt, reply, n):
        if '"next_subtask_id"' in prompt:
            return json.dumps({"next_subtask_id": "FINISH", "reason": "enough for today"})
        return None

    lead = RewritingModel(rewrite=rewrite)
    worker = Recording()
    worker.seen = []
    _, outcome, _ = _run(
        TWO_INTENTS, _design(), teams_settings, planner_model=lead, worker_model=worker
    )
    # Nothing ran, so there is no answer: the run says so, with the lead's reason.
    assert outcome.status == "failed", outcome.reason
    assert outcome.reason.startswith("No subtask produced a result, so there is no answer")
    assert "FINISH" in outcome.reason and "enough for today" in outcome.reason
    assert [r.status for r in outcome.rows] == ["cancelled", "cancelled"]
    assert all("Not dispatched" in r.reason for r in outcome.rows)
    assert any('"next_subtask_id"' in c for c in lead.calls)  # two could run: a routing call
    assert worker.seen == [] and api.count() == 0  # no team ran
    assert outcome.state["routing"][-1]["subtask_id"] == "FINISH"


def test_a_routing_call_naming_a_subtask_in_another_case_dispatches_that_subtask(
    teams_settings, api
):
    def upper(prompt, reply, n):
        if '"next_subtask_id"' not in prompt:
            return None
        return edit_json(reply, next_subtask_id=json.loads(reply)["next_subtask_id"].upper())

    lead = RewritingModel(rewrite=upper)
    lead.calls.clear()
    _, outcome, _ = _run(
        TWO_INTENTS, _design(health_checker="never"), teams_settings, planner_model=lead
    )
    assert outcome.status == "done", outcome.reason
    assert [r.status for r in outcome.rows] == ["done", "done"]
    routed = [r for r in outcome.state["routing"] if r["by"] == "lead"]
    assert len(routed) == 1 and routed[0]["subtask_id"] in ("s1", "s2")
    assert (
        f"The lead supervisor's routing named subtask {routed[0]['subtask_id'].upper()!r}: "
        f"read as {routed[0]['subtask_id']}." in outcome.state["notices"]
    )
    assert len([c for c in lead.calls if '"next_subtask_id"' in c]) == 1


def test_a_single_dispatchable_subtask_is_taken_without_a_routing_call(teams_settings):
    lead = RewritingModel(rewrite=lambda p, r, n: None)
    _, outcome, _ = _run(
        "Find reliable news sites about copper prices",
        _design(),
        teams_settings,
        planner_model=lead,
    )
    assert outcome.status == "done"
    assert not any('"next_subtask_id"' in c for c in lead.calls)
    assert outcome.state["routing"][0]["by"] == "direct"


def test_the_lead_supervisor_ends_when_nothing_is_pending(teams_settings):
    state = {
        "subtasks_planned": True,
        "request": "x",
        "current_step": 2,
        "subtasks": [
            {
                "id": "s1",
                "team": "search_team",
                "status": "delegated",
                "instruction": "Find",
                "depends_on": [],
            }
        ],
        "team_results": {"s1": {"status": "done", "result": "ok", "ended_at": 1.0}},
    }
    import graph.hierarchical_teams  # noqa: F401 (registers prompts)
    from graph.hierarchical_teams.deps import Deps
    from graph.kernel.ledger import SideEffectLedger
    from graph.prompts import PromptSet

    deps = Deps(
        settings=teams_settings,
        lead_model=ScriptedChatModel(),
        worker_model=ScriptedChatModel(),
        prompts=PromptSet(),
        ledger=SideEffectLedger(teams_settings.home / "l.sqlite"),
        enabled=list(AGENTS),
        teams=enabled_teams(None),
        nodes=frozenset({LEAD, "search_team", "request_team"}),
        max_dispatches=8,
    )
    command = lead_supervisor_node(state, deps)
    assert command.goto == "__end__"
    assert command.update["outcome"] == "done"
    assert command.update["subtasks"][0]["status"] == "done"


# --------------------------------------------------------------------------- isolation


def test_each_team_model_only_ever_sees_its_own_subtask_vocabulary(teams_settings):
    """Every prompt (and tool call) the team models receive in a two-intent run: the
    request_team's never carry the search topic, the search_team's never the API-check
    words, and no team ever gets the raw request."""
    lead, worker = Recording(), Recording()
    lead.seen, worker.seen = [], []
    _, outcome, _ = _run(
        TWO_INTENTS,
        _design(health_checker="never"),
        teams_settings,
        planner_model=lead,
        worker_model=worker,
    )
    assert outcome.status == "done", outcome.reason
    by_team: dict[str, list[str]] = {}
    for team, text, _tools in worker.seen:
        by_team.setdefault(team, []).append(text.lower())
    assert set(by_team) == {"request_team", "search_team"}
    assert len(by_team["request_team"]) >= 3 and len(by_team["search_team"]) >= 5
    for text in by_team["request_team"]:
        assert "semiconductor" not in text and "tariff" not in text
        assert "news" not in text
    for text in by_team["search_team"]:
        assert "healthy" not in text and "health" not in text and "api" not in text
    for text in by_team["request_team"] + by_team["search_team"]:
        assert TWO_INTENTS.lower() not in text
    # the lead alone read the whole request
    assert all(team == "lead_supervisor" for team, _, _ in lead.seen)
    assert any(TWO_INTENTS in text for _, text, _ in lead.seen)


# --------------------------------------------------------------------------- approvals


def test_no_request_reaches_the_api_before_a_human_approves_it(teams_settings, api):
    design = _design()  # health_checker has side effects: it asks by default
    assert design.approval_policy("health_checker") == "always"
    graph, outcome, _ = _run("Check that the API is healthy", design, teams_settings)
    assert outcome.status == "waiting"
    (pending,) = outcome.interrupts
    assert pending["kind"] == "approval" and pending["agent"] == "health_checker"
    assert pending["call"] == {"method": "GET", "url": f"{api.base_url}/health", "body": None}
    assert pending["query"] == f"GET {api.base_url}/health"
    assert api.count() == 0  # asked, not sent
    outcome = _approve_all(graph, outcome, design, teams_settings)
    assert outcome.status == "done"
    assert api.count("GET", "/health") == 1
    assert outcome.state["approvals"][0]["decision"] == "approve"


def test_a_rejected_call_is_never_sent_and_fails_its_subtask_with_the_reason(teams_settings, api):
    design = _design()
    graph, outcome, _ = _run("Check that the API is healthy", design, teams_settings)
    outcome = _approve_all(
        graph, outcome, design, teams_settings, decision="reject", reason="not during the audit"
    )
    assert api.count() == 0
    (row,) = outcome.rows
    assert row.status == "failed" and "not during the audit" in row.reason
    assert "nothing was sent" in row.reason


def test_an_edited_call_outside_the_allowlist_is_refused_and_not_sent(teams_settings, api):
    design = _design()
    graph, outcome, _ = _run("Check that the API is healthy", design, teams_settings)
    outcome = _approve_all(
        graph,
        outcome,
        design,
        teams_settings,
        decision="edit",
        query="GET http://127.0.0.1:9/health",
    )
    (row,) = outcome.rows
    assert row.status == "failed" and "outside the allowlisted API base" in row.reason
    assert api.count() == 0


def test_the_allowlist_admits_only_the_base_urls_origin_and_path():
    base = "http://127.0.0.1:8765/api"
    check_allowed(ApiCall("GET", "http://127.0.0.1:8765/api/health"), base)
    check_allowed(ApiCall("POST", "http://127.0.0.1:8765/api/sites", {"sites": []}), base)
    for url in (
        "http://127.0.0.1:8766/api/health",
        "https://127.0.0.1:8765/api/health",
        "http://localhost:8765/api/health",
        "http://127.0.0.1:8765/other",
        "http://127.0.0.1:8765/apiary",
        "http://127.0.0.1:8765/api/../admin",
        "http://evil.example/api/health",
    ):
        with pytest.raises(RefusedCall, match="outside the allowlisted API base"):
            check_allowed(ApiCall("GET", url), base)
    with pytest.raises(RefusedCall, match="method 'DELETE'"):
        check_allowed(ApiCall("DELETE", "http://127.0.0.1:8765/api/sites"), base)


def test_a_replay_from_before_the_call_does_not_send_it_twice(teams_settings, store, api):
    service = RunService(store, teams_settings, timeout_tick_s=0)
    try:
        run_id = service.start("Check that the API is healthy", _design(health_checker="never"))
        wait_status(service, run_id, "done")
        assert api.count("GET", "/health") == 1
        timeline = service.timeline(run_id)
        before_team = next(r for r in timeline if r["next"] == ["request_team"])
        fork_id = service.fork(run_id, before_team["checkpoint_id"])
        forked = wait_status(service, fork_id, "done")
        assert api.count("GET", "/health") == 1  # the team ran again, the call did not
        rows = store.snapshot(fork_id)["rows"]
        assert rows[0]["status"] == "done"
        assert "already sent for this subtask: not repeated" in rows[0]["result"]
        assert forked.parent_run == run_id
    finally:
        service.shutdown()


# --------------------------------------------------------------------------- edits


def test_edit_request_gives_a_new_request_id_and_revision_and_asks_for_a_replan():
    design = _design()
    state = initial_state("Check that the API is healthy", design)
    update = edit_request(state, "Find reliable news sites about copper")
    assert update["request"] == "Find reliable news sites about copper"
    assert update["request_id"] != state["request_id"]
    assert update["request_revision"] == 1 and update["subtasks_planned"] is False
    assert update["edits"][0]["previous"] == "Check that the API is healthy"
    assert update["messages"][0].id == update["request_id"]
    with pytest.raises(ValueError, match="empty"):
        edit_request(state, "  ")
    with pytest.raises(ValueError, match="unchanged"):
        edit_request(state, "Check that the API is healthy")


def test_editing_a_waiting_run_cancels_the_stale_subtask_keeps_the_done_ones_and_adds_the_new(
    teams_settings, store, api
):
    """The run waits for approval of s3 (sending the URLs); the edit drops the sending and
    asks about another topic: s3 is cancelled with the reason, s1 and s2 stay done (not
    run again: the API saw one health check), s4 is added and runs."""
    service = RunService(store, teams_settings, timeout_tick_s=0)
    try:
        run_id = service.start(THREE_INTENTS, _design(health_checker="never"))
        wait_status(service, run_id, "waiting")
        assert [r["status"] for r in store.snapshot(run_id)["rows"]] == [
            "done",
            "done",
            "delegated",
        ]
        service.edit_request(
            run_id,
            "Check that the API is healthy and find reliable news sites about interest rates",
        )
        wait_status(service, run_id, "done")
        snap = store.snapshot(run_id)
        rows = {r["id"]: r for r in snap["rows"]}
        assert [(i, r["status"]) for i, r in rows.items()] == [
            ("s1", "done"),
            ("s2", "done"),
            ("s3", "cancelled"),
            ("s4", "done"),
        ]
        assert rows["s3"]["reason"].startswith("Cancelled by the edit to revision 1:")
        assert "interest rates" in rows["s4"]["instruction"] and rows["s4"]["revision"] == 1
        assert api.count("GET", "/health") == 1 and api.count("POST", "/sites") == 0
        replan = snap["plans"][-1]
        assert (replan["kind"], replan["kept"], replan["added"]) == ("replan", [], ["s4"])
        assert replan["cancelled"][0]["id"] == "s3"
        assert store.pending_interrupts(run_id) == []
        exported = store.export_run(run_id)
        assert any(
            e["kind"] == "custom"
            and "plan" in (e["data"] or {})
            and e["data"]["plan"]["kind"] == "replan"
            for e in exported["events"]
        )
    finally:
        service.shutdown()


def test_editing_a_live_run_mid_subtask_cancels_it_and_never_redoes_finished_work(
    teams_settings, store, api
):
    slow = teams_settings.model_copy(update={"scripted_delay_s": 0.3})
    service = RunService(store, slow, timeout_tick_s=0)
    worker = Recording(delay_s=0.3)
    worker.seen = []
    service.model_factory = lambda role: (
        worker if role == "worker" else ScriptedChatModel(delay_s=0.3)
    )
    try:
        run_id = service.start(TWO_INTENTS, _design(health_checker="never", site_requester="never"))
        deadline = time.time() + 30
        while True:  # s1 done, s2 (the search) handed to its team: edit now
            rows = (store.snapshot(run_id) or {}).get("rows") or []
            if [r["status"] for r in rows] == ["done", "delegated"]:
                break
            assert time.time() < deadline, rows
            time.sleep(0.02)
        service.edit_request(
            run_id, "Check that the API is healthy and send https://example.org/markets to the API"
        )
        wait_status(service, run_id, "done")
        rows = {r["id"]: r for r in store.snapshot(run_id)["rows"]}
        assert [(i, r["team"], r["status"]) for i, r in rows.items()] == [
            ("s1", "request_team", "done"),
            ("s2", "search_team", "cancelled"),
            ("s3", "request_team", "done"),
        ]
        assert "no longer asks for it" in rows["s2"]["reason"]
        assert api.count("GET", "/health") == 1  # s1 was not run again
        assert api.sites == ["https://example.org/markets"]
        health_calls = [
            t
            for team, t, _ in worker.seen
            if team == "request_team" and "You are health_checker" in t
        ]
        assert len(health_calls) == 1
        events = store.events(run_id, kinds=("custom",))
        assert any(e["data"].get("kind") == "redirect" for e in events)
    finally:
        service.shutdown()


def test_editing_a_run_of_another_system_is_refused(store, settings):
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(
            "What caused the dot-com crash?",
            Design(system="supervisor_bus", approvals={"writer": "never"}),
        )
        wait_status(service, run_id, "done")
        with pytest.raises(ValueError, match="no request to edit"):
            service.edit_request(run_id, "Something else")
    finally:
        service.shutdown()


# --------------------------------------------------------------------------- tools


@pytest.mark.parametrize(
    "query",
    [
        "stock market",
        "AT&T earnings #1",
        'the "magnificent seven"',
        "Zürich café prices",
        "a+b = c?",
        "50% off & more",
        "日本 経済",
    ],
)
def test_news_search_urls_keep_the_query_string_intact(query):
    url = news_search_url("https://www.reuters.com/markets", query)
    parsed = urlparse(url)
    assert (parsed.scheme, parsed.netloc, parsed.path) == ("https", "news.google.com", "/search")
    assert parsed.fragment == ""  # a '#' in the query did not cut the URL
    assert parse_qs(parsed.query) == {"q": [f"site:reuters.com {query}"]}


def test_news_search_url_has_the_source_designs_shape():
    assert (
        news_search_url("reuters.com", "stock market")
        == "https://news.google.com/search?q=site:reuters.com+stock+market"
    )
    assert domain_of("https://www.ft.com/markets") == "ft.com"


def test_sites_are_picked_by_topic_from_the_bundled_list():
    assert [s["domain"] for s in find_sites("what moves the stock market")][:2] == [
        "reuters.com",
        "bloomberg.com",
    ]
    assert "statnews.com" in [s["domain"] for s in find_sites("medicine and health")]
    assert [s["domain"] for s in find_sites("xyzzy")] == ["reuters.com", "apnews.com", "bbc.com"]


def test_the_demo_api_answers_health_and_stores_sites(api):
    import urllib.request

    with urllib.request.urlopen(f"{api.base_url}/health", timeout=5) as reply:
        assert json.loads(reply.read())["status"] == "ok"
    body = json.dumps({"sites": ["https://a.example", "https://b.example"]}).encode()
    request = urllib.request.Request(f"{api.base_url}/sites", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=5) as reply:
        assert reply.status == 201
        assert json.loads(reply.read())["count"] == 2
    bad = urllib.request.Request(f"{api.base_url}/sites", data=b'{"sites": "x"}', method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(bad, timeout=5)
    assert err.value.code == 400
    assert api.sites == ["https://a.example", "https://b.example"]
    assert api.count("POST", "/sites") == 2 and api.count("GET", "/health") == 1


# --------------------------------------------------------------------------- design, views


def test_side_effecting_workers_ask_by_default_and_teams_follow_their_workers():
    design = _design()
    assert {a: design.approval_policy(a) for a in AGENTS} == {
        "health_checker": "always",
        "site_requester": "always",
        "searcher": "planner",
        "url_builder": "planner",
    }
    assert enabled_teams(["searcher"]) == ["search_team"]
    assert enabled_teams(["site_requester", "url_builder"]) == ["request_team", "search_team"]
    warnings = " ".join(design_warnings(["url_builder", "site_requester"]))
    assert "url_builder without searcher" in warnings
    assert any(
        "request_team has no worker" in w for w in design_warnings(["searcher", "url_builder"])
    )


def test_the_graph_has_a_subgraph_per_team_that_is_on():
    graph = build_graph(Design(system=NAME, enabled_agents=["searcher", "url_builder"]))
    assert set(graph.nodes) == {"__start__", LEAD, "search_team"}
    drawn = graph.get_graph(xray=1)
    assert {"search_team:supervisor", "search_team:searcher", "search_team:url_builder"} <= set(
        drawn.nodes
    )
    full = build_graph(_design()).get_graph(xray=1)
    assert "request_team:call_api" in full.nodes


def test_the_snapshot_is_json_safe_and_shows_the_subtask_table(teams_settings):
    _, outcome, _ = _run(TWO_INTENTS, _design(health_checker="never"), teams_settings)
    snap = json.loads(json.dumps(snapshot(outcome.state)))
    assert snap["system"] == NAME
    assert [r["id"] for r in snap["rows"]] == ["s1", "s2"]
    assert {"id", "team", "instruction", "status", "depends_on", "result", "duration_s"} <= set(
        snap["rows"][0]
    )
    assert {s["team"] for s in snap["team_steps"]} == {"request_team", "search_team"}
    assert snap["final_answer"] and snap["plans"]
    assert step_rows(outcome.state)[0].duration_s is not None


def test_every_plan_object_is_in_the_event_log_and_the_export(service, store):
    design = Design(
        system="hierarchical_teams",
        approvals={"health_checker": "never", "site_requester": "never"},
    )
    run_id = service.start(
        "Check the API is healthy and find reliable news sites about what moves the stock market.",
        design,
    )
    wait_status(service, run_id, "done")
    exported = store.export_run(run_id)
    plans = [
        e["data"]["plan"]
        for e in exported["events"]
        if e["kind"] == "custom" and isinstance(e["data"], dict) and "plan" in e["data"]
    ]
    assert plans, "no plan event in the export"
    teams = {s["team"] for s in plans[0]["subtasks"]}
    assert teams == {"request_team", "search_team"}
    assert all(s["status"] == "pending" for s in plans[0]["subtasks"])
    assert [s["id"] for s in plans[0]["subtasks"]] == [
        r["id"] for r in store.snapshot(run_id)["rows"]
    ]


def test_a_redirect_off_the_allowlist_is_reported_not_followed():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from graph.tools.team_api import send

    hits = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            if self.path.startswith("/api/health"):
                self.send_response(302)
                self.send_header(
                    "Location", f"http://127.0.0.1:{self.server.server_port}/elsewhere"
                )
                self.end_headers()
            else:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"followed")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}/api"
        reply = send(ApiCall("GET", base + "/health"), base, timeout_s=5)
    finally:
        server.shutdown()
    assert reply.startswith("ERROR: HTTP 302") and "not followed" in reply
    assert hits == ["/api/health"]
