"""Drawing a compiled graph as Graphviz DOT, from LangGraph's own ``get_graph()``.

Built with the ``graphviz`` Python package, which only writes DOT text: the browser
(``st.graphviz_chart``) or any viewer renders it, so no Graphviz binary is needed.
Conditional routes (``Command(goto=...)``) are dashed; edge colours say which
routing pattern an agent follows; a run's current node and taken edges can be marked.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

import graphviz

from graph.kernel.hooks import GUARDRAIL
from graph.kernel.system import System

TERMINAL = {"__start__": "START", "__end__": "END"}
# LangGraph's own node error handler (present when a design has a fallback hook): not a
# node a user designs, so it is not drawn
HIDDEN = {"__default_error_handler__"}
# Labels in points: 13 pt is 17.3 px, a little above the page's 16 px body text, at the
# drawing's actual size; the page scales a drawing wider than its column down to fit
# (never below 10 px labels) and says so.
LABEL_PT = "13"
# Agents a hub routes to are stacked this many to a row, so the drawing grows downwards
# with the agent count and fits a half-width column at 1280 px.
SPOKES_PER_ROW = 2


def node_id(drawn_id: str) -> str:
    """A DOT-safe id: ``team:worker`` (LangGraph's xray id of a subgraph's node) would be
    read as a node and a port, so it becomes ``team__worker``."""
    return drawn_id.replace(":", "__")


def _short(drawn_id: str) -> str:
    inner = drawn_id.split(":", 1)[1]
    return TERMINAL.get(inner, inner).lower() if inner in TERMINAL else inner


class Drawable(Protocol):
    """What ``to_dot`` reads of a graph: a compiled one, or a LangGraph Server's drawing."""

    @property
    def name(self) -> str: ...

    def get_graph(self, *, xray: int | bool = ...) -> Any: ...


def to_dot(
    compiled: Drawable,
    system: System | None = None,
    *,
    active: str | None = None,
    taken: Iterable[tuple[str, str]] = (),
    active_note: str = "running",
) -> str:
    """DOT for a compiled graph. ``system`` styles its own nodes (hubs, gates) and edges
    (routing patterns); ``active`` is highlighted by more than colour (a double thick
    border and ``active_note``, e.g. "running" or "next", under its name); ``taken``
    edges drawn bold. A node that is
    itself a compiled graph (a team) is drawn as a cluster of its own nodes;
    ``active``/``taken`` name it by its top-level name, and a node inside it as
    ``team:node`` (its box is then marked too)."""
    drawn = compiled.get_graph(xray=1)
    clusters: dict[str, list[str]] = {}
    for node_id_ in drawn.nodes:
        if ":" in node_id_:
            clusters.setdefault(node_id_.split(":", 1)[0], []).append(node_id_)
    drawn_edges = {(edge.source, edge.target) for edge in drawn.edges}
    mapped = [
        (f"{a}:__end__" if a in clusters else a, f"{b}:__start__" if b in clusters else b)
        for a, b in taken
    ]
    # only what is drawn: the graph of a sub-agent a node calls itself is not
    walked = [edge for edge in mapped if edge in drawn_edges]
    taken, just_taken = set(walked), (walked[-1] if walked else None)
    dot = graphviz.Digraph(name=compiled.name or "graph")
    dot.attr(rankdir="TB", fontname="Helvetica", fontsize=LABEL_PT, nodesep="0.2", ranksep="0.3")
    dot.attr(
        "node",
        shape="box",
        style="rounded,filled",
        fillcolor="#f7f7f7",
        fontname="Helvetica",
        fontsize=LABEL_PT,
        margin="0.08,0.04",
        height="0.3",
    )

    def node_attrs(drawn_id: str) -> dict:
        attrs = {}
        inner = drawn_id.split(":", 1)[-1]
        if inner in TERMINAL:
            attrs = (
                {"shape": "point", "width": "0.12", "fillcolor": "#9e9e9e"}
                if ":" in drawn_id
                else {"shape": "oval", "fillcolor": "#e8e8e8", "label": TERMINAL[inner]}
            )
        elif drawn_id == GUARDRAIL:  # checks every user message first
            attrs = {"fillcolor": "#e0f2f1", "shape": "octagon"}
        elif system is not None:
            attrs = dict(system.shape.node_style(drawn_id))
        if inner not in TERMINAL:
            attrs["label"] = _wrapped(_short(drawn_id) if ":" in drawn_id else drawn_id)
        if drawn_id == active:
            name = attrs.get("label") or drawn_id.split(":", 1)[-1]
            attrs.update(
                {
                    "fillcolor": "#ffd54f",
                    "penwidth": "3",
                    "color": "#e65100",
                    "peripheries": "2",
                    "label": f"{name}\n▶ {active_note}" if active_note else name,
                }
            )
        return attrs

    for node_id_ in drawn.nodes:
        if ":" not in node_id_ and node_id_ not in HIDDEN:
            dot.node(node_id(node_id_), **node_attrs(node_id_))
    for team, members in clusters.items():
        with dot.subgraph(name=f"cluster_{team}") as cluster:
            style = (
                {"color": "#e65100", "penwidth": "3"}
                if active is not None and active.split(":", 1)[0] == team
                else {"color": "#90a4ae"}
            )
            cluster.attr(label=team, style="rounded,dashed", fontname="Helvetica", **style)
            for member in members:
                cluster.node(node_id(member), **node_attrs(member))
    for edge in drawn.edges:
        if {edge.source, edge.target} & HIDDEN:
            continue
        attrs: dict[str, str] = {}
        if edge.conditional:
            attrs["style"] = "dashed"
        if system is not None:
            attrs.update(system.shape.edge_style(edge.source, edge.target))
        if (edge.source, edge.target) == just_taken:  # thicker still, not only redder
            attrs.update({"style": "bold", "penwidth": "6", "color": "#bf360c", "arrowsize": "1.4"})
        elif (edge.source, edge.target) in taken:
            attrs.update({"style": "bold", "penwidth": "3", "color": "#e65100"})
        dot.edge(node_id(edge.source), node_id(edge.target), **attrs)
    for above, below in _rows(drawn, system.shape.hubs if system is not None else frozenset()):
        dot.edge(node_id(above), node_id(below), style="invis")
    return dot.source


def _wrapped(name: str) -> str:
    """``data_researcher`` on two lines: a narrower box, so more agents fit a column."""
    return name.replace("_", "_\n")


def _rows(drawn: Any, hubs: frozenset[str]) -> list[tuple[str, str]]:
    """Invisible edges that stack the agents each hub routes to in rows of
    ``SPOKES_PER_ROW``: a hub with six agents side by side is too wide to read."""
    pairs: list[tuple[str, str]] = []
    for hub in sorted(hubs):
        spokes = list(
            dict.fromkeys(
                edge.target
                for edge in drawn.edges
                if edge.source == hub
                and edge.target not in hubs
                and edge.target not in TERMINAL
                and edge.target not in HIDDEN
            )
        )
        pairs += zip(spokes, spokes[SPOKES_PER_ROW:])
    return pairs


def taken_edges(nodes_run: Iterable[str], finished: bool = False) -> list[tuple[str, str]]:
    """The edges a run took, from the order its top-level nodes ran, each once and in the
    order last taken (so the last is the edge just taken); a ``finished`` run also took
    the way from its last node to END."""
    return walked_edges((("", node) for node in nodes_run), finished)


def walked_edges(
    updates: Iterable[tuple[str, str]], finished: bool = False
) -> list[tuple[str, str]]:
    """As ``taken_edges``, from ``(namespace, node)`` of each node's update in the order
    they came, inside subgraphs too: a node one subgraph down (namespace
    ``team:<task id>``) walks ``team:__start__`` → its nodes, and the team's own update
    then leaves by ``team:__end__``. Deeper updates are not drawn, so not walked."""
    walked: list[tuple[str, str]] = []
    top, inside, last = "__start__", "", ""  # last: the node run last inside ``inside``
    for namespace, node in updates:
        if not namespace:
            if node == inside:  # the team it was inside has ended
                walked.append((f"{inside}:{last}", f"{inside}:__end__"))
            else:
                walked.append((top, node))
            top, inside = node, ""
        elif "/" not in namespace:
            team = namespace.split(":", 1)[0]
            if team != inside:
                walked.append((top, team))
                top, inside, last = team, team, "__start__"
            walked.append((f"{team}:{last}", f"{team}:{node}"))
            last = node
    if finished:
        walked.append((top, "__end__"))
    return list(dict.fromkeys(reversed(walked)))[::-1]
