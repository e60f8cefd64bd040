"""The human node of supervisor_bus: questions on the bus, answered through ``interrupt()``.

The supervisor addresses a ``request`` to "human" (an escalated request, or an
approval before a request it must not send alone); this node takes the oldest one it
has not consumed, pauses the run with the payload the Approvals page lists (kind,
step, agent, query, reason, asked_at), and turns the answer into a ``result`` message
back to the supervisor. The decisions are the run service's (``RunService.decide``):

- escalation: ``retry`` or ``approve`` sends the same task to the same agent again;
  ``edit`` reassigns it when the query names another enabled agent (otherwise it
  retries with the edited task); ``skip`` or ``reject`` drops it (a dead letter).
- approval: ``approve``/``retry`` sends the request, ``edit`` sends it with the
  edited task, ``skip``/``reject`` does not send it.
"""

from __future__ import annotations

import time

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from graph.kernel.approval import HumanDecision, ask_human, decided_by_words
from graph.kernel.messages import tag_messages
from graph.supervisor_bus.bus import Outbox, inbox
from graph.supervisor_bus.deps import Deps


def action_for(
    kind: str, decision: HumanDecision, agent: str, task: str, enabled: list[str]
) -> tuple[str, str, str]:
    """(action, agent, task) for the supervisor to carry out."""
    query = decision.query.strip()
    if decision.decision in ("skip", "reject"):
        return ("drop" if kind == "escalation" else "decline"), agent, task
    if decision.decision == "edit" and query:
        if kind == "escalation" and query in enabled:
            return "reassign", query, task
        return ("retry" if kind == "escalation" else "send"), agent, query
    return ("retry" if kind == "escalation" else "send"), agent, task


def human_node(state: dict, deps: Deps) -> Command:
    pending = inbox(state, "human", types=("request",))
    if not pending:
        return Command(goto="supervisor")
    asked = pending[0]
    request = dict(asked.payload)
    edits = {"query": request.get("query", "")}
    if request.get("kind") == "escalation":  # an edit may reassign it to another agent
        edits = {"agent": request.get("agent", ""), **edits}
    decision = ask_human(request, node="human", args=edits)
    if isinstance(decision, Command):
        return decision
    kind, agent, task = request["kind"], request["agent"], request.get("query", "")
    action, target, new_task = action_for(kind, decision, agent, task, deps.enabled)
    out = Outbox(state, "human")
    out.send(
        "supervisor",
        "result",
        {
            "kind": kind,
            "decision": decision.decision,
            "action": action,
            "agent": target,
            "task": new_task,
            "reason": decision.reason,
            "by": decision.by,
            "message_id": request.get("message_id"),
        },
        in_reply_to=asked.id,
    )
    record = {
        **request,
        **decision.model_dump(),
        "action": action,
        "target": target,
        "decided_at": time.time(),
    }
    said = HumanMessage(content=describe(record), name=decision.by)
    return Command(
        update={
            "bus": out.sent,
            "human_consumed": [asked.id],
            "approvals": [record],
            "messages": tag_messages([said], request.get("step") or 0, "human"),
        },
        goto="supervisor",
    )


def describe(record: dict) -> str:
    """The decision in one line, for the messages and the table."""
    who = decided_by_words(record["by"])
    subject = (
        f"the request {record.get('message_id')} to {record['agent']}"
        if record["kind"] == "escalation"
        else f"the request to {record['agent']}"
    )
    text = f"{who}: {record['decision']} {subject} ({record['action']}"
    if record["action"] == "reassign":
        text += f" to {record['target']}"
    text += ")"
    if record.get("reason"):
        text += f". Reason: {record['reason']}"
    return text + "."
