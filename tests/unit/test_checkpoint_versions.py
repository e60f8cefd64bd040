"""The checkpoint file stores each channel's value once per version, as what changed
(issue #18, point 2): a run's stored bytes grow with its length, not its square, and
LangGraph reads back exactly what it wrote (history, interrupts, forks, subgraphs,
files written by LangGraph's own ``SqliteSaver``).

Real parts: LangGraph graphs on SQLite files, compared with LangGraph's in-memory saver.
"""

from __future__ import annotations

import operator
import sqlite3
from typing import Annotated

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from graph.kernel.checkpoints import open_checkpointer
from graph.kernel.reducers import merge_dicts


class Loop(MessagesState):
    steps: int
    results: Annotated[dict[str, str], merge_dicts]
    notes: Annotated[list[str], operator.add]
    last: str


def _work(state: Loop) -> dict:
    n = state.get("steps", 0) + 1
    text = f"step {n}: " + "a finding worth keeping. " * 40  # ~1 kB, under the text store's cut
    return {
        "steps": n,
        "messages": [AIMessage(content=text, name="worker")],
        "results": {str(n): text},
        "notes": [f"note {n}"],
        "last": text,
    }


def _loop(limit: int):
    def route(state: Loop) -> str:
        return END if state["steps"] >= limit else "work"

    builder = StateGraph(Loop)
    builder.add_node("work", _work)
    builder.add_edge(START, "work")
    builder.add_conditional_edges("work", route, ["work", END])
    return builder


def _stored_bytes(path) -> int:
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        total = conn.execute("SELECT SUM(LENGTH(checkpoint) + LENGTH(metadata)) FROM checkpoints")
        total = (
            total.fetchone()[0]
            + conn.execute("SELECT SUM(LENGTH(value)) FROM writes").fetchone()[0]
        )
        if "checkpoint_blobs" in tables:
            total += conn.execute(
                "SELECT COALESCE(SUM(LENGTH(blob)), 0) FROM checkpoint_blobs"
            ).fetchone()[0]
        return total


def _run(path, steps: int) -> int:
    graph = _loop(steps).compile(checkpointer=open_checkpointer(path))
    graph.invoke(
        {"messages": [HumanMessage("go")]},
        {"configurable": {"thread_id": "t"}, "recursion_limit": steps + 10},
    )
    return _stored_bytes(path)


def test_a_runs_checkpoint_bytes_grow_with_its_length_not_its_square(tmp_path):
    at_10 = _run(tmp_path / "ten.sqlite", 10)
    at_40 = _run(tmp_path / "forty.sqlite", 40)
    # Linear growth is 4x; the whole state copied into every checkpoint was over 12x.
    assert at_40 < 6 * at_10, (at_10, at_40)


def _values_of_history(graph, config) -> list[dict]:
    return [
        (s.values, s.next, s.metadata.get("step"), len(s.tasks))
        for s in graph.get_state_history(config)
    ]


def test_history_and_a_fork_read_back_as_langgraphs_own_saver_has_them(tmp_path):
    ours = _loop(6).compile(checkpointer=open_checkpointer(tmp_path / "c.sqlite"))
    theirs = _loop(6).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 30}
    start = {"messages": [HumanMessage("go", id="h1")]}
    for graph in (ours, theirs):
        graph.invoke(start, config)
    strip = lambda graph: [  # noqa: E731 - message ids differ between the two runs
        (
            {**v, "messages": [m.content for m in v.get("messages", [])]},
            nxt,
            step,
            tasks,
        )
        for v, nxt, step, tasks in _values_of_history(graph, config)
    ]
    assert strip(ours) == strip(theirs)
    assert len(strip(ours)) == 8

    # Time travel: go on from the third checkpoint with a changed field, on the same thread.
    for graph in (ours, theirs):
        past = list(graph.get_state_history(config))[-3]
        forked = graph.update_state(past.config, {"last": "edited", "notes": ["fork"]})
        graph.invoke(None, {**forked, "recursion_limit": 30})
    assert strip(ours) == strip(theirs)
    final = ours.get_state(config).values
    assert final["notes"] == theirs.get_state(config).values["notes"]
    assert "fork" in final["notes"] and final["last"] != "edited" and final["steps"] == 6


class Asking(MessagesState):
    answers: Annotated[list[str], operator.add]


def _ask(state: Asking) -> dict:
    reply = interrupt({"question": f"approve #{len(state.get('answers', []))}?"})
    return {"answers": [reply], "messages": [AIMessage(f"got {reply}")]}


def test_an_interrupt_waits_and_resumes_across_a_reopened_file(tmp_path):
    builder = StateGraph(Asking)
    builder.add_node("ask", _ask)
    builder.add_node("again", _ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "again")
    builder.add_edge("again", END)
    path = tmp_path / "c.sqlite"
    config = {"configurable": {"thread_id": "t"}}
    builder.compile(checkpointer=open_checkpointer(path)).invoke(
        {"messages": [HumanMessage("go")]}, config
    )
    graph = builder.compile(checkpointer=open_checkpointer(path))  # a restarted app
    assert graph.get_state(config).interrupts[0].value == {"question": "approve #0?"}
    graph.invoke(Command(resume="yes"), config)
    graph = builder.compile(checkpointer=open_checkpointer(path))
    assert graph.get_state(config).interrupts[0].value == {"question": "approve #1?"}
    graph.invoke(Command(resume="no"), config)
    values = graph.get_state(config).values
    assert values["answers"] == ["yes", "no"]
    assert [m.content for m in values["messages"]] == ["go", "got yes", "got no"]


def test_a_subgraphs_checkpoints_keep_their_own_namespace(tmp_path):
    inner = _loop(3).compile()
    outer = StateGraph(Loop)
    outer.add_node("team", inner)
    outer.add_edge(START, "team")
    outer.add_edge("team", END)
    saver = open_checkpointer(tmp_path / "c.sqlite")
    graph = outer.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("go")]}, config)
    namespaces = {c.config["configurable"]["checkpoint_ns"] for c in saver.list(config)}
    inner_ns = next(ns for ns in namespaces if ns.startswith("team:"))
    inner_history = list(
        graph.get_state_history({"configurable": {"thread_id": "t", "checkpoint_ns": inner_ns}})
    )
    assert [h.values.get("steps") for h in inner_history][:4] == [3, 2, 1, None]
    assert graph.get_state(config).values["notes"] == ["note 1", "note 2", "note 3"]


def test_a_file_written_by_langgraphs_sqlite_saver_is_read_and_goes_on(tmp_path):
    path, copy = tmp_path / "c.sqlite", tmp_path / "copy.sqlite"
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 30}
    stock = lambda p: SqliteSaver(sqlite3.connect(p, check_same_thread=False))  # noqa: E731
    old = _loop(6).compile(checkpointer=stock(path))
    old.invoke({"messages": [HumanMessage("go")]}, config)
    old.checkpointer.conn.close()
    copy.write_bytes(path.read_bytes())
    graph = _loop(6).compile(checkpointer=open_checkpointer(path))
    theirs = _loop(6).compile(checkpointer=stock(copy))
    before = list(theirs.get_state_history(config))
    assert [s.values for s in graph.get_state_history(config)] == [s.values for s in before]
    # Fork from a past checkpoint of the old file: the carried-over values become blobs.
    for g in (graph, theirs):
        forked = g.update_state(before[3].config, {"notes": ["after the upgrade"]})
        g.invoke(None, {**forked, "recursion_limit": 30})
    graph = _loop(6).compile(checkpointer=open_checkpointer(path))  # read cold
    values, expected = graph.get_state(config).values, theirs.get_state(config).values
    contents = lambda v: {**v, "messages": [m.content for m in v["messages"]]}  # noqa: E731
    assert contents(values) == contents(expected)  # new messages get new ids
    assert "after the upgrade" in values["notes"] and values["steps"] == 6
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM checkpoint_blobs").fetchone()[0] > 0


def test_deleting_a_thread_removes_its_blobs(tmp_path):
    path = tmp_path / "c.sqlite"
    saver = open_checkpointer(path)
    graph = _loop(3).compile(checkpointer=saver)
    for thread in ("a", "b"):
        graph.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": thread}})
    saver.delete_thread("a")
    with sqlite3.connect(path) as conn:
        threads = {r[0] for r in conn.execute("SELECT thread_id FROM checkpoint_blobs")}
    assert threads == {"b"}
    assert graph.get_state({"configurable": {"thread_id": "a"}}).values == {}
    assert graph.get_state({"configurable": {"thread_id": "b"}}).values["steps"] == 3


class Flags(MessagesState):
    flags: Annotated[dict, merge_dicts]


def test_a_dict_item_changed_in_type_or_in_place_is_stored_as_changed(tmp_path):
    memory = {"agent": {"last": 1}}

    def first(state: Flags) -> dict:
        return {"flags": {"on": 1, "memory": memory}}

    def second(state: Flags) -> dict:
        memory["agent"]["last"] = 2  # changed in place, then handed back
        return {"flags": {"on": True, "memory": memory}}

    builder = StateGraph(Flags)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    path = tmp_path / "c.sqlite"
    config = {"configurable": {"thread_id": "t"}}
    graph = builder.compile(checkpointer=open_checkpointer(path))
    graph.invoke({"messages": []}, config, durability="sync")  # each step saved before the next
    cold = builder.compile(checkpointer=open_checkpointer(path))
    flags = cold.get_state(config).values["flags"]
    assert flags["on"] is True and flags["memory"] == {"agent": {"last": 2}}
