"""A graph Stepwise did not define that waits on two questions at once: ``ask_a`` and
``ask_b`` run in parallel and each calls ``interrupt``; each answer goes to its own."""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    a: str
    b: str


def ask_a(state: State) -> dict:
    return {"a": interrupt("First name?")}


def ask_b(state: State) -> dict:
    return {"b": interrupt("Last name?")}


builder = StateGraph(State)
builder.add_node("ask_a", ask_a)
builder.add_node("ask_b", ask_b)
builder.add_edge(START, "ask_a")
builder.add_edge(START, "ask_b")
builder.add_edge(["ask_a", "ask_b"], END)
graph = builder.compile()
