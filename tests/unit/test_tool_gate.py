"""Side-effecting tools behind approvals (issue 30, point 3): an MCP server written with the
``mcp`` SDK (tests/mcp_support.py) over streamable HTTP on loopback, counting its calls; its
tools put behind ``graph.kernel.tool_gate`` in a ReAct agent of a test system
(tests/gate_system.py) hosted by the real run service, on real SQLite checkpoints and a
real side-effect ledger. The Approvals inbox's list, its decisions, the design's timeout
and an experiment's automatic decisions answer the gated call like any question."""

from __future__ import annotations

import json

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command

from graph.kernel.approval import AUTOMATIC
from graph.kernel.design import Design
from graph.kernel.ledger import SideEffectLedger
from graph.kernel.system import register, unregister
from graph.kernel.tool_gate import READ_ONLY, SIDE_EFFECTING, gate_tools, policy_of
from graph.tools.mcp_config import make_config
from graph.tools.mcp_servers import agent_tools
from tests.gate_system import GATE_SERVER, SYSTEM, question
from tests.mcp_support import counting_server
from tests.unit.conftest import wait_status


@pytest.fixture(scope="module")
def server():
    running = counting_server()
    yield running
    running.stop()


@pytest.fixture
def gate_system():
    register(SYSTEM)
    yield SYSTEM
    unregister(SYSTEM.name)


@pytest.fixture
def design(gate_system) -> Design:
    return Design(system="gate_test")


@pytest.fixture
def stored(store, server, gate_system):
    """The counting server stored as the gate system's server, its tools' policies recorded."""
    from graph.tools.mcp_servers import list_tools

    config = make_config(GATE_SERVER, "streamable_http", url=server.url)
    store.mcp_servers.add(config)
    store.mcp_servers.remember_tools(GATE_SERVER, list_tools(config))
    return config


NOTE = {"to": "ada@example.org", "body": "the minutes"}


def test_policies_come_from_annotations_and_a_choice_overrides_them(server):
    tools = {t.name: t for t in agent_tools(make_config("c", "streamable_http", url=server.url))}
    assert policy_of(tools["count_words"]) == READ_ONLY
    assert policy_of(tools["send_note"]) == SIDE_EFFECTING
    assert policy_of(tools["unannotated"]) == SIDE_EFFECTING  # the server says nothing
    assert policy_of(tools["send_note"], {"send_note": READ_ONLY}) == READ_ONLY
    gated = {t.name: t for t in gate_tools(list(tools.values()), None, agent="a")}  # type: ignore[arg-type]
    assert gated["count_words"] is tools["count_words"]  # read-only: as it was
    assert gated["send_note"].metadata["gated"] is True


def test_the_gated_call_asks_with_the_tool_and_its_exact_arguments(service, stored, server, design):
    before = server.calls["send_note"]
    run_id = service.start(question("send_note", **NOTE), design)
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    assert server.calls["send_note"] == before  # asked before, nothing called
    assert pending["tool_call"] == {"server": GATE_SERVER, "tool": "send_note", "args": NOTE}
    assert json.loads(pending["query"]) == NOTE
    (action,) = pending["action_requests"]  # LangChain's standard HITL request
    assert action["name"] == "send_note" and action["args"] == NOTE
    assert pending["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    assert "send_note" in pending["reason"] and "ada@example.org" in pending["reason"]
    service.decide(run_id, pending["id"], "approve")
    done = service.wait(run_id, timeout=60)
    assert done.status == "done", done.reason
    assert server.calls["send_note"] == before + 1
    assert "sent to ada@example.org" in service.store.snapshot(run_id)["final_answer"]


def test_an_edited_argument_is_what_the_server_receives(service, stored, server, design):
    run_id = service.start(question("send_note", **NOTE), design)
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    edited = {"to": "grace@example.org", "body": "the minutes"}
    service.decide(run_id, pending["id"], "edit", query=json.dumps(edited), by="ops@x.org")
    done = service.wait(run_id, timeout=60)
    assert done.status == "done", done.reason
    answer = service.store.snapshot(run_id)["final_answer"]
    assert "sent to grace@example.org" in answer and "ada" not in answer


def test_edited_arguments_that_are_no_object_call_nothing_and_say_so(
    service, stored, server, design
):
    before = server.calls["send_note"]
    run_id = service.start(question("send_note", **NOTE), design)
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    service.decide(run_id, pending["id"], "edit", query="to grace")
    assert service.wait(run_id, timeout=60).status == "done"
    assert server.calls["send_note"] == before
    assert "unusable" in service.store.snapshot(run_id)["final_answer"]


@pytest.mark.parametrize("decision", ["reject", "skip"])
def test_a_rejected_call_never_reaches_the_server(service, stored, server, design, decision):
    before = server.calls["send_note"]
    run_id = service.start(question("send_note", **NOTE), design)
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    service.decide(run_id, pending["id"], decision, reason="not today")
    done = service.wait(run_id, timeout=60)
    assert done.status == "done", done.reason
    assert server.calls["send_note"] == before
    answer = service.store.snapshot(run_id)["final_answer"]
    assert answer.startswith("Not called") and "not today" in answer


def test_the_designs_timeout_declines_the_call(service, stored, server, design):
    before = server.calls["send_note"]
    design = design.model_copy(update={"approval_timeout_s": 1, "timeout_action": "reject"})
    run_id = service.start(question("send_note", **NOTE), design)
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    assert service.apply_timeouts(now=pending["asked_at"] + 5) == 1
    assert service.wait(run_id, timeout=60).status == "done"
    assert server.calls["send_note"] == before
    answer = service.store.snapshot(run_id)["final_answer"]
    assert answer.startswith("Not called") and "The approval timed out" in answer


def test_a_read_only_tool_runs_without_asking(service, stored, server, design):
    before = server.calls["count_words"]
    run_id = service.start(question("count_words", text="one two three"), design)
    done = service.wait(run_id, timeout=60)
    assert done.status == "done", done.reason
    assert server.calls["count_words"] == before + 1
    assert service.store.snapshot(run_id)["final_answer"] == "3"


def test_a_read_only_tool_set_side_effecting_on_the_tools_page_asks(
    service, stored, server, design
):
    service.store.mcp_servers.set_policy(GATE_SERVER, "count_words", SIDE_EFFECTING, "ops@x.org")
    run_id = service.start(question("count_words", text="one two"), design)
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    assert pending["tool_call"]["tool"] == "count_words"


def test_a_chosen_policy_is_kept_when_the_tools_are_listed_again(store, stored, server):
    """A default follows the annotations; a person's choice stays, and says who."""
    from graph.tools.mcp_servers import list_tools

    mcp = store.mcp_servers
    assert mcp.policies(GATE_SERVER)["send_note"] == SIDE_EFFECTING
    mcp.set_policy(GATE_SERVER, "send_note", READ_ONLY, "ops@x.org")
    mcp.remember_tools(GATE_SERVER, list_tools(stored))
    assert mcp.policies(GATE_SERVER)["send_note"] == READ_ONLY
    assert mcp.chosen(GATE_SERVER) == {"send_note": "ops@x.org"}
    assert mcp.policies(GATE_SERVER)["count_words"] == READ_ONLY  # its default


def test_an_experiment_deciding_itself_skips_the_call(store, stored, server, design):
    """An experiment's runs are given ``AUTOMATIC``: the gate answers at once, and a
    gated call (side-effecting by definition) is skipped, not made."""
    from graph.kernel.ledger import side_effect_ledger
    from graph.settings import get_settings

    before = server.calls["send_note"]
    graph = SYSTEM.build_graph(design, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "exp-1", AUTOMATIC: []}}
    state = SYSTEM.initial_state(question("send_note", **NOTE), design)
    result = graph.invoke(state, config)
    assert not graph.get_state(config).interrupts
    assert server.calls["send_note"] == before
    assert result["final_answer"].startswith("Not called")
    assert "The experiment decided automatically: skip" in result["final_answer"]
    assert side_effect_ledger(get_settings()).count("tools/", finished_only=True) == 0


def test_a_server_that_is_down_fails_the_one_call_with_a_sentence(tmp_path):
    """The server stops between listing and the call: the approved call answers the agent
    with one sentence (no traceback) and the run goes on; nothing is left in the ledger."""
    down = counting_server()
    tools = agent_tools(make_config("notes", "streamable_http", url=down.url))
    down.stop()
    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")
    said = _one_gated_call(tools, ledger, "send_note", NOTE)
    assert said.startswith("The MCP server “notes” is down: nothing answers at")
    assert "Traceback" not in said
    assert ledger.count("tools/") == 0  # failed before acting: it may be tried again


def _one_gated_call(tools, ledger, name: str, args: dict, policies=None):
    """``name`` gated in a one-node graph on a checkpointer, asked, approved; what it said."""
    (tool,) = [
        t for t in gate_tools(tools, ledger, agent="clerk", policies=policies) if t.name == name
    ]

    def node(state: dict) -> dict:
        return {"messages": [("ai", str(tool.invoke(args)))]}

    builder = StateGraph(MessagesState)
    builder.add_node("clerk", node)
    builder.add_edge(START, "clerk")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": name}}
    graph.invoke({"messages": []}, config)
    assert graph.get_state(config).interrupts, "the gated call asks first"
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    return graph.get_state(config).values["messages"][-1].content


def test_a_call_cut_by_its_deadline_stays_unknown_in_the_ledger(tmp_path, server):
    """Sent, then no answer in time: whether the tool acted is unknown, so the ledger keeps
    it "sending" (a later run asks a person before calling again), never forgets it."""
    tools = agent_tools(make_config("notes", "streamable_http", url=server.url), deadline_s=1)
    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")
    said = _one_gated_call(tools, ledger, "slow", {"seconds": 3}, {"slow": SIDE_EFFECTING})
    assert "did not answer within 1 s" in said
    assert ledger.count("tools/") == 1 and ledger.count("tools/", finished_only=True) == 0


def test_a_standard_hitl_edit_from_any_client_is_what_the_server_receives(tmp_path, server):
    """A LangGraph client answering with LangChain's ``HITLResponse`` (an ``edit`` whose
    ``edited_action`` carries the tool's name and new arguments), on a SQLite checkpointer."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    tools = agent_tools(make_config("notes", "streamable_http", url=server.url))
    ledger = SideEffectLedger(tmp_path / "ledger.sqlite")
    (send_note,) = [t for t in gate_tools(tools, ledger, agent="clerk") if t.name == "send_note"]

    def node(state: dict) -> dict:
        return {"messages": [("ai", str(send_note.invoke(NOTE)))]}

    builder = StateGraph(MessagesState)
    builder.add_node("clerk", node)
    builder.add_edge(START, "clerk")
    with SqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "edit"}}
        graph.invoke({"messages": []}, config)
        (asked,) = graph.get_state(config).interrupts
        assert asked.value["action_requests"][0] == {
            "name": "send_note",
            "args": NOTE,
            "description": asked.value["action_requests"][0]["description"],
        }
        edited = {"to": "linus@example.org", "body": "the minutes"}
        decision = {"type": "edit", "edited_action": {"name": "send_note", "args": edited}}
        graph.invoke(Command(resume={"decisions": [decision]}), config)
        said = graph.get_state(config).values["messages"][-1].content
    assert "sent to linus@example.org" in said
    assert ledger.count("tools/", finished_only=True) == 1


def test_a_run_whose_server_is_down_ends_with_its_sentence_not_a_traceback(
    service, store, gate_system, design
):
    down = counting_server()
    store.mcp_servers.add(make_config(GATE_SERVER, "streamable_http", url=down.url))
    down.stop()
    run_id = service.start(question("send_note", **NOTE), design)
    done = service.wait(run_id, timeout=60)
    assert done.status == "failed"
    assert f"The MCP server “notes” is down: nothing answers at {down.url}" in done.reason
    assert "Traceback" not in done.reason
