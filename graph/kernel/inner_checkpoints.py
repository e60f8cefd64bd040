"""The checkpoints a run saved inside its subgraphs (the teams of hierarchical_teams), for
the timeline.

LangGraph keeps a subgraph's checkpoints under a namespace of their own
(``search_team:<task id>``), apart from the top graph's, so the thread's history alone
never lists them: a teams run looked as if nothing happened inside its teams. Here each
namespace's history is read through the compiled graph (which finds the subgraph by its
namespace) and placed after the top-graph checkpoint it ran from. A graph a node only
invokes (a ReAct agent: plan_execute's sub-agents, any system's user agents) is no
subgraph LangGraph can find from the top graph, which would then read its checkpoints
with the top graph's own channels (every one "its input", the plan's fields, nothing
next); they are read with a graph of the same shape (``Forks.inner_graph``, ``reader_of``).

They are shown, not forked: LangGraph forks a thread from its top graph, and a
subgraph's past checkpoint cannot be copied into a new thread without the parent state
it ran under. So each inner checkpoint names the top-graph checkpoint whose next node
started its subgraph (``fork_from``): forking there runs the team again from its start.
The node playground reads one by its namespace (``namespace_of``) to try the node after it.
"""

from __future__ import annotations

import bisect
from typing import Callable, Iterable

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graph.kernel.checkpoints import checkpoint_row

# The graph that saved a subgraph's checkpoints, by the subgraph's path ("search_team",
# "searcher"), when LangGraph cannot find it from the top graph; None: not known.
InnerGraphs = Callable[[list[str]], "CompiledStateGraph | None"]


def reader_of(
    graph: CompiledStateGraph, namespace: str, inner_graphs: InnerGraphs | None = None
) -> CompiledStateGraph:
    """The graph to read ``namespace``'s checkpoints with: ``graph`` when LangGraph finds
    the subgraph from it (a subgraph node: a team) or nobody knows a better one, else
    ``inner_graphs``' graph for it, lent ``graph``'s checkpointer."""
    path = subgraph_path(namespace)
    if not path or inner_graphs is None:
        return graph
    if next(graph.get_subgraphs(namespace="|".join(path), recurse=True), None) is not None:
        return graph
    inner = inner_graphs(path)
    if inner is None:
        return graph
    return inner.copy(update={"checkpointer": graph.checkpointer})


def namespaces(graph: CompiledStateGraph, thread_id: str) -> list[str]:
    """The subgraph namespaces the thread saved checkpoints under (not the top graph's),
    in the order they were first written."""
    saver = graph.checkpointer
    assert isinstance(saver, BaseCheckpointSaver), "a graph compiled with a checkpointer"
    found: dict[str, str] = {}
    for item in saver.list({"configurable": {"thread_id": thread_id}}):
        ns = item.config["configurable"].get("checkpoint_ns") or ""
        cid = item.config["configurable"]["checkpoint_id"]
        if ns and (ns not in found or cid < found[ns]):
            found[ns] = cid
    return sorted(found, key=lambda ns: found[ns])


def namespace_of(graph: CompiledStateGraph, thread_id: str, checkpoint_id: str) -> str | None:
    """The namespace the thread saved ``checkpoint_id`` under ("" for the top graph's), or
    None when the thread has no such checkpoint."""
    saver = graph.checkpointer
    assert isinstance(saver, BaseCheckpointSaver), "a graph compiled with a checkpointer"
    for item in saver.list({"configurable": {"thread_id": thread_id}}):
        if item.config["configurable"]["checkpoint_id"] == checkpoint_id:
            return item.config["configurable"].get("checkpoint_ns") or ""
    return None


def subgraph_path(namespace: str) -> list[str]:
    """``"search_team:<task>|inner:<task>"`` -> ``["search_team", "inner"]``."""
    return [part.split(":", 1)[0] for part in namespace.split("|") if part]


def inner_timeline(
    graph: CompiledStateGraph,
    thread_id: str,
    fields: Iterable[str] = (),
    last_messages: int = 3,
    inner_graphs: InnerGraphs | None = None,
) -> list[dict]:
    """Each checkpoint saved inside a subgraph, oldest first within its namespace: where
    (``inside``: the team), the inner node that produced it, what ran next, the
    subgraph's ``fields`` (all but messages when none are named), its last messages,
    what changed since the previous checkpoint of the same subgraph run, and the
    top-graph checkpoint it ran from (``parent_checkpoint``; None when LangGraph did not
    record it). ``inner_graphs``: the graphs of subgraphs LangGraph cannot find
    (``reader_of``)."""
    wanted = tuple(fields)
    rows: list[dict] = []
    for ns in namespaces(graph, thread_id):
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        reader = reader_of(graph, ns, inner_graphs)
        snaps = list(reversed(list(reader.get_state_history(config))))
        previous: dict = {}
        for i, snap in enumerate(snaps):
            shown = wanted or tuple(k for k in (snap.values or {}) if k != "messages")
            row = checkpoint_row(snaps, i, shown, previous, last_messages)
            parents = (snap.metadata or {}).get("parents") or {}
            row.update(
                namespace=ns,
                inside=" › ".join(subgraph_path(ns)),
                parent_checkpoint=parents.get(""),
            )
            rows.append(row)
            previous = row["fields"]
    return rows


def interleave(root: list[dict], inner: list[dict]) -> list[dict]:
    """The top graph's timeline with each inner checkpoint placed after the top-graph
    checkpoint it ran from, in the order they were saved. Every row gets ``inside`` ("" at
    the top), ``position`` ("6", or "6.2": the second inside the run started at #6) and
    ``fork_from`` (the top-graph checkpoint a fork of that moment starts at)."""
    ids = [p["checkpoint_id"] for p in root]
    index_of = {cid: i for i, cid in enumerate(ids)}
    after: dict[int, list[dict]] = {}
    for row in inner:
        at = index_of.get(row.get("parent_checkpoint") or "")
        if at is None:  # no parent recorded: the last top-graph checkpoint saved before it
            at = max(0, bisect.bisect_right(ids, row["checkpoint_id"]) - 1)
        after.setdefault(at, []).append(row)
    merged: list[dict] = []
    for i, point in enumerate(root):
        merged.append({**point, "inside": "", "position": str(point["index"]), "fork_from": ids[i]})
        inside = sorted(after.get(i, []), key=lambda r: r["checkpoint_id"])
        for k, row in enumerate(inside, 1):
            merged.append(
                {
                    **row,
                    "index": point["index"],
                    "position": f"{point['index']}.{k}",
                    "fork_from": ids[i],
                }
            )
    return merged
