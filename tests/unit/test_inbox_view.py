"""The Approvals inbox view-model on real waiting runs in a real SQLite store: groups by
experiment and run, filters, an order that does not move when a card is decided, and the
line a decision (or a timeout) leaves in the card's place."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from graph.kernel.design import Design
from tests.inbox_support import APPLE, IBM, REPORT, waiting_experiment, waiting_run
from ui import inbox_view
from ui.inbox_view import Filters, build_inbox


def _inbox(service, since: float, filters: Filters | None = None):
    return build_inbox(service.pending_approvals(), service.recent_decisions(since), filters)


def _ids(inbox) -> list[str]:
    return [card["id"] for group in inbox.groups for card in group.cards]


def test_cards_are_grouped_by_experiment_then_run_with_variant_and_repeat(store, service):
    start = time.time()
    by_hand = waiting_run(store, service, APPLE)
    experiment_id, runs = waiting_experiment(store, service, "report prompts", [REPORT, IBM])
    inbox = _inbox(service, start)
    assert [g.title for g in inbox.groups] == [
        "Runs outside experiments",
        "Experiment “report prompts”",
    ]
    outside, experiment = inbox.groups
    assert [r.run_id for r in outside.runs] == [by_hand]
    assert experiment.key == experiment_id
    assert [r.run_id for r in experiment.runs] == [
        runs[("A", 0)],
        runs[("A", 1)],
        runs[("B", 0)],
        runs[("B", 1)],
    ]
    assert experiment.runs[3].title == (f"Variant “B” · repeat 1 of 1 · question 2: “{IBM}”")
    assert outside.runs[0].title == f"“{APPLE}” · run {by_hand[:8]}"
    assert (inbox.waiting, inbox.decided, inbox.hidden) == (5, 0, 0)
    assert all(c["timeout_s"] == 0 for c in experiment.cards)
    assert inbox_view.countdown(experiment.cards[0]).startswith("no deadline")


def test_filters_by_experiment_system_agent_and_kind(store, service):
    start = time.time()
    by_hand = waiting_run(store, service, APPLE)
    teams = waiting_run(
        store,
        service,
        "Check that the API is healthy and find reliable news sites",
        Design(system="hierarchical_teams"),
    )
    waiting_experiment(store, service, "report prompts", [REPORT], variants=("A",))
    outside = _inbox(service, start, Filters(experiments={inbox_view.NOT_IN_EXPERIMENT}))
    assert [r.run_id for g in outside.groups for r in g.runs] == [by_hand, teams]
    assert outside.hidden == 1
    calls = _inbox(service, start, Filters(kinds={"HTTP call"}))
    assert [r.run_id for g in calls.groups for r in g.runs] == [teams]
    assert _inbox(service, start, Filters(systems={"hierarchical_teams"})).waiting == 1
    writers = _inbox(
        service, start, Filters(agents={"report_writer"}, experiments={"report prompts"})
    )
    assert [g.title for g in writers.groups] == ["Experiment “report prompts”"]
    options = inbox_view.filter_options(
        inbox_view.merge(service.pending_approvals(), service.recent_decisions(start))
    )
    assert options["systems"] == ["hierarchical_teams", "plan_execute"]
    assert options["kinds"] == ["HTTP call", "approval"]
    assert options["experiments"] == [inbox_view.NOT_IN_EXPERIMENT, "report prompts"]


def test_a_card_decided_in_the_middle_keeps_its_place_as_a_line(store, service):
    start = time.time()
    first, middle, last = (waiting_run(store, service, q) for q in (REPORT, IBM, APPLE))
    before = _ids(_inbox(service, start))
    (item,) = [p for p in service.pending_approvals() if p["run_id"] == middle]
    service.decide(middle, item["id"], "approve")
    after = _inbox(service, start)
    assert _ids(after) == before
    assert (after.waiting, after.decided) == (2, 1)
    decided = [c for g in after.groups for c in g.cards if c.get("decided")]
    assert [c["run_id"] for c in decided] == [middle]
    at = datetime.fromtimestamp(decided[0]["decided"]["at"])
    assert inbox_view.decided_line(decided[0]["decided"]) == f"Approved by you at {at:%H:%M}"
    assert [c["run_id"] for c in after.groups[0].pending] == [first, last]
    # later questions of other runs come after, and the order still holds once it has finished
    assert service.wait(middle, timeout=60).status == "done"
    assert _ids(_inbox(service, start)) == before
    # a page opened after the window does not show it
    assert _inbox(service, time.time() + 1).decided == 0


@pytest.mark.parametrize(("action", "words"), [("reject", "rejected"), ("skip", "skipped")])
def test_a_timeout_leaves_a_record_of_the_default_it_applied(store, service, action, words):
    start = time.time()
    run_id = waiting_run(
        store, service, REPORT, Design(approval_timeout_s=30, timeout_action=action)
    )
    (item,) = service.pending_approvals()
    assert item["timeout_s"] == 30 and item["timeout_action"] == action
    assert inbox_view.countdown(item, now=item["asked_at"] + 12.5) == (
        f"deadline in 17 s (then {words} by default)"
    )
    assert service.apply_timeouts(now=item["asked_at"] + 31) == 1
    (decided,) = _inbox(service, start).groups[0].cards
    assert decided["id"] == item["id"] and decided["run_id"] == run_id
    record = decided["decided"]
    assert (record["decision"], record["by"]) == (action, "timeout")
    at = datetime.fromtimestamp(record["at"])
    assert inbox_view.decided_line(record) == f"Timed out at {at:%H:%M:%S}: {words} by default"


def test_countdown_words():
    item = {"asked_at": 1000.0, "timeout_s": 600.0, "timeout_action": "reject"}
    assert (
        inbox_view.countdown(item, now=1528.0)
        == "deadline in 1 min 12 s (then rejected by default)"
    )
    assert inbox_view.countdown(item, now=1700.0).startswith("deadline passed: rejected by default")
    assert inbox_view.countdown({**item, "timeout_s": 0}, now=1528.0).startswith("no deadline")
    held = {**item, "timeout_held": "The disk holding the store is full: x could not be written."}
    assert inbox_view.countdown(held, now=1700.0) == (
        "deadline passed, not rejected by default yet: "
        "The disk holding the store is full: x could not be written."
    )


def test_bulk_approve_answers_each_card_and_names_the_one_decided_elsewhere(store, service):
    start = time.time()
    _, runs = waiting_experiment(store, service, "report prompts", [REPORT, IBM])
    (group,) = _inbox(service, start).groups
    elsewhere = group.pending[1]
    service.decide(elsewhere["run_id"], elsewhere["id"], "skip")  # another tab, meanwhile
    with pytest.raises(ValueError, match="Say why you reject them"):
        inbox_view.decide_all(service, group.pending, "reject", "  ")
    results = inbox_view.decide_all(service, group.pending, "approve")
    assert [r.ok for r in results] == [True, False, True, True]
    assert results[1].text == "already decided elsewhere: left as it was"
    kind, text = inbox_view.bulk_summary("approve", results)
    assert kind == "warning" and text.startswith("Approved 3 of 4: their runs go on.")
    assert inbox_view.card_label(elsewhere) in text
    for run_id in runs.values():
        assert service.wait(run_id, timeout=60).status == "done"
    assert service.pending_approvals() == []
    lines = [inbox_view.decided_line(c["decided"]) for c in _inbox(service, start).groups[0].cards]
    assert [line.split(" by ")[0] for line in lines] == [
        "Approved",
        "Skipped",
        "Approved",
        "Approved",
    ]


def test_an_edited_query_is_kept_with_the_decision(store, service):
    start = time.time()
    run_id = waiting_run(store, service, REPORT)
    (item,) = service.pending_approvals()
    service.decide(run_id, item["id"], "edit", query='Save a report titled "Bubble".')
    (decided,) = service.recent_decisions(start)
    assert decided["edited_query"] == 'Save a report titled "Bubble".'
    assert decided["query"] == item["query"]  # what was asked stays as asked
    assert inbox_view.decided_line(decided["decided"]).startswith(
        "Approved with your edited query by you at "
    )


def test_each_outcome_is_styled_as_what_it_is_and_a_timeout_as_a_timeout():
    kinds = {
        decision: inbox_view.outcome_kind({"decision": decision, "by": "human"})
        for decision in ("approve", "edit", "reject", "skip", "retry", "shrug")
    }
    assert kinds == {
        "approve": "approved",
        "edit": "edited",
        "reject": "rejected",
        "skip": "skipped",
        "retry": "retried",
        "shrug": "skipped",  # unknown: neutral, never a success
    }
    assert inbox_view.outcome_kind({"decision": "reject", "by": "timeout"}) == "timed-out"


def test_a_bulk_action_leaves_a_question_that_arrived_since_waiting_and_names_it(store, service):
    start = time.time()
    first = waiting_run(store, service, REPORT)
    (group,) = _inbox(service, start).groups
    on_screen = group.pending
    late = waiting_run(store, service, IBM)  # arrives after the page was drawn
    _, other_runs = waiting_experiment(store, service, "elsewhere", [APPLE], variants=("A",))
    arrived = inbox_view.arrived_since(service.pending_approvals(), on_screen, group.key)
    assert [a["run_id"] for a in arrived] == [late]  # not the experiment's: another group
    hidden = inbox_view.arrived_since(
        service.pending_approvals(), on_screen, group.key, Filters(agents={"planner"})
    )
    assert hidden == []  # filtered out: not this view's to name
    results = inbox_view.decide_all(service, on_screen, "approve")
    kind, text = inbox_view.bulk_summary("approve", results, arrived)
    assert kind == "warning"
    assert text == (
        "Approved 1 of 1: their runs go on. Left waiting, as they arrived after the page "
        f"showed this group: step 2 (report_writer) of “{IBM}”."
    )
    assert service.wait(first, timeout=60).status == "done"
    assert store.run(late).status == "waiting"
