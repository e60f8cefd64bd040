"""Drawing a compiled graph as Graphviz DOT, from LangGraph's own ``get_graph()``.

Built with the ``graphviz`` Python package, which only writes DOT text: the browser
(``st.graphviz_chart``) or any viewer renders it, so no Graphviz binary is needed.
Conditional routes (``Command(goto=...)``) are dashed; edge colours say which
routing pattern an agent follows; a run's current node and taken edges can be marked.
"""

from __future__ import annotations

from typing import Iterable

import graphviz

from graph.plan_execute.agents import AGENTS

PATTERN_STYLE = {
    "executor": {"color": "#1f77b4", "label": "back"},  # back to the executor
    "chain": {"color": "#2ca02c", "label": "chain", "penwidth": "2"},  # fixed chain
    "end": {"color": "#d62728", "label": "end"},  # ends the run
}
TERMINAL = {"__start__": "START", "__end__": "END"}


def _pattern(source: str, target: str) -> str | None:
    spec = AGENTS.get(source)
    if spec is None:
        return None
    if target == "__end__":
        return "end"
    if spec.routing == "chain" and target == spec.chain_to:
        return "chain"
    return "executor" if target == "executor" else None


def to_dot(compiled, *, active: str | None = None,
           taken: Iterable[tuple[str, str]] = ()) -> str:
    """DOT for a compiled graph. ``active`` is highlighted; ``taken`` edges drawn bold."""
    drawn = compiled.get_graph()
    taken = set(taken)
    dot = graphviz.Digraph(name=compiled.name or "graph")
    dot.attr(rankdir="TB", fontname="Helvetica")
    dot.attr("node", shape="box", style="rounded,filled", fillcolor="#f7f7f7",
             fontname="Helvetica")
    for node_id in drawn.nodes:
        attrs = {}
        if node_id in TERMINAL:
            attrs = {"shape": "oval", "fillcolor": "#e8e8e8", "label": TERMINAL[node_id]}
        elif node_id in ("planner", "executor", "supervisor"):  # the hubs
            attrs = {"fillcolor": "#fff3c4"}
        if node_id == active:
            attrs.update({"fillcolor": "#ffd54f", "penwidth": "3", "color": "#e65100"})
        dot.node(node_id, **attrs)
    for edge in drawn.edges:
        attrs: dict[str, str] = {}
        if edge.conditional:
            attrs["style"] = "dashed"
        if pattern := _pattern(edge.source, edge.target):
            attrs.update(PATTERN_STYLE[pattern])
        if (edge.source, edge.target) in taken:
            attrs.update({"style": "bold", "penwidth": "3", "color": "#e65100"})
        dot.edge(edge.source, edge.target, **attrs)
    return dot.source


def taken_edges(nodes_run: Iterable[str]) -> list[tuple[str, str]]:
    """The edges a run took, from the order its top-level nodes ran."""
    path = ["__start__", *nodes_run]
    return list(dict.fromkeys(zip(path, path[1:])))
