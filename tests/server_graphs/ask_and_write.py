"""A small graph Stepwise did not define, for the Server page's tests.

Two nodes and none of Stepwise's plan fields: ``ask`` stops on
``interrupt({"question": ...})`` and ``write`` puts the answer into state. Served by
``langgraph dev`` from this folder (tests/server_graphs/langgraph.json).
"""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    topic: str
    answer: str
    note: str


def ask(state: State) -> dict:
    """Stops the run until a person answers the question."""
    answer = interrupt({"question": f"What should be said about {state.get('topic', 'it')}?"})
    return {"answer": answer}


def write(state: State) -> dict:
    """Writes the answer into a note, so the state shows it was used."""
    return {"note": f"Noted: {state.get('answer')}"}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_node("write", write)
builder.add_edge(START, "ask")
builder.add_edge("ask", "write")
builder.add_edge("write", END)
graph = builder.compile()
