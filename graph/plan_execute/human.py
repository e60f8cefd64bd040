"""The human node: the run pauses here, persisted, until a person (or the timeout) decides.

It uses LangGraph's own ``interrupt()``: the checkpointer keeps the pause, so it
survives a restart of the app, and ``Command(resume=...)`` carries the decision in.
Two kinds of question come here: approval of a flagged step before its agent runs,
and escalation of a step that reached its replan cap.

Decisions: ``approve``; ``edit`` (approve with another query); ``reject`` with a
reason (the Planner replans the step, which counts as an attempt); ``skip`` (move on
without running the step); ``retry`` (escalation only: one more replan).
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from graph.kernel.approval import ask_human, decided_by_words
from graph.kernel.messages import tag_messages
from graph.plan_execute.deps import Deps
from graph.plan_execute.executor import advance, run_step
from graph.plan_execute.state import State


def human_node(state: State, deps: Deps) -> Command:
    request = state.get("human_request")
    if not request:
        return Command(goto="executor")
    decision = ask_human(request, node="human")
    if isinstance(decision, Command):
        return decision
    step, agent = request["step"], request["agent"]
    attempts = (state.get("replan_attempts") or {}).get(str(step), 0)
    record = {**request, **decision.model_dump(), "decided_at": time.time()}
    said: dict[str, Any] = {
        "human_request": None,
        "approvals": [record],
        "messages": tag_messages(
            [HumanMessage(content=describe(record), name=decision.by)], step, "human"
        ),
    }

    if decision.decision in ("approve", "edit"):
        query = (
            decision.query.strip()
            if decision.decision == "edit" and decision.query.strip()
            else request["query"]
        )
        return run_step(state, said, step, agent, query, f"Approved by {decision.by}.")
    if decision.decision == "skip":
        if decision.by == "experiment":  # the step table says why it did not run
            said["step_results"] = {str(step): decision.reason}
        return advance(deps, state, step, "skipped", said, f"Skipped by {decision.by}.")
    # reject (counts as a replan attempt) or retry (one more replan granted at the cap)
    if decision.decision == "reject" and attempts >= deps.max_replans:
        said["notices"] = [f"Step {step} rejected at its replan cap: moving on."]
        return advance(deps, state, step, "skipped", said, f"Rejected by {decision.by}.")
    reason = (
        f"A human rejected step {step} ({agent}): {decision.reason or 'no reason given'}"
        if decision.decision == "reject"
        else f"A human asked to retry step {step}: {decision.reason or request['reason']}"
    )
    return Command(
        update={
            **said,
            "replan_flag": True,
            "last_reason": reason,
            "replan_attempts": {str(step): attempts + 1},
            "step_status": {str(step): "replanned"},
        },
        goto="planner",
    )


def describe(record: dict) -> str:
    """The decision in one line, for the messages and the table."""
    who = decided_by_words(record["by"])
    text = f"{who}: {record['decision']} step {record['step']} ({record['agent']})"
    if record["decision"] == "edit":
        text += f" with the query: {record['query']}"
    if record.get("reason"):
        text += f". Reason: {record['reason']}"
    return text + "."
