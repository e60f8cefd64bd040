"""A team's HTTP gate, the ``call_api`` node: the only place a team's real HTTP call is
sent.

request_team's workers make real HTTP calls, which have side effects: a worker's
model proposes the call (a tool call, not carried out), and the ``call_api`` node
checks it against the allowlist, asks a human with ``interrupt()`` (the exact method,
URL and body), and only then sends it. The call is recorded in the side-effect ledger
under the run and the subtask, as ``sending`` before it goes out and ``sent`` once its
answer is in, with an ``Idempotency-Key`` header derived from that key: a replay, a
retry or a resumed run never sends a sent call twice, and a call a crash left in
``sending`` (it may or may not have reached the API) is not resent on its own: a human
is asked, told that the earlier attempt's outcome is unknown.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.types import Command

from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.team_steps import USELESS, team_step
from graph.kernel.approval import HumanDecision, ask_human
from graph.kernel.messages import tag_messages
from graph.tools.effects import Effect, key_digest
from graph.tools.team_api import (
    OUTCOME_UNKNOWN,
    ApiCall,
    RefusedCall,
    api_base,
    check_allowed,
    send,
)


def _parse_edited(text: str, original: ApiCall) -> ApiCall:
    """A call as a human edited it: "METHOD URL [JSON body]"."""
    parts = text.strip().split(None, 2)
    if len(parts) < 2:
        raise ValueError("write the call as: METHOD URL [JSON body]")
    body = original.body
    if len(parts) == 3:
        body = json.loads(parts[2])
    return ApiCall(parts[0].upper(), parts[1], body)


def call_key(state: dict, call: ApiCall) -> str:
    digest = hashlib.sha1(call.describe().encode()).hexdigest()[:12]
    return (
        f"teams/{state.get('current_call_scope') or ''}/{state.get('current_subtask_id')}/{digest}"
    )


def call_api_node(state: dict, deps: Deps) -> Command:
    proposed = dict(state.get("proposed_call") or {})
    worker = proposed.get("worker", "?")
    call = ApiCall(proposed.get("method", "GET"), proposed.get("url", ""), proposed.get("body"))
    step = int(state.get("current_step") or 0)
    base = api_base(deps.settings)
    update: dict = {"proposed_call": None, "approvals": [], "team_steps": [], "messages": []}

    def report(text: str, ok: bool) -> Command:
        update["reports"] = [
            {
                "worker": worker,
                "task": state.get("worker_task"),
                "text": text,
                "ok": ok,
                "call": call.as_dict(),
            }
        ]
        update["team_steps"].append(
            team_step(state, "call_api", "call", text, ok=ok, call=call.describe())
        )
        # the answer to the worker's proposed tool call: what the call returned
        update["messages"].append(
            tag_messages(
                [
                    ToolMessage(
                        content=text,
                        tool_call_id=proposed.get("call_id") or "",
                        name=proposed.get("tool") or "http",
                    )
                ],
                step,
                worker,
            )[0]
        )
        return Command(update={k: v for k, v in update.items() if v != []}, goto="supervisor")

    def ask(reason: str) -> HumanDecision | Command:
        return ask_human(
            {
                "kind": "approval",
                "step": step,
                "agent": worker,
                "team": state.get("current_team"),
                "subtask_id": state.get("current_subtask_id"),
                "query": call.describe(),
                "call": call.as_dict(),
                "asked_at": time.time(),
                "reason": reason,
            },
            node="call_api",
        )

    def recorded(decision: HumanDecision, **extra: Any) -> None:
        update["approvals"].append(
            {
                "kind": "approval",
                "step": step,
                "agent": worker,
                "subtask_id": state.get("current_subtask_id"),
                "query": call.describe(),
                **decision.model_dump(),
                "decided_at": time.time(),
                **extra,
            }
        )

    def already_sent(found: Effect) -> Command:
        return report(
            f"{found.result} (already sent for this subtask: not repeated)",
            not found.result.startswith("ERROR"),
        )

    try:
        call = ApiCall(call.method, check_allowed(call, base), call.body)
    except RefusedCall as exc:
        return report(str(exc), False)
    found = deps.ledger.entry(call_key(state, call))
    if found is not None and found.finished:
        return already_sent(found)
    if found is not None:  # "sending": a crash came between sending and its answer
        decision = ask(
            f"An earlier attempt to send {call.method} {call.url} was cut off (the app "
            "stopped) before its answer was recorded: the outcome of that attempt is "
            "unknown, and the API may already have acted on it. Approve to send it again "
            "(with the same Idempotency-Key, so an API that honours it applies it once), "
            "or reject it to leave it unsent."
        )
        if isinstance(decision, Command):  # not a decision: the same question, asked again
            return decision
        recorded(decision, outcome_unknown=True)
        if decision.decision != "approve":
            return report(
                f"{USELESS}: the earlier attempt at {call.describe()} was cut off and its "
                f"outcome is unknown; it was not sent again ({decision.decision} by "
                f"{decision.by}: {decision.reason or 'no reason given'}).",
                False,
            )
        update["team_steps"].append(
            team_step(state, "call_api", "approval", f"resend approved by {decision.by}")
        )
    elif deps.approvals.get(worker, "always") != "never":
        decision = ask(
            f"{worker} is about to send a real HTTP request with side effects: "
            f"{call.method} {call.url}. Approve to send it, edit the call, or reject it."
        )
        if isinstance(decision, Command):  # not a decision: the same question, asked again
            return decision
        recorded(decision)
        who = {
            "timeout": "The approval timed out; the default applied",
            "experiment": "The experiment, deciding automatically,",
        }.get(decision.by, "A human")
        if decision.decision in ("reject", "skip"):
            update["team_steps"].append(
                team_step(state, "call_api", "approval", f"{decision.decision}: {decision.reason}")
            )
            return report(
                f"{USELESS}: {who} declined the call {call.describe()} "
                f"({decision.decision}: {decision.reason or 'no reason given'}); "
                "nothing was sent.",
                False,
            )
        if decision.decision == "edit" and decision.query.strip():
            try:
                edited = _parse_edited(decision.query, call)
                call = ApiCall(edited.method, check_allowed(edited, base), edited.body)
            except RefusedCall as exc:
                return report(str(exc), False)
            except ValueError as exc:
                return report(
                    f"{USELESS}: the edited call is unusable ({exc}); nothing was sent.", False
                )
            found = deps.ledger.entry(call_key(state, call))
            if found is not None and found.finished:
                return already_sent(found)
        update["team_steps"].append(
            team_step(
                state,
                "call_api",
                "approval",
                f"{decision.decision} by {decision.by}: {call.describe()}",
            )
        )
    # Intent first: killed from here until the answer is recorded, the call stays
    # "sending", and a resumed run asks a human instead of sending it again.
    key = call_key(state, call)
    deps.ledger.begin(key, "sending", call.describe())
    result = send(call, base, deps.settings.teams_http_timeout_s, idempotency_key=key_digest(key))
    if not result.startswith("ERROR"):
        deps.ledger.finish(key, result, "sent")
    elif OUTCOME_UNKNOWN not in result:
        deps.ledger.forget(key)  # a failed call may be tried again; a sent one never
    # else: sent with no answer; it stays "sending", so trying it again asks a human
    return report(result, not result.startswith("ERROR"))
