"""The field's human-in-the-loop shapes, as LangChain and agent-inbox define them, and how a
Stepwise question and decision map onto them.

**LangChain's standard** (``langchain.agents.middleware.human_in_the_loop``, langchain
1.5; docs.langchain.com/oss/python/langchain/human-in-the-loop). The interrupt's value is a
``HITLRequest``::

    {"action_requests": [{"name": str, "args": dict, "description": str (optional)}],
     "review_configs": [{"action_name": str,
                         "allowed_decisions": ["approve" | "edit" | "reject" | "respond"],
                         "args_schema": dict (optional)}]}

and it is resumed with a ``HITLResponse``, one decision per action request, in order::

    {"decisions": [{"type": "approve"}
                   | {"type": "edit", "edited_action": {"name": str, "args": dict}}
                   | {"type": "reject", "message": str (optional)}
                   | {"type": "respond", "message": str}]}

("Use ``respond`` only when the human is acting as the tool, such as answering an ask_user
prompt. Do not use respond to deny side-effecting tools, because its message is treated as
a successful tool result", the docs say.)

**agent-inbox's older shape** (``langgraph.prebuilt.interrupt``, deprecated since
LangGraph 1.0; langchain-ai/agent-inbox's README). The interrupt's value is a
``HumanInterrupt`` (often a list of one)::

    {"action_request": {"action": str, "args": dict},
     "config": {"allow_ignore": bool, "allow_respond": bool, "allow_edit": bool,
                "allow_accept": bool},
     "description": str | None}

resumed with a ``HumanResponse`` (a list of one, as ``interrupt([request])[0]`` reads it)::

    {"type": "accept" | "ignore" | "response" | "edit",
     "args": None | str | {"action": str, "args": dict}}

Nothing here imports Streamlit; the Server page and the approval gate both read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STANDARD_DECISIONS = ("approve", "edit", "reject", "respond")


@dataclass
class Asked:
    """One action a foreign graph's interrupt asks about, whatever its shape: what the
    Server page shows and answers."""

    shape: str  # "hitl" (LangChain's standard) or "agent_inbox" (HumanInterrupt)
    name: str
    args: dict
    description: str
    allowed: list[str] = field(default_factory=list)  # standard decision types
    listed: bool = False  # agent-inbox: the request came as a list of one


def asked_actions(value: Any) -> list[Asked]:
    """The actions an interrupt's value asks about, in order; [] when it is in neither shape
    (a question of the graph's own, answered with free JSON)."""
    if isinstance(value, dict) and isinstance(value.get("action_requests"), list):
        configs = {
            c.get("action_name"): c
            for c in value.get("review_configs") or []
            if isinstance(c, dict)
        }
        found = []
        for action in value["action_requests"]:
            if not isinstance(action, dict) or not isinstance(action.get("args") or {}, dict):
                return []  # not the standard after all: answered as JSON
            name = str(action.get("name") or "")
            allowed = (configs.get(name) or {}).get("allowed_decisions")
            found.append(
                Asked(
                    "hitl",
                    name,
                    dict(action.get("args") or {}),
                    str(action.get("description") or ""),
                    [
                        d
                        for d in (allowed or ["approve", "edit", "reject"])
                        if d in STANDARD_DECISIONS
                    ],
                )
            )
        return found
    listed = isinstance(value, list) and len(value) == 1
    inbox = value[0] if listed else value
    if (
        isinstance(inbox, dict)
        and isinstance(inbox.get("action_request"), dict)
        and isinstance(inbox["action_request"].get("args") or {}, dict)
    ):
        config = inbox.get("config") or {}
        allowed = [
            decision
            for decision, key in (
                ("approve", "allow_accept"),
                ("edit", "allow_edit"),
                ("respond", "allow_respond"),
                ("reject", "allow_ignore"),
            )
            if config.get(key)
        ]
        request = inbox["action_request"]
        return [
            Asked(
                "agent_inbox",
                str(request.get("action") or ""),
                dict(request.get("args") or {}),
                str(inbox.get("description") or ""),
                allowed,
                listed,
            )
        ]
    return []


def decision_for(asked: Asked, kind: str, args: dict | None = None, message: str = "") -> dict:
    """One standard decision (``approve``, ``edit`` with ``args``, ``reject`` with an
    optional ``message``, ``respond`` with ``message``) on ``asked``, in its own shape."""
    if kind not in asked.allowed:
        raise ValueError(f"This request does not allow {kind!r} (it allows {asked.allowed}).")
    if kind == "respond" and not message.strip():
        raise ValueError("Write the response first.")
    if asked.shape == "agent_inbox":  # HumanResponse: accept / edit / response / ignore
        if kind == "approve":
            return {"type": "accept", "args": None}
        if kind == "edit":
            return {"type": "edit", "args": {"action": asked.name, "args": dict(args or {})}}
        if kind == "respond":
            return {"type": "response", "args": message}
        return {"type": "ignore", "args": None}
    if kind == "edit":
        return {"type": "edit", "edited_action": {"name": asked.name, "args": dict(args or {})}}
    if kind in ("reject", "respond") and message.strip():
        return {"type": kind, "message": message}
    return {"type": kind}


def resume_for(actions: list[Asked], decisions: list[dict]) -> Any:
    """The resume value answering ``actions`` with ``decisions`` (one each, in order)."""
    if len(decisions) != len(actions):
        raise ValueError(f"{len(actions)} action(s) asked, {len(decisions)} decided.")
    if actions and actions[0].shape == "agent_inbox":
        return decisions if actions[0].listed else decisions[0]
    return {"decisions": decisions}
