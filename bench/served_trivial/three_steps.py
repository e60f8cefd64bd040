"""Three nodes that do nothing but count: the trivial graph ``bench/server_overhead.py``
serves beside Stepwise's to tell LangGraph Server's own per-run cost from ours (no model,
no factory, no config)."""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    question: str
    steps: int


def step(state: State) -> dict:
    return {"steps": state.get("steps", 0) + 1}


builder = StateGraph(State)
builder.add_node("first", step)
builder.add_node("second", step)
builder.add_node("third", step)
builder.add_edge(START, "first")
builder.add_edge("first", "second")
builder.add_edge("second", "third")
builder.add_edge("third", END)
graph = builder.compile()
