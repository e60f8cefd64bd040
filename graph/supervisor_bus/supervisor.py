"""The supervisor node (docs/systems/supervisor_bus.md): a router with memory, reading its inbox.

Each run of the node, in order: answers in its inbox close their requests in the
registry of outstanding requests; a human's decision is carried out; a request past
its timeout is removed from the registry, marked escalated and handed to a human
(one per run of the node, each exactly once: the escalated set is persisted with the
removal); otherwise the model decides who runs next, or FINISH. Every decision is
itself a ``status`` message on the bus, so the last one explains where a run stands.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from langgraph.graph import END
from langgraph.types import Command
from pydantic import BaseModel, Field

from graph.kernel.messages import FINISH_WORDS, tag_messages
from graph.kernel.slips import repair_name
from graph.models.structured import JsonAsk, ModelReplyError, ask_json
from graph.prompts import PromptSet
from graph.supervisor_bus.agents import is_worker, spec_of
from graph.supervisor_bus.answers import final_answer, missing_answer
from graph.supervisor_bus.bus import ANSWER_TYPES, Outbox, inbox, messages
from graph.supervisor_bus.deps import Deps
from graph.supervisor_bus.prompts import (
    decision_example,
    decision_names,
    repair_prompt,
    supervisor_prompt,
)
from graph.supervisor_bus.state import Message

BROADCAST = "all"  # the address of decision messages: they are for whoever watches the bus
HUMAN_OPTIONS = {
    "escalation": {
        "retry": "send the same request to the same agent again",
        "edit": "reassign: put another agent's name in the query (or edit the "
        "task to retry with it)",
        "skip": "drop the request (it stays a dead letter)",
    },
    "approval": {
        "approve": "send the request",
        "edit": "send it with the edited task",
        "skip": "do not send it",
    },
}


class SupervisorDecision(BaseModel):
    next_agent: str = Field(min_length=1)
    task: str = ""
    reason: str = ""


def _check(enabled: list[str], allowed: list[str]) -> Callable[[SupervisorDecision], None]:
    def check(decision: SupervisorDecision) -> None:
        name = decision.next_agent.strip()
        if name.lower() in FINISH_WORDS or name in allowed:
            return
        if name in enabled:
            raise ValueError(
                f"next_agent {name!r} has answered in this turn or is ruled out; "
                f"use one of: {', '.join(allowed)}"
            )
        raise ValueError(
            f"next_agent {name!r} is not an agent of this team; use one of: {', '.join(allowed)}"
        )

    return check


def repair_decision(
    decision: SupervisorDecision, names: list[str]
) -> tuple[SupervisorDecision, list[str]]:
    """The decision with ``next_agent`` read as the one name of ``names`` it means when a
    small model wrote it in another case or spacing; a notice says so."""
    name, said = repair_name(decision.next_agent, names, "The supervisor named next_agent")
    return decision.model_copy(update={"next_agent": name}), said


class _Turn:
    """One run of the supervisor node: what it sends and writes, gathered for one update."""

    def __init__(self, state: dict, deps: Deps):
        self.state, self.deps = state, deps
        self.now = time.time()
        self.bus = messages(state)
        self.out = Outbox(state, "supervisor")
        self.outstanding = dict(state.get("outstanding") or {})
        self.escalated = set(state.get("escalated") or set())
        self.round = int(state.get("current_step") or 0)
        self.update: dict = {
            "notices": [],
            "decisions": [],
            "dead_letters": {},
            "messages": [],
            "supervisor_consumed": [],
        }

    def command(self, goto: str, **fields: Any) -> Command:
        update = {
            **self.update,
            "bus": self.out.sent,
            "outstanding": self.outstanding,
            "current_step": self.round,
            **fields,
        }
        return Command(
            update={k: v for k, v in update.items() if v != [] and v != {} or k == "outstanding"},
            goto=goto,
        )

    def decide(self, next_agent: str, task: str, reason: str, by: str) -> Message:
        """Record a routing decision: a status message, and a row of ``decisions``."""
        self.round += 1
        status = self.out.send(
            BROADCAST,
            "status",
            {"decision": next_agent, "task": task, "reason": reason, "by": by, "round": self.round},
        )
        self.update["decisions"].append(
            {
                "round": self.round,
                "next_agent": next_agent,
                "task": task,
                "reason": reason,
                "by": by,
                "message_id": status.id,
                "at": status.sent_at,
                "request_id": None,
            }
        )
        return status

    def inputs_for(self, agent: str) -> list[str]:
        """The ids of the latest result of every other agent: forwarded with a request."""
        latest: dict[str, str] = {}
        for m in self.bus:
            if m.type == "result" and is_worker(m.from_) and m.from_ != agent:
                latest[m.from_] = m.id
        return list(latest.values())

    def send_request(
        self, agent: str, task: str, reason: str, by: str, extra: dict | None = None
    ) -> Command:
        """Send ``agent`` a request (the registry starts its clock) and hand over to it."""
        if agent not in self.deps.nodes:  # never hand LangGraph a goto it would drop
            return self.finish(
                f"The supervisor routed to {agent!r}, which is not enabled in this design.",
                outcome="failed",
            )
        self.decide(agent, task, reason, by)
        request = self.out.send(
            agent, "request", {"task": task, "inputs": self.inputs_for(agent), **(extra or {})}
        )
        self.update["decisions"][-1]["request_id"] = request.id
        self.outstanding[request.id] = request.sent_at
        return self.command(agent)

    def route_to_human(
        self, kind: str, agent: str, query: str, reason: str, about: str | None = None
    ) -> Command:
        """A request to the human node, in the payload shape the Approvals page lists."""
        self.decide("human", query, reason, "supervisor")
        self.out.send(
            "human",
            "request",
            {
                "kind": kind,
                "step": self.round,
                "agent": agent,
                "query": query,
                "reason": reason,
                "asked_at": self.now,
                "message_id": about,
                "options": HUMAN_OPTIONS[kind],
            },
            in_reply_to=None,
        )
        return self.command("human")

    def finish(self, reason: str, outcome: str = "done") -> Command:
        turn = (self.bus + self.out.sent)[int(self.state.get("turn_start") or 0) :]
        answer = final_answer(turn)
        user = next((m for m in self.bus if m.from_ == "user"), None)
        self.decide("FINISH", "", reason, "supervisor")
        self.out.send("user", "result", {"text": answer}, in_reply_to=user.id if user else None)
        prefix = "Finished" if outcome == "done" else "Stopped"
        why = f"{prefix}: {reason}"
        if outcome == "done" and (missing := missing_answer(turn)):
            outcome, why = "failed", missing  # never claim an answer nobody wrote
        return self.command(END, final_answer=answer, outcome=outcome, outcome_reason=why)


def supervisor_ask(
    view: dict,
    prompts: PromptSet,
    pending: list[Message],
    max_rounds: int,
    now: float,
    enabled: list[str],
) -> JsonAsk:
    """The supervisor's routing request for ``view`` (the state with this turn's own
    changes): the node asks it; the playground too."""
    names = decision_names(view)
    return JsonAsk(
        supervisor_prompt(view, prompts, pending, max_rounds, now),
        SupervisorDecision,
        label="The supervisor",
        repair_prompt=repair_prompt(prompts, decision_example(view)),
        check=_check(enabled, names),
        enums={"next_agent": names},
        kind="decision",
        repair=lambda d: repair_decision(d, [*names, *enabled]),
    )


def supervisor_node(state: dict, deps: Deps) -> Command:
    turn = _Turn(state, deps)
    pending = inbox(state, "supervisor")
    turn.update["supervisor_consumed"] = [m.id for m in pending]

    # 1. Answers close their requests.
    for m in pending:
        if m.type in ANSWER_TYPES and m.in_reply_to:
            if m.in_reply_to in turn.outstanding:
                turn.outstanding.pop(m.in_reply_to)
            elif m.in_reply_to in turn.escalated:
                turn.update["notices"].append(
                    f"{m.from_} answered {m.in_reply_to} after it was escalated: kept on "
                    "the bus, not acted on."
                )

    # 2. A human's decision is carried out as it is.
    for m in pending:
        if m.from_ == "human" and m.type == "result":
            if command := _carry_out(turn, m):
                return command

    # 3. Requests past their timeout go to a human, each once.
    timeout = float(state.get("timeout_s") or deps.timeout_s)
    for mid in [mid for mid in turn.outstanding if mid in turn.escalated]:
        turn.outstanding.pop(mid)  # escalated once already (a fork can carry both): not again
        turn.update["notices"].append(f"{mid} was already escalated: not asked again.")
    while turn.outstanding:
        expired = [(mid, at) for mid, at in turn.outstanding.items() if turn.now - at > timeout]
        if expired:
            return _escalate(turn, *expired[0], timeout)
        # Still within their time and nothing else to do: wait for the earliest deadline.
        if pending:
            break
        wait = min(at for at in turn.outstanding.values()) + timeout - turn.now
        time.sleep(max(0.0, min(wait, timeout)) + 0.01)
        turn.now = time.time()

    # 4. The model routes.
    if turn.round >= deps.max_rounds:
        return turn.finish(
            f"the supervisor made {turn.round} decisions, its limit, without "
            "finishing; the answer is what the agents produced so far.",
            outcome="failed",
        )
    enabled = list(deps.enabled)
    # The prompt sees this turn's own changes too (a request a human just dropped).
    view = {
        **state,
        "outstanding": turn.outstanding,
        "dead_letters": {**(state.get("dead_letters") or {}), **turn.update["dead_letters"]},
    }
    try:
        reply = ask_json(
            deps.supervisor_model,
            supervisor_ask(view, deps.prompts, pending, deps.max_rounds, turn.now, enabled),
        )
    except ModelReplyError as exc:
        turn.update["messages"] = tag_messages(exc.replies, turn.round + 1, "supervisor")
        return turn.finish(f"the supervisor could not decide: {exc}", outcome="failed")
    decision: SupervisorDecision = reply.value
    turn.update["messages"] = tag_messages(reply.replies, turn.round + 1, "supervisor")
    turn.update["notices"] += reply.notices
    name = decision.next_agent.strip()
    if name.lower() in FINISH_WORDS:
        return turn.finish(decision.reason or "the supervisor answered FINISH.")
    task = decision.task.strip() or f"Do your part for: {state.get('user_query') or ''}"
    if deps.approvals.get(name) == "always":
        return turn.route_to_human(
            "approval",
            name,
            task,
            f"The design asks a human before every request to {name}"
            + (" (it has side effects)." if (spec := spec_of(name)) and spec.side_effects else "."),
        )
    return turn.send_request(name, task, decision.reason, "supervisor")


def _escalate(turn: _Turn, request_id: str, sent_at: float, timeout: float) -> Command:
    """Remove the request from the registry, mark it escalated, and ask a human."""
    turn.outstanding.pop(request_id, None)
    turn.escalated.add(request_id)
    request = next((m for m in turn.bus if m.id == request_id), None)
    agent = request.to if request else "?"
    task = request.payload.get("task", "") if request else ""
    waited = turn.now - sent_at
    reason = (
        f"{agent} did not answer request {request_id} within {timeout:g} s (waited {waited:.1f} s)."
    )
    turn.update["dead_letters"] = {
        request_id: {
            "message_id": request_id,
            "to": agent,
            "task": task,
            "sent_at": sent_at,
            "escalated_at": turn.now,
            "reason": reason,
            "resolution": "waiting for a human",
        }
    }
    turn.update["escalated"] = {request_id}
    return turn.route_to_human("escalation", agent, task, reason, about=request_id)


def _carry_out(turn: _Turn, m: Message) -> Command | None:
    """Apply a human's answer; a Command when it sends a request, None to go on routing."""
    p = m.payload
    action, agent, task = p.get("action"), p.get("agent", ""), p.get("task", "")
    about = p.get("message_id")
    who = p.get("by", "human")
    if about:
        resolution = {
            "retry": "retried",
            "reassign": f"reassigned to {agent}",
            "drop": "dropped",
        }.get(str(action), action)
        record = dict((turn.state.get("dead_letters") or {}).get(about) or {})
        turn.update["dead_letters"] = {
            about: {**record, "resolution": resolution, "decided_by": who, "decided_at": m.sent_at}
        }
    if action in ("send", "retry", "reassign"):
        if agent not in turn.deps.nodes or not is_worker(agent):
            turn.update["notices"].append(
                f"The human's decision names {agent!r}, which is not an enabled agent; "
                "the supervisor decides instead."
            )
            return None
        why = {
            "send": f"A human approved the request to {agent}.",
            "retry": f"A human asked to retry {about} with {agent}.",
            "reassign": f"A human reassigned {about} to {agent}.",
        }[action]
        extra = {"retry_of": about} if about else {}
        return turn.send_request(
            agent, task, (why + f" {p.get('reason') or ''}").strip(), who, extra
        )
    turn.decide(
        "none",
        "",
        f"A human {'dropped' if action == 'drop' else 'declined'} the "
        f"request to {agent}: {p.get('reason') or 'no reason given'}",
        who,
    )
    return None
