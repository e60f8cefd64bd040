"""The wiring on LangGraph's public builder API: a system's nodes are wrapped as they are
added (``SystemGraph``), and nothing rewrites a builder's nodes or edges afterwards."""

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from graph.kernel.design import Design
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.plan_execute import SYSTEM
from graph.plan_execute.state import State


def _two_nodes() -> SystemGraph:
    builder = SystemGraph(State)
    builder.add_node("planner", lambda state: Command(goto="executor"), destinations=("executor",))
    builder.add_node(
        "executor",
        lambda state, config: Command(
            goto=END,
            update={"final_answer": config["configurable"]["thread_id"], "outcome": "done"},
        ),
        destinations=(END,),
    )
    return builder


def test_nodes_keep_what_langgraph_made_of_them_when_added_and_the_wrapper_still_runs():
    builder = _two_nodes()
    added = {name: spec.runnable for name, spec in builder.nodes.items()}
    graph = compile_graph(builder, Design(), system=SYSTEM)
    assert all(builder.nodes[name].runnable is runnable for name, runnable in added.items())
    assert (START, "planner") in builder.edges  # the start, added by the wiring

    final = graph.invoke(
        SYSTEM.initial_state("q", Design()), {"configurable": {"thread_id": "t-1"}}
    )
    assert final["final_answer"] == "t-1"  # the node that asked for its config got it
    memory = final["agent_memory"]  # written by the wrapper around each node
    assert [m["last_node"] for m in memory.values()] == ["executor"]
    assert [m["status"] for m in memory.values()] == ["finished"]


def test_a_graph_with_its_own_start_edge_is_refused_saying_the_wiring_adds_it():
    builder = _two_nodes()
    builder.add_edge(START, "planner")
    with pytest.raises(ValueError, match="own edge from START: the wiring adds it"):
        compile_graph(builder, Design(), system=SYSTEM)


def test_a_node_asking_for_what_the_wiring_does_not_pass_is_refused_when_added():
    def needs_a_store(state, store):
        return {}

    with pytest.raises(TypeError, match="'planner' asks for 'store'"):
        SystemGraph(State).add_node("planner", needs_a_store)


def test_a_plain_state_graph_is_refused_as_its_nodes_would_run_unwrapped():
    builder = StateGraph(State)
    builder.add_node("planner", lambda state: {})
    with pytest.raises(TypeError, match="builds its graph on a SystemGraph"):
        compile_graph(builder, Design(), system=SYSTEM)
