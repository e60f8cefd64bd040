"""Human approval of flagged steps and escalation at the replan cap (interrupt/resume)."""

from __future__ import annotations

import pytest
from langgraph.types import Command

from graph.kernel.design import Design
from graph.plan_execute import SYSTEM
from graph.service.runs import continue_run, run_question
from tests.support import RewritingModel, edit_json, is_executor

build_graph = SYSTEM.build_graph

REPORT = "What caused the dot-com crash? Save a report."


def start(question=REPORT, design=None, planner=None):
    design = design or Design()
    graph = build_graph(design, planner_model=planner)
    return graph, design, run_question(question, design, graph=graph)


def answer(graph, design, outcome, **decision):
    pending = outcome.interrupts[0]
    return continue_run(graph, Command(resume={pending["id"]: decision}), outcome.thread_id, design)


def test_policies_default_to_always_for_side_effects_and_planner_flags_otherwise():
    design = Design(approvals={"web_researcher": "always"})
    assert design.approval_policy("report_writer") == "always"
    assert design.approval_policy("data_researcher") == "planner"
    assert design.approval_policy("web_researcher") == "always"
    with pytest.raises(ValueError, match="unknown agent"):
        Design(approvals={"cortex_researcher": "never"})


def test_a_side_effecting_step_pauses_before_its_agent_runs_and_says_what_will_run():
    graph, design, outcome = start()
    assert outcome.status == "waiting"
    (pending,) = outcome.interrupts
    assert pending["kind"] == "approval" and pending["agent"] == "report_writer"
    assert pending["step"] == 2
    assert pending["query"].startswith("Save the findings so far as a report")
    assert "report_writer" in pending["reason"]
    assert "2" not in outcome.state["step_results"]  # the agent has not run
    assert outcome.rows[1].status == "waiting"


def test_approving_runs_the_step_and_records_the_decision():
    graph, design, outcome = start()
    done = answer(graph, design, outcome, decision="approve")
    assert done.status == "done", done.reason
    assert done.state["step_results"]["2"].startswith("Report saved to")
    (decision,) = done.state["approvals"]
    assert decision["decision"] == "approve" and decision["by"] == "human"
    human = [m for m in done.state["messages"] if m.response_metadata.get("agent") == "human"]
    assert human[0].content == "Human: approve step 2 (report_writer)."


def test_an_edited_query_is_what_the_agent_receives():
    graph, design, outcome = start()
    done = answer(
        graph, design, outcome, decision="edit", query='Save a report titled "Edited title".'
    )
    assert done.status == "done"
    asked = [
        m.content
        for m in done.state["messages"]
        if m.type == "human"
        and m.name == "agent_query"
        and m.response_metadata.get("agent") == "report_writer"
    ]
    assert asked[0].startswith('Save a report titled "Edited title".')
    assert "edited-title" in done.state["step_results"]["2"]


def test_rejecting_sends_the_reason_to_the_planner_and_counts_as_an_attempt():
    graph, design, outcome = start()
    after = answer(graph, design, outcome, decision="reject", reason="not now")
    assert after.state["replan_attempts"] == {"2": 1}
    history = after.state["plan_history"]
    assert history[-1]["reason"] == "A human rejected step 2 (report_writer): not now"
    # The revised step still uses report_writer, which always asks: asked again.
    assert after.status == "waiting" and after.interrupts[0]["step"] == 2


def test_rejecting_at_the_cap_skips_the_step():
    graph, design, outcome = start(design=Design(max_replans=0))
    done = answer(graph, design, outcome, decision="reject", reason="no")
    assert done.status == "done"
    assert done.rows[1].status == "skipped" and done.state["final_answer"]


def test_skip_moves_on_without_running_the_step():
    graph, design, outcome = start()
    done = answer(graph, design, outcome, decision="skip")
    assert done.status == "done"
    assert [r.status for r in done.rows] == ["done", "skipped", "done"]
    assert "2" not in done.state["step_results"]


def test_never_means_no_pause_even_for_side_effects():
    graph, design, outcome = start(design=Design(approvals={"report_writer": "never"}))
    assert outcome.status == "done" and outcome.state["approvals"] == []


def test_planner_flags_are_honoured_only_under_the_planner_policy():
    question = "How did Apple's stock price change in 2007? Ask me before each step."
    graph, design, outcome = start(question)
    assert outcome.status == "waiting"
    assert outcome.interrupts[0]["reason"] == (
        "The Planner flagged this step: The user asked to approve the steps."
    )
    graph, design, outcome = start(question, Design(approvals={"data_researcher": "never"}))
    assert outcome.status == "done"


def test_a_step_at_its_replan_cap_escalates_to_a_human_and_retry_grants_one_more_replan():
    def always_replan(prompt, reply, n):
        if is_executor(prompt) and "(not run yet)" not in prompt:
            return edit_json(reply, replan=True, goto="planner", reason="still nothing")
        return None

    design = Design(max_replans=1)
    graph, design, outcome = start(
        "What caused the dot-com crash?", design, RewritingModel(rewrite=always_replan)
    )
    assert outcome.status == "waiting"
    pending = outcome.interrupts[0]
    assert pending["kind"] == "escalation" and "replan cap (1)" in pending["reason"]
    again = answer(graph, design, outcome, decision="retry")
    assert again.state["replan_attempts"] == {"1": 2}
    assert again.status == "waiting"  # the rewritten executor still asks for a replan
    done = answer(graph, design, again, decision="skip")
    assert done.status == "done" and done.rows[0].status == "skipped"


def test_an_unusable_decision_is_refused_and_the_run_keeps_waiting():
    graph, design, outcome = start()
    after = answer(graph, design, outcome, decision="maybe")
    assert after.status == "waiting"
    assert any("Unusable decision" in n for n in after.state["notices"])


@pytest.mark.parametrize("max_replans", [0, 1])
def test_a_step_that_found_nothing_at_its_cap_escalates_and_retry_reruns_it(max_replans):
    """Told the cap, a model stops asking for replans and moves on: a step that found no
    data must still end as the design says (an escalation here), never "done"."""
    design = Design(max_replans=max_replans, enabled_agents=["data_researcher", "synthesizer"])
    graph, design, outcome = start("How did Tesla's stock do in 2008?", design)
    assert outcome.status == "waiting", outcome.reason
    (pending,) = outcome.interrupts
    assert pending["kind"] == "escalation" and "found nothing usable" in pending["reason"]
    step = str(pending["step"])
    assert outcome.state["step_status"][step] != "done"
    runs_before = outcome.state["step_runs"][step]

    again = answer(graph, design, outcome, decision="retry")  # Retry, from the card
    assert again.state["replan_attempts"][step] == max_replans + 1
    assert again.state["step_runs"][step] == 1 or again.state["step_runs"][step] > runs_before
    assert again.status == "waiting"  # the data still holds no Tesla: asked again
    done = answer(graph, design, again, decision="skip")
    assert done.status == "done" and done.state["step_status"][step] == "skipped"


def test_without_escalation_a_step_that_found_nothing_at_its_cap_is_skipped_not_done():
    design = Design(
        max_replans=0, escalate_at_cap=False, enabled_agents=["data_researcher", "synthesizer"]
    )
    _, _, outcome = start("How did Tesla's stock do in 2008?", design)
    assert outcome.status == "done"
    assert outcome.state["step_status"]["1"] == "skipped"
    assert any("found nothing usable" in n for n in outcome.state["notices"])
