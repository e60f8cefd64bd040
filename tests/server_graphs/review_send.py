"""A graph Stepwise did not define that asks like LangChain's human-in-the-loop middleware:
``interrupt`` with a ``HITLRequest`` (``action_requests`` + ``review_configs``), resumed with
``{"decisions": [{"type": "approve" | "reject", ...}]}``. ``send`` records the decision."""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    to: str
    decision: str
    reason: str
    sent: bool


def review(state: State) -> dict:
    """Asks a person to approve or reject sending the email."""
    answer = interrupt(
        {
            "action_requests": [
                {"name": "send_email", "args": {"to": state.get("to", "")}, "description": "Send?"}
            ],
            "review_configs": [
                {"action_name": "send_email", "allowed_decisions": ["approve", "reject"]}
            ],
        }
    )
    [decision] = answer["decisions"]
    return {"decision": decision["type"], "reason": decision.get("message", "")}


def send(state: State) -> dict:
    """Sends (pretends to) only what was approved."""
    return {"sent": state.get("decision") == "approve"}


builder = StateGraph(State)
builder.add_node("review", review)
builder.add_node("send", send)
builder.add_edge(START, "review")
builder.add_edge("review", "send")
builder.add_edge("send", END)
graph = builder.compile()
