"""The approval gate every system uses: the run pauses at ``interrupt()`` (persisted by the
checkpointer, so it survives a restart) until a person, or the design's timeout, decides.

**What it asks.** The interrupt's value is LangChain's standard ``HITLRequest`` (the shape
is quoted in ``graph.kernel.hitl``): one ``action_requests`` entry (``name``: the agent, or
``http_request`` for a team's HTTP call, the tool's name for a gated tool's call; ``args``:
what an edit may change, ``{"query": ...}``, a bus escalation's ``{"agent", "query"}``, the
call's ``{"method", "url", "body"}``, or the tool's own arguments; ``description``: why it asks) and its ``review_configs`` entry allowing
``approve``, ``edit`` and ``reject``. ``respond`` is not allowed: every Stepwise gate
guards a step with effects, and LangChain's docs keep ``respond`` for "ask user" tools,
never for denying a side-effecting one. Stepwise's own fields stay alongside as extension
keys (``kind``, ``step``, ``agent``, ``query``, ``reason``, ``asked_at``... which the
Approvals inbox and the Run page read), with ``stepwise_decisions`` naming the extensions
this question also takes.

**How it is answered.** Either LangChain's ``{"decisions": [decision]}`` (one decision:
Stepwise asks about one action at a time), or Stepwise's own ``{"decision", "query",
"reason", "by"}`` (``HumanDecision``; what the app, the CLI and runs made before this
change send). The standard decisions map onto Stepwise's:

- ``{"type": "approve"}`` -> ``approve``.
- ``{"type": "edit", "edited_action": {"name", "args"}}`` -> ``edit``, its query read from
  the edited args: ``args["query"]``; a bus escalation whose ``args["agent"]`` names another
  agent -> reassign to it; a team's call -> ``"METHOD URL [JSON body]"`` from the args; a
  gated tool's call (``tool_call`` in the request) -> the edited arguments as JSON text.
- ``{"type": "reject", "message": m}`` -> ``reject`` with reason ``m``.
- ``respond`` is refused (not allowed, see above): the node asks again.

Stepwise's richer decisions are documented extensions, sent either way (as ``{"decision":
"skip"}`` or as ``{"decisions": [{"type": "skip", "message": ...}]}``); a client that knows
only the standard reaches the nearest one with a standard decision:

- ``skip`` (go on without the step) degrades to ``reject``: in plan_execute a reject
  replans the step, and moves on without it at the replan cap; in supervisor_bus and
  hierarchical_teams a reject drops the request exactly as skip does.
- ``retry`` (an escalation: one more try) degrades to ``approve`` in supervisor_bus (the
  same task to the same agent again) and to ``reject`` in plan_execute (a replan).
- reassign (supervisor_bus) is an ``edit`` whose ``args["agent"]`` names another agent.

Agent-inbox's older ``HumanResponse`` (``{"type": "accept" | "edit" | "ignore" |
"response", "args": ...}``, alone or a list of one, as older agent-chat-ui sends it) is
taken too: ``accept`` -> approve, ``edit`` (``args.args``) -> edit, ``ignore`` -> skip,
``response`` (text feedback) -> reject with the text as its reason.

Any decision may carry ``by`` (who decided; "human" when absent). A resume value that is
not a decision, or a decision this question does not allow, never crashes the run and is
never taken for one: the node asks again, with a notice. Runs that began waiting in the
older shape (Stepwise's dict alone) resume with either form: the node asks anew in the
new shape and the pending resume value answers it.

An experiment may decide its runs' approvals itself, so none waits for a person: the run
is given the side-effecting agents under ``AUTOMATIC`` in its LangGraph config, and the
gate answers at once (read-only steps approved; side-effecting ones, gated tools' calls
and escalations, skipped), recording who decided and why like any decision.
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.config import get_config
from langgraph.types import Command, interrupt
from pydantic import BaseModel, Field, ValidationError

DECISIONS = ("approve", "edit", "reject", "skip", "retry")
ALLOWED = ["approve", "edit", "reject"]  # the standard decisions every Stepwise gate takes
# agent-inbox's HumanResponse types -> the decision each is taken for (edit stays edit)
INBOX_TYPES = {"accept": "approve", "edit": "edit", "ignore": "skip", "response": "reject"}


class HumanDecision(BaseModel):
    decision: str = Field(pattern="^(" + "|".join(DECISIONS) + ")$")
    query: str = ""
    reason: str = ""
    # "human" (single-user, the CLI), a signed-in person's e-mail, "timeout" when the
    # default was applied, or "experiment"
    by: str = "human"


# Config key (``configurable``) naming the side-effecting agents when an experiment
# decides its runs' approvals; absent, a person (or the design's timeout) decides.
AUTOMATIC = "stepwise_automatic_approvals"
NOT_PERFORMED = "not performed (experiment decides automatically)"
APPROVED = "read-only step approved (experiment decides automatically)"
MOVED_ON = "moved on without a person (experiment decides automatically)"


def decided_by_words(by: str) -> str:
    """Who decided, at the start of the line a run records for a decision."""
    if by == "timeout":
        return "The approval timed out; applied the default"
    if by == "experiment":
        return "The experiment decided automatically"
    return "Human" if by in ("human", "") else by  # a signed-in person: their e-mail


def automatic_decision(request: dict) -> HumanDecision | None:
    """The experiment's own answer to ``request``, or None when a person decides."""
    try:
        side_effecting = (get_config().get("configurable") or {}).get(AUTOMATIC)
    except RuntimeError:  # not inside a run
        return None
    if side_effecting is None:
        return None
    if request.get("kind") == "escalation":
        return HumanDecision(decision="skip", reason=MOVED_ON, by="experiment")
    if request.get("agent") in side_effecting or isinstance(request.get("tool_call"), dict):
        # a gated tool call is asked about only because it has side effects
        return HumanDecision(decision="skip", reason=NOT_PERFORMED, by="experiment")
    return HumanDecision(decision="approve", reason=APPROVED, by="experiment")


def standard_request(request: dict, args: dict | None = None) -> dict:
    """``request`` (Stepwise's fields) as a LangChain ``HITLRequest``, its own fields kept
    alongside. ``args``: what an edit may change (``{"query": request["query"]}`` unless
    given; a team's HTTP call when the request carries ``call``)."""
    call, tool_call = request.get("call"), request.get("tool_call")
    name = "http_request" if isinstance(call, dict) else str(request.get("agent") or "step")
    if isinstance(tool_call, dict):  # a gated tool's call: the action is the tool itself
        name = str(tool_call.get("tool") or name)
        if args is None:
            args = dict(tool_call.get("args") or {})
    if args is None:
        args = dict(call) if isinstance(call, dict) else {"query": request.get("query", "")}
    kind = request.get("kind") or "approval"
    described = f"{kind} for {request.get('agent') or name}"
    if request.get("step") is not None:
        described += f" (step {request['step']})"
    if request.get("reason"):
        described += f": {request['reason']}"
    return {
        **request,
        "action_requests": [{"name": name, "args": args, "description": described}],
        "review_configs": [{"action_name": name, "allowed_decisions": list(ALLOWED)}],
        "stepwise_decisions": ["skip", "retry"] if kind == "escalation" else ["skip"],
    }


def _edited_query(request: dict, args: Any) -> str:
    """An edit's edited args as the query a Stepwise decision carries."""
    if not isinstance(args, dict):
        raise ValueError("an edit's edited_action.args must be an object")
    if isinstance(request.get("tool_call"), dict):  # the tool's arguments, as JSON text
        return json.dumps(args, ensure_ascii=False)
    if isinstance(request.get("call"), dict):
        text = f"{args.get('method') or ''} {args.get('url') or ''}".strip()
        if args.get("body") is not None:
            text += " " + json.dumps(args["body"], ensure_ascii=False)
        return text
    agent = args.get("agent")
    if agent and agent != request.get("agent"):
        return str(agent)  # a bus escalation reassigned
    return str(args.get("query") or "")


def _inbox_response(answer: Any) -> dict | None:
    """Agent-inbox's ``HumanResponse`` (alone or a list of one, as older agent-chat-ui and
    deep-agents-ui send it) as a standard decision; None when ``answer`` is not one."""
    one = answer[0] if isinstance(answer, list) and len(answer) == 1 else answer
    if not isinstance(one, dict) or one.get("type") not in INBOX_TYPES or "decision" in one:
        return None
    args = one.get("args")
    if one["type"] == "edit":
        edited = args.get("args") if isinstance(args, dict) else None
        return {"type": "edit", "edited_action": {"args": edited}}
    message = args if isinstance(args, str) else ""
    return {"type": INBOX_TYPES[one["type"]], "message": message}


def decision_of(answer: Any, request: dict) -> HumanDecision:
    """The decision ``answer`` (a standard ``HITLResponse``, agent-inbox's older
    ``HumanResponse``, or Stepwise's own) carries; ValueError (or ValidationError) when
    it carries none this question allows."""
    if (inbox := _inbox_response(answer)) is not None:
        answer = {"decisions": [inbox]}
    if not (isinstance(answer, dict) and "decisions" in answer):
        return HumanDecision.model_validate(answer)
    decisions = answer["decisions"]
    if not isinstance(decisions, list) or len(decisions) != 1:
        raise ValueError("one decision is asked for (one action was requested)")
    given = decisions[0] if isinstance(decisions[0], dict) else {}
    kind, message = given.get("type"), str(given.get("message") or "")
    by = str(given.get("by") or "human")
    if kind == "approve":
        return HumanDecision(decision="approve", reason=message, by=by)
    if kind == "edit":
        edited = given.get("edited_action")
        query = _edited_query(request, edited.get("args") if isinstance(edited, dict) else None)
        return HumanDecision(decision="edit", query=query, reason=message, by=by)
    if kind == "reject" or kind in (request.get("stepwise_decisions") or ["skip", "retry"]):
        return HumanDecision(decision=str(kind), reason=message, by=by)
    raise ValueError(f"the decision {kind!r} is not allowed here (allowed: {ALLOWED})")


def ask_human(request: dict, node: str, args: dict | None = None) -> HumanDecision | Command:
    """Pause with ``request`` (what the Approvals page lists), as a standard HITL request
    whose edit changes ``args`` (see ``standard_request``), until a decision comes in.
    A malformed answer returns a Command that runs ``node`` (the asking node) again, so
    the same question is asked anew, with a notice. A run whose experiment decides
    its approvals gets the experiment's answer without pausing."""
    if (decided := automatic_decision(request)) is not None:
        return decided
    asked = standard_request(request, args)
    answer = interrupt(asked)
    try:
        return decision_of(answer, asked)
    except ValidationError:
        notice = f"Unusable decision {answer!r}; asking again."
    except ValueError as exc:
        notice = f"Unusable decision {answer!r} ({exc}); asking again."
    return Command(update={"notices": [notice]}, goto=node)
