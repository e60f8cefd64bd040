"""Small models' structural slips repaired in code where the intent is unambiguous
(issue 34, point 5): pure functions, each repair with the notice that says what it did.
The runs that go on because of them are in each system's own tests."""

from __future__ import annotations

from graph.hierarchical_teams.lead import materialise
from graph.hierarchical_teams.lead_asks import (
    Cancellation,
    NewSubtask,
    Replan,
    RoutingDecision,
    Subtask,
    SubtaskPlan,
)
from graph.hierarchical_teams.repairs import repair_choice, repair_drafts, repair_replan
from graph.hierarchical_teams.team_supervisor import TeamRoute, repair_route
from graph.kernel.slips import match_name, repair_name
from graph.plan_execute.planner import Plan, PlanStep, repair_plan
from graph.supervisor_bus.supervisor import SupervisorDecision, repair_decision

TEAMS = ["search_team", "request_team"]
PLAN = "The lead supervisor's plan"


def _plan(*subtasks: tuple[str, str, str, list[str]]) -> list[Subtask]:
    return [Subtask(id=i, team=t, instruction=x, depends_on=d) for i, t, x, d in subtasks]


def _shape(drafts) -> list[tuple]:
    return [(getattr(d, "id", ""), d.team, d.instruction, d.depends_on) for d in drafts]


# --------------------------------------------------------------------------- names


def test_a_name_in_another_case_or_spacing_is_the_one_allowed_name_it_means():
    allowed = ["web_researcher", "data_researcher", "FINISH"]
    assert match_name("Web_Researcher", allowed) == "web_researcher"
    assert match_name("  data_researcher ", allowed) == "data_researcher"
    assert match_name("web researcher", allowed) == "web_researcher"
    assert match_name("Web-Researcher", allowed) == "web_researcher"
    assert match_name("finish", allowed) == "FINISH"
    assert match_name("researcher", allowed) is None


def test_a_name_that_could_mean_two_allowed_names_is_not_guessed():
    assert match_name("web_researcher", ["Web_Researcher", "web-researcher"]) is None
    assert repair_name("WEB_RESEARCHER", ["Web_Researcher", "web-researcher"], "x") == (
        "WEB_RESEARCHER",
        [],
    )


def test_a_repaired_name_says_what_was_read_and_an_exact_one_says_nothing():
    where = "The Planner's step 2 named agent"
    assert repair_name("Web_Researcher", ["web_researcher"], where) == (
        "web_researcher",
        ["The Planner's step 2 named agent 'Web_Researcher': read as web_researcher."],
    )
    assert repair_name("web_researcher", ["web_researcher"], where) == ("web_researcher", [])
    assert repair_name("legal_team", TEAMS, where) == ("legal_team", [])


# --------------------------------------------------------------------------- subtask plans


def test_a_subtask_depending_on_itself_loses_that_dependency_with_a_notice():
    drafts = _plan(
        ("1", "request_team", "Check the API's health", []),
        ("2", "search_team", "Find news sites", ["2"]),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert _shape(repaired) == [
        ("1", "request_team", "Check the API's health", []),
        ("2", "search_team", "Find news sites", []),
    ]
    assert notices == [
        "The lead supervisor's plan had subtask 2 depend on itself: that dependency was dropped."
    ]


def test_a_dependency_on_no_listed_subtask_is_dropped_naming_it():
    drafts = _plan(
        ("a", "search_team", "Find news sites", []),
        ("b", "request_team", "Send their URLs", ["a", "search_team", "7"]),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert [d.depends_on for d in repaired] == [[], ["1"]]
    assert notices == [
        "The lead supervisor's plan had subtask b depend on 'search_team', which is no "
        "subtask of the plan: that dependency was dropped.",
        "The lead supervisor's plan had subtask b depend on '7', which is no subtask of "
        "the plan: that dependency was dropped.",
    ]


def test_a_dependency_on_a_later_subtask_that_waits_on_it_is_dropped_to_break_the_cycle():
    drafts = _plan(
        ("a", "search_team", "Find news sites", ["b"]),
        ("b", "request_team", "Send their URLs", ["a"]),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert [(d.id, d.depends_on) for d in repaired] == [("1", []), ("2", ["1"])]
    assert notices == [
        "The lead supervisor's plan had subtask a depend on subtask b, listed after it, "
        "which waits on a: that dependency was dropped to break the cycle."
    ]


def test_a_longer_cycle_loses_one_dependency_and_no_cycle_is_left():
    drafts = _plan(
        ("1", "search_team", "Find sites", ["3"]),
        ("2", "request_team", "Check health", ["1"]),
        ("3", "request_team", "Send URLs", ["2"]),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert [d.depends_on for d in repaired] == [[], ["1"], ["2"]]
    assert len(notices) == 1 and "subtask 1 depend on subtask 3" in notices[0]


def test_a_dependency_on_a_later_subtask_without_a_cycle_is_kept():
    """Listed out of order, but one reading: the dispatcher waits for it. Dropping it would
    send the URLs before any site was found."""
    drafts = _plan(
        ("1", "request_team", "Send the URLs", ["2"]),
        ("2", "search_team", "Find news sites", []),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert [d.depends_on for d in repaired] == [["2"], []] and notices == []


def test_a_repeated_subtask_is_dropped_and_what_waited_on_it_waits_on_the_first():
    drafts = _plan(
        ("1", "search_team", "Find news sites", []),
        ("2", "search_team", " find  news sites", []),
        ("3", "request_team", "Send their URLs", ["2"]),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert _shape(repaired) == [
        ("1", "search_team", "Find news sites", []),
        ("2", "request_team", "Send their URLs", ["1"]),
    ]
    assert notices == [
        "The lead supervisor's plan listed subtask 2 with the same team and instruction as "
        "subtask 1: only 1 was kept."
    ]
    records = materialise(repaired, 1, "r1", set())
    assert [(r["id"], r["depends_on"]) for r in records] == [("s1", []), ("s2", ["s1"])]


def test_the_same_instruction_waiting_on_more_work_is_not_a_repeat():
    drafts = _plan(
        ("1", "search_team", "Find news sites", []),
        ("2", "request_team", "Check health", []),
        ("3", "search_team", "Find news sites", ["2"]),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert len(repaired) == 3 and notices == []


def test_a_repeat_the_first_one_waits_on_is_kept_so_no_cycle_is_made():
    drafts = _plan(
        ("1", "search_team", "Find news sites", ["2"]),
        ("2", "request_team", "Check health", ["3"]),
        ("3", "search_team", "Find news sites", []),
    )
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert [d.depends_on for d in repaired] == [["2"], ["3"], []] and notices == []


def test_a_team_named_in_another_case_is_the_team_it_means():
    drafts = _plan(("1", "Search_Team ", "Find news sites", []))
    repaired, notices = repair_drafts(drafts, TEAMS, set(), PLAN)
    assert repaired[0].team == "search_team"
    assert notices == [
        "The lead supervisor's plan sent subtask 1 to team 'Search_Team ': read as search_team."
    ]


def test_a_replans_added_subtasks_are_repaired_with_new_labels_and_existing_ids_kept():
    added = [
        NewSubtask(team="search_team", instruction="Find sites", depends_on=["s1", "new:1"]),
        NewSubtask(team="request_team", instruction="Send", depends_on=["new:1", "new:3", "s9"]),
    ]
    replan = Replan(keep=["s2"], add=added)
    repaired, notices = repair_drafts(
        replan.add, TEAMS, {"s1", "s2"}, "The lead supervisor's replan", new_prefix="new:"
    )
    assert [d.depends_on for d in repaired] == [["s1"], ["new:1"]]
    assert notices == [
        "The lead supervisor's replan had subtask new:1 depend on itself: that dependency "
        "was dropped.",
        "The lead supervisor's replan had subtask new:2 depend on 'new:3', which is no "
        "subtask of the plan: that dependency was dropped.",
        "The lead supervisor's replan had subtask new:2 depend on 's9', which is no subtask "
        "of the plan: that dependency was dropped.",
    ]
    records = materialise(repaired, 3, "r2", {"s1", "s2"}, new_prefix="new:")
    assert [(r["id"], r["depends_on"]) for r in records] == [("s3", ["s1"]), ("s4", ["s3"])]


def test_a_replan_keeping_or_cancelling_an_id_in_another_case_means_that_id():
    replan = Replan(
        keep=["S2"],
        cancel=[Cancellation(id=" s3", reason="stale")],
        add=[NewSubtask(team="Search_Team", instruction="Find sites", depends_on=["S2"])],
    )
    what = "The lead supervisor's replan"
    repaired, notices = repair_replan(replan, TEAMS, {"s1", "s2", "s3"}, what)
    assert repaired.keep == ["s2"]
    assert [(c.id, c.reason) for c in repaired.cancel] == [("s3", "stale")]
    assert [(d.team, d.depends_on) for d in repaired.add] == [("search_team", ["s2"])]
    assert notices == [
        "The lead supervisor's replan kept subtask 'S2': read as s2.",
        "The lead supervisor's replan cancelled subtask ' s3': read as s3.",
        "The lead supervisor's replan sent subtask new:1 to team 'Search_Team': read as "
        "search_team.",
        "The lead supervisor's replan had subtask new:1 depend on 'S2': read as s2.",
    ]


def test_the_lead_routing_to_an_id_in_another_case_routes_to_that_id():
    decision = RoutingDecision(next_subtask_id="S2", reason="next")
    repaired, notices = repair_choice(decision, ["s1", "s2", "FINISH"])
    assert (repaired.next_subtask_id, repaired.reason) == ("s2", "next")
    assert notices == ["The lead supervisor's routing named subtask 'S2': read as s2."]


def test_a_plan_with_no_slip_comes_back_as_it_was():
    plan = SubtaskPlan(
        subtasks=_plan(
            ("1", "search_team", "Find news sites", []),
            ("2", "request_team", "Send their URLs", ["1"]),
        )
    )
    repaired, notices = repair_drafts(plan.subtasks, TEAMS, set(), PLAN)
    assert _shape(repaired) == _shape(plan.subtasks) and notices == []


# --------------------------------------------------------------------------- plan steps

ALLOWED = ["web_researcher", "data_researcher", "chart_generator", "synthesizer"]


def _steps(*pairs: tuple[str, str]) -> Plan:
    return Plan(steps=[PlanStep(agent=a, action=x) for a, x in pairs])


def test_a_plan_step_naming_an_agent_in_another_case_is_read_as_that_agent():
    plan = _steps(("Web_Researcher", "Search for X"), ("synthesizer", "Answer"))
    repaired, notices = repair_plan(plan, ALLOWED)
    assert [s.agent for s in repaired.steps] == ["web_researcher", "synthesizer"]
    assert notices == ["The Planner's step 1 named agent 'Web_Researcher': read as web_researcher."]


def test_a_repeated_plan_step_is_dropped_keeping_the_first():
    plan = _steps(
        ("web_researcher", "Search for X"),
        ("web_researcher", "search for  X"),
        ("synthesizer", "Answer"),
    )
    repaired, notices = repair_plan(plan, ALLOWED)
    assert [(s.agent, s.action) for s in repaired.steps] == [
        ("web_researcher", "Search for X"),
        ("synthesizer", "Answer"),
    ]
    assert notices == [
        "The Planner's step 2 repeats step 1 (same agent and action): it was dropped."
    ]


def test_a_replan_never_drops_or_renumbers_steps_that_have_run():
    plan = _steps(
        ("web_researcher", "Search for X"),
        ("web_researcher", "Search for X"),
        ("synthesizer", "Answer"),
        ("synthesizer", "Answer"),
    )
    repaired, notices = repair_plan(plan, ALLOWED, keep_until=2)
    assert [s.action for s in repaired.steps] == ["Search for X", "Search for X", "Answer"]
    assert notices == [
        "The Planner's step 4 repeats step 3 (same agent and action): it was dropped."
    ]


def test_a_step_asking_for_approval_is_not_a_repeat_of_one_that_does_not():
    plan = Plan(
        steps=[
            PlanStep(agent="web_researcher", action="Search for X"),
            PlanStep(agent="web_researcher", action="Search for X", approval=True),
        ]
    )
    repaired, notices = repair_plan(plan, ALLOWED)
    assert len(repaired.steps) == 2 and notices == []


# --------------------------------------------------------------------------- routing


def test_the_supervisors_next_agent_in_another_case_is_the_agent_it_means():
    decision = SupervisorDecision(next_agent="Researcher", task="Find it")
    repaired, notices = repair_decision(decision, ["researcher", "writer", "FINISH"])
    assert (repaired.next_agent, repaired.task) == ("researcher", "Find it")
    assert notices == ["The supervisor named next_agent 'Researcher': read as researcher."]


def test_a_team_supervisors_next_worker_in_another_case_is_the_worker_it_means():
    route = TeamRoute(next_worker=" SEARCHER", task="Find sites")
    repaired, notices = repair_route(route, ["searcher", "FINISH"], "search_team")
    assert repaired.next_worker == "searcher"
    assert notices == ["search_team's supervisor named next_worker ' SEARCHER': read as searcher."]
