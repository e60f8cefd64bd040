"""Graphs Stepwise did not define that ask to review an email with every decision allowed.

``graph`` asks like LangChain's human-in-the-loop middleware (``HITLRequest``: approve /
edit / reject / respond) and is resumed with ``{"decisions": [...]}``; ``inbox_graph``
asks in agent-inbox's older shape (``[HumanInterrupt]``: accept / edit / response /
ignore) and is resumed with ``[HumanResponse]``. ``send`` records what was decided and the
email as it went (the edited one, after an edit)."""

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    email: dict
    decision: str
    message: str
    sent: dict | None


def _email(state: State) -> dict:
    return state.get("email") or {"to": "ann@example.org", "subject": "Hi", "urgent": False}


def review(state: State) -> dict:
    email = _email(state)
    answer = interrupt(
        {
            "action_requests": [{"name": "send_email", "args": email, "description": "Send it?"}],
            "review_configs": [
                {
                    "action_name": "send_email",
                    "allowed_decisions": ["approve", "edit", "reject", "respond"],
                }
            ],
        }
    )
    [decision] = answer["decisions"]
    kind = decision["type"]
    sent: Any = None
    if kind == "approve":
        sent = email
    elif kind == "edit":
        sent = decision["edited_action"]["args"]
    return {"decision": kind, "message": decision.get("message", ""), "sent": sent}


def inbox_review(state: State) -> dict:
    email = _email(state)
    [response] = interrupt(
        [
            {
                "action_request": {"action": "send_email", "args": email},
                "config": {
                    "allow_ignore": True,
                    "allow_respond": True,
                    "allow_edit": True,
                    "allow_accept": True,
                },
                "description": "Send it?",
            }
        ]
    )
    kind, args = response["type"], response.get("args")
    sent = email if kind == "accept" else args["args"] if kind == "edit" else None
    return {"decision": kind, "message": args if kind == "response" else "", "sent": sent}


def _build(node) -> Any:
    builder = StateGraph(State)
    builder.add_node("review", node)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder.compile()


graph = _build(review)
inbox_graph = _build(inbox_review)
