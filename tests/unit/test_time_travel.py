"""The run service after a pause: approvals, timeouts, step mode, timeline, forks."""

from __future__ import annotations

import time

import pytest

from graph.kernel.design import Design
from tests.unit.conftest import wait_status

REPORT = "What caused the dot-com crash? Save a report."
TESLA = "How did Tesla's stock do in 2008?"


def test_pending_approvals_are_listed_across_runs_and_answered_separately(service):
    first = service.start(REPORT, Design())
    second = service.start("Why did IBM sell its PC division? Save a report.", Design())
    wait_status(service, first, "waiting"), wait_status(service, second, "waiting")
    pending = service.pending_approvals()
    assert {p["run_id"] for p in pending} == {first, second}
    assert all(p["agent"] == "report_writer" and p["query"] for p in pending)
    by_run = {p["run_id"]: p for p in pending}
    service.decide(second, by_run[second]["id"], "reject", reason="not this one")
    service.decide(first, by_run[first]["id"], "approve")
    assert service.wait(first, timeout=30).status == "done"
    assert wait_status(service, second, "waiting")  # replanned, and asks again
    decisions = [m for m in service.store.messages(second, agent="human")]
    assert decisions[0]["content"] == "Human: reject step 2 (report_writer). Reason: not this one."


def test_an_answered_approval_cannot_be_answered_twice(service):
    run_id = service.start(REPORT, Design())
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    service.decide(run_id, pending["id"], "skip")
    service.wait(run_id, timeout=30)
    with pytest.raises(ValueError, match="no longer pending"):
        service.decide(run_id, pending["id"], "approve")


def test_an_approval_past_its_timeout_gets_the_default_recorded_as_such(service):
    run_id = service.start(REPORT, Design(approval_timeout_s=5, timeout_action="skip"))
    wait_status(service, run_id, "waiting")
    assert service.apply_timeouts() == 0  # not yet
    assert service.apply_timeouts(now=time.time() + 6) == 1
    record = service.wait(run_id, timeout=30)
    assert record.status == "done"
    (decision,) = service.store.messages(run_id, agent="human")
    assert decision["content"].startswith(
        "The approval timed out; applied the default: skip step 2"
    )
    assert decision["name"] == "timeout"
    rows = service.store.snapshot(run_id)["rows"]
    assert rows[1]["status"] == "skipped"


def test_step_mode_pauses_before_every_node(service):
    run_id = service.start("What caused the dot-com crash?", Design(), step_mode=True)
    record = wait_status(service, run_id, "paused")
    assert record.reason == "Paused before planner (step mode)."
    service.resume(run_id, step_mode=True)
    wait_status(service, run_id, "paused")
    assert service.store.nodes_run(run_id) == ["planner"]
    assert service.store.run(run_id).reason == "Paused before executor (step mode)."
    service.resume(run_id)  # Continue: to the end
    assert service.wait(run_id, timeout=30).status == "done"
    assert service.store.nodes_run(run_id)[-1] == "synthesizer"


def test_the_timeline_shows_each_checkpoint_with_its_node_fields_and_diff(service):
    run_id = service.start(TESLA, Design())
    assert service.wait(run_id, timeout=30).status == "done"
    timeline = service.timeline(run_id)
    nodes = [row["node"] for row in timeline]
    assert nodes[:4] == ["input", "__start__", "planner", "executor"]
    replan = next(
        row for row in timeline if row["fields"]["replan_flag"] and row["node"] == "executor"
    )
    assert replan["diff"]["replan_attempts"] == {"before": {}, "after": {"1": 1}}
    assert replan["fields"]["last_reason"].startswith(
        "Step 1 (data_researcher) produced no usable data"
    )


def test_a_fork_with_an_edited_plan_is_a_new_run_that_records_its_parent(service):
    run_id = service.start(TESLA, Design())
    service.wait(run_id, timeout=30)
    after_plan = next(row for row in service.timeline(run_id) if row["node"] == "planner")
    plan = {
        "1": {
            "agent": "web_researcher",
            "action": "Search the documents for: the 2008 financial crisis",
        },
        "2": {"agent": "synthesizer", "action": "Answer from the findings."},
    }
    fork = service.fork(run_id, after_plan["checkpoint_id"], {"plan": plan})
    record = service.wait(fork, timeout=30)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (run_id, after_plan["checkpoint_id"])
    rows = service.store.snapshot(fork)["rows"]
    assert [(r["agent"], r["replans"]) for r in rows] == [("web_researcher", 0), ("synthesizer", 0)]
    assert service.store.snapshot(run_id)["rows"][0]["replans"] == 1  # the parent is untouched


def test_forking_from_the_input_or_the_end_is_refused_with_a_reason(service):
    run_id = service.start(TESLA, Design())
    service.wait(run_id, timeout=30)
    timeline = service.timeline(run_id)
    with pytest.raises(ValueError, match="run the question again"):
        service.fork(run_id, timeline[0]["checkpoint_id"])
    with pytest.raises(ValueError, match="end of the run"):
        service.fork(run_id, timeline[-1]["checkpoint_id"])
    with pytest.raises(ValueError, match="Unknown state field"):
        service.fork(run_id, timeline[3]["checkpoint_id"], {"plann": {}})
