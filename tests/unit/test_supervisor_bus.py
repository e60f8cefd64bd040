"""The supervisor_bus system (docs/systems/supervisor_bus.md): the bus, inboxes, timeouts, tools by role, teaching."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from pathlib import Path
from typing import ClassVar

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, StateGraph
from langgraph.types import Command

from graph.kernel.checkpoints import checkpoint_timeline, fork_state
from graph.kernel.design import Design, export_design, import_design
from graph.kernel.system import coordination_by_size, get_system, systems
from graph.models.scripted import ScriptedChatModel
from graph.prompts import default_text, prompt_names, template_errors
from graph.service.run_records import RunEvent, event_record
from graph.service.run_service import RunService
from graph.service.run_storage import checkpointer_for
from graph.service.runs import continue_run, run_question
from graph.supervisor_bus import SYSTEM as BUS
from graph.supervisor_bus.agents import AGENT_NAMES, AGENTS, design_warnings
from graph.supervisor_bus.bus import Outbox, messages
from graph.supervisor_bus.deps import make_deps
from graph.supervisor_bus.prompts import preview_prompt
from graph.supervisor_bus.state import BusState, consumed_field
from graph.supervisor_bus.teaching import blackboard_vs_bus
from graph.supervisor_bus.tools import REFUSED, Gate, tools_for
from graph.supervisor_bus.workers import worker_node
from tests.support import RewritingModel, edit_json
from tests.unit.conftest import wait_status

build_graph, initial_state = BUS.build_graph, BUS.initial_state
snapshot, step_rows = BUS.snapshot, BUS.step_rows

QUESTION = "What caused the dot-com crash?"
NAME = BUS.name


def design(**changes) -> Design:
    """The system's default design, with the writer's approval off unless a test asks."""
    return Design(system=NAME, approvals=changes.pop("approvals", {"writer": "never"}), **changes)


def drafts(home: Path) -> list[Path]:
    return sorted((home / "drafts").glob("*.md"))


def run(settings, d: Design | None = None, question: str = QUESTION, **models):
    checkpointer = checkpointer_for(settings)
    graph = build_graph(d or design(), settings=settings, checkpointer=checkpointer, **models)
    outcome = run_question(question, d or design(), settings=settings, graph=graph)
    return graph, outcome


def requests_to(state: dict, agent: str) -> list:
    return [m for m in messages(state) if m.to == agent and m.type == "request"]


def history(graph, thread_id: str) -> list:
    return list(reversed(list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))))


# --------------------------------------------------------------------------- registry, design


def test_the_registry_and_a_design_accept_the_supervisor_bus_system():
    info = get_system(NAME)
    assert systems()[NAME] is info is BUS
    assert set(info.agents) == {"researcher", "writer", "reviewer"}
    d = Design(system=NAME)
    assert d.enabled_agents == ["researcher", "writer", "reviewer"]
    assert d.approval_policy("writer") == "always"  # it has a side effect
    assert import_design(json.loads(json.dumps(export_design(d)))) == d
    with pytest.raises(ValueError, match="unknown agent"):
        Design(system=NAME, enabled_agents=["web_researcher"])


@pytest.mark.parametrize(
    "enabled",
    [list(c) for n in range(len(AGENT_NAMES) + 1) for c in itertools.combinations(AGENT_NAMES, n)],
)
def test_every_subset_of_its_agents_compiles_and_runs_to_an_end(settings, enabled):
    d = design(enabled_agents=enabled)
    graph, outcome = run(settings, d)
    assert set(graph.get_graph().nodes) == {"__start__", "__end__", "supervisor", "human", *enabled}
    if {"writer", "researcher"} & set(enabled):
        assert outcome.status == "done", outcome.reason
    else:  # no agent that writes an answer: the run says there is none
        assert outcome.status == "failed", outcome.reason
        assert "no agent produced an answer" in outcome.reason
    assert {r.agent for r in outcome.rows} == set(enabled)
    assert all(r.status == "answered" for r in outcome.rows)
    if enabled:
        assert "[kb:" in outcome.state["final_answer"] or "researcher" not in enabled


def test_coordination_by_size_follows_the_source_design():
    assert "direct handoff" in coordination_by_size(2)
    assert all("supervisor with a message bus" in coordination_by_size(n) for n in (3, 4, 5))
    assert "hierarchical teams" in coordination_by_size(6)
    assert "nothing to coordinate" in coordination_by_size(1)
    assert any("direct handoff" in w for w in design_warnings(["researcher", "writer"]))
    assert not any("handoff" in w or "hierarchical" in w for w in design_warnings(list(AGENTS)))


def test_its_prompts_are_valid_and_render_for_a_sample_state():
    names = prompt_names(NAME)
    assert {
        f"{NAME}/{n}"
        for n in ("supervisor", "researcher", "writer", "reviewer", "request", "repair")
    } <= set(names)
    for name in names:
        assert template_errors(name, default_text(name)) == []
        assert preview_prompt(name, default_text(name)).strip()
    assert '"next_agent"' in preview_prompt(
        f"{NAME}/supervisor", default_text(f"{NAME}/supervisor")
    )


def test_every_agent_has_its_own_inbox_field_in_the_state():
    declared = BusState.__annotations__
    for owner in ("supervisor", "human", *AGENTS):
        assert consumed_field(owner) in declared


# --------------------------------------------------------------------------- a full run


def test_a_full_offline_run_ends_done_with_a_cited_reviewed_answer(settings):
    graph, outcome = run(settings)
    state = outcome.state
    assert outcome.status == "done", outcome.reason
    assert state["final_answer"].startswith(f"# {QUESTION}")
    assert "[kb:dotcom-crash]" in state["final_answer"] and "\n\nReview: " in state["final_answer"]
    assert [r.agent for r in outcome.rows] == ["researcher", "writer", "reviewer"]
    bus = messages(state)
    # Every request is consumed by its addressee exactly once and answered once.
    for agent in AGENTS:
        (request,) = requests_to(state, agent)
        assert state[consumed_field(agent)].count(request.id) == 1
        answers = [m for m in bus if m.in_reply_to == request.id]
        assert [(a.from_, a.type) for a in answers] == [(agent, "result")]
    # Every decision is a status message from the supervisor, the last one FINISH.
    statuses = [m for m in bus if m.type == "status"]
    assert all(m.from_ == "supervisor" for m in statuses)
    assert [m.payload["decision"] for m in statuses] == [
        "researcher",
        "writer",
        "reviewer",
        "FINISH",
    ]
    assert [d["next_agent"] for d in state["decisions"]] == [
        m.payload["decision"] for m in statuses
    ]
    assert state["outstanding"] == {} and state["completed_agents"] == set(AGENTS)
    assert len(drafts(settings.home)) == 1
    # The writer read the researcher's findings from its inbox, not from a shared field.
    (writer_request,) = requests_to(state, "writer")
    researcher_result = next(m for m in bus if m.from_ == "researcher" and m.type == "result")
    assert writer_request.payload["inputs"] == [researcher_result.id]


def test_the_snapshot_shows_the_bus_registry_and_decisions_as_json(settings):
    _, outcome = run(settings)
    snap = snapshot(outcome.state)
    json.dumps(snap)
    first = snap["bus"][0]
    assert (first["from"], first["to"], first["type"]) == ("user", "supervisor", "request")
    request = next(r for r in snap["bus"] if r["to"] == "writer" and r["type"] == "request")
    assert request["consumed_by"] == ["writer"] and request["time_to_answer_s"] >= 0
    assert [r["status"] for r in snap["rows"]] == ["answered"] * 3
    assert snap["rows"] == [r.as_dict() for r in step_rows(outcome.state)]
    assert len(snap["decisions"]) == 4 and snap["outstanding"] == [] and snap["dead_letters"] == []
    # Time left in the registry counts down from the run's timeout.
    waiting = {**outcome.state, "outstanding": {"m9-x": 100.0}, "timeout_s": 30.0}
    assert snapshot(waiting, now=110.0)["outstanding"] == [
        {"message_id": "m9-x", "to": "?", "sent_at": 100.0, "timeout_s": 30.0, "time_left_s": 20.0}
    ]


def test_run_events_of_this_system_are_json_safe(settings):
    events: list[RunEvent] = []
    d = design()
    graph = build_graph(d, settings=settings, checkpointer=checkpointer_for(settings))
    run_question(QUESTION, d, settings=settings, graph=graph, on_event=events.append)
    records = [event_record(e, NAME) for e in events]
    json.dumps(records)
    update = next(r for r in records if r["kind"] == "update" and r["node"] == "researcher")
    assert update["data"]["bus"][0]["from_"] == "researcher"
    assert update["data"]["completed_agents"] == ["researcher"]


def test_the_writer_waits_for_a_human_by_default_and_goes_on_when_approved(settings):
    d = Design(system=NAME)
    graph, outcome = run(settings, d)
    assert outcome.status == "waiting"
    (asked,) = outcome.interrupts
    assert {k: asked[k] for k in ("kind", "agent")} == {"kind": "approval", "agent": "writer"}
    assert {"step", "query", "reason", "asked_at"} <= set(asked)
    assert drafts(settings.home) == []  # nothing written before the human said so
    resumed = continue_run(
        graph,
        Command(resume={asked["id"]: {"decision": "approve"}}),
        outcome.thread_id,
        d,
        settings=settings,
    )
    assert resumed.status == "done", resumed.reason
    assert len(drafts(settings.home)) == 1


def test_a_decision_naming_an_agent_in_another_case_is_read_as_that_agent(settings):
    """Without a schema a small model may write "Researcher": one reading, so no repair
    round and no failed run; the run says what was read."""

    def title_case(prompt, reply, n):
        if '"next_agent"' not in prompt:
            return None
        name = json.loads(reply)["next_agent"]
        return edit_json(reply, next_agent=name.title() if name != "FINISH" else name)

    supervisor = RewritingModel(rewrite=title_case)
    supervisor.calls.clear()
    _, outcome = run(settings, planner_model=supervisor)
    assert outcome.status == "done", outcome.reason
    assert [d["next_agent"] for d in outcome.state["decisions"]] == [
        "researcher",
        "writer",
        "reviewer",
        "FINISH",
    ]
    assert (
        "The supervisor named next_agent 'Researcher': read as researcher."
        in (outcome.state["notices"])
    )
    assert len([c for c in supervisor.calls if '"next_agent"' in c]) == 4


def test_an_unusable_decision_on_the_bus_is_refused_and_the_writer_keeps_waiting(settings):
    d = Design(system=NAME)
    graph, outcome = run(settings, d)
    (asked,) = outcome.interrupts
    after = continue_run(
        graph,
        Command(resume={asked["id"]: {"decision": "maybe"}}),
        outcome.thread_id,
        d,
        settings=settings,
    )
    assert after.status == "waiting"
    assert any("Unusable decision" in n for n in after.state["notices"])
    assert drafts(settings.home) == []


# --------------------------------------------------------------------------- idempotency


def test_an_agent_run_again_handles_nothing_already_consumed(settings):
    d = design()
    _, outcome = run(settings, d)
    deps = make_deps(d, settings=settings)
    drafts(settings.home)[0].unlink()
    again = worker_node(outcome.state, {"configurable": {"thread_id": "again"}}, deps, "writer")
    assert "bus" not in again.update and consumed_field("writer") not in again.update
    assert "empty inbox" in again.update["notices"][0]
    assert drafts(settings.home) == []


def _before(graph, thread_id: str, node: str):
    return next(s for s in history(graph, thread_id) if s.next == (node,))


def test_replaying_from_before_the_writer_writes_no_second_draft(settings):
    graph, outcome = run(settings)
    (draft,) = drafts(settings.home)
    draft.unlink()  # a second side effect would bring it back
    before = _before(graph, outcome.thread_id, "writer")
    (request,) = requests_to(before.values, "writer")
    assert request.id not in (before.values.get(consumed_field("writer")) or [])  # not yet handled
    replayed = graph.invoke(None, before.config)
    assert replayed["outcome"] == "done"
    assert drafts(settings.home) == []
    writer_result = next(
        m for m in messages(replayed) if m.from_ == "writer" and m.type == "result"
    )
    assert writer_result.in_reply_to == request.id
    assert "already done for this message: not repeated" in writer_result.payload["draft"]


def test_a_fork_from_before_the_supervisor_routes_to_the_writer_writes_no_second_draft(settings):
    d = design()
    graph, outcome = run(settings, d)
    (draft,) = drafts(settings.home)
    draft.unlink()
    original = {m.id for m in requests_to(outcome.state, "writer")}
    # The checkpoint after the researcher answered: the supervisor has yet to decide.
    after_research = next(
        s
        for s in history(graph, outcome.thread_id)
        if s.next == ("supervisor",) and s.values.get("completed_agents")
    )
    fork_id = uuid.uuid4().hex
    fork_state(
        graph,
        outcome.thread_id,
        after_research.config["configurable"]["checkpoint_id"],
        fork_id,
        {},
    )
    forked = continue_run(graph, None, fork_id, d, settings=settings)
    assert forked.status == "done", forked.reason
    # The same decision at the same point of the same session is the same message...
    assert {m.id for m in requests_to(forked.state, "writer")} == original
    # ...which the writer's side effect recognises: no second draft.
    assert drafts(settings.home) == []
    # A fork whose request differs is new work, and does write.
    changed_id = uuid.uuid4().hex
    fork_state(
        graph,
        outcome.thread_id,
        after_research.config["configurable"]["checkpoint_id"],
        changed_id,
        {"session_id": "another-session"},
    )
    changed = continue_run(graph, None, changed_id, d, settings=settings)
    assert {m.id for m in requests_to(changed.state, "writer")}.isdisjoint(original)
    assert len(drafts(settings.home)) == 1


# --------------------------------------------------------------------------- timeouts


def _tool_names(tools) -> list[str]:
    return [getattr(t, "name", None) or t["function"]["name"] for t in tools or []]


class SlowWriterModel(ScriptedChatModel):
    """The writer's first request of the process times out: its worker is stuck before
    its first model call (while its tools are bound), not working on a reply."""

    slow_s: float = 4.0  # well past the 2 s timeout below, even on a busy machine
    calls: ClassVar[dict] = {}

    def bind_tools(self, tools, **kwargs):
        if "write_draft" in _tool_names(tools) and not SlowWriterModel.calls.get("slowed"):
            SlowWriterModel.calls["slowed"] = True
            time.sleep(self.slow_s)
        return super().bind_tools(tools, **kwargs)


class SlowReplyModel(ScriptedChatModel):
    """The writer's model call itself takes past the bus timeout: a slow server still
    writing its reply."""

    slow_s: float = 4.0

    def _generate(self, messages, stop=None, run_manager=None, tools=None, **kwargs):
        if "write_draft" in _tool_names(tools):
            time.sleep(self.slow_s)
        return super()._generate(messages, stop, run_manager, tools=tools, **kwargs)


def test_a_worker_whose_model_call_outlasts_the_bus_timeout_is_not_late(settings):
    """The request clock stands still while the worker's reply is being written: a slow
    but working server answers, and the run ends done without an escalation."""
    d = design(bus_timeout_s=2.0)
    graph = build_graph(
        d,
        settings=settings,
        checkpointer=checkpointer_for(settings),
        planner_model=ScriptedChatModel(),
        worker_model=SlowReplyModel(),
    )
    outcome = run_question(QUESTION, d, settings=settings, graph=graph)
    assert outcome.status == "done", outcome.reason
    assert not outcome.state.get("dead_letters") and not outcome.state.get("escalated")
    assert not any("past the" in n for n in outcome.state.get("notices") or [])
    assert len(drafts(settings.home)) == 1


@pytest.fixture
def slow_writer():
    SlowWriterModel.calls.clear()
    yield lambda role: SlowWriterModel() if role == "worker" else ScriptedChatModel()
    SlowWriterModel.calls.clear()


@pytest.fixture
def slow_service(store, settings, slow_writer):
    svc = RunService(store, settings, timeout_tick_s=0, model_factory=slow_writer)
    yield svc
    svc.shutdown()


def test_a_request_past_its_timeout_is_escalated_once_and_a_retry_finishes_the_run(
    slow_service, settings
):
    service = slow_service
    run_id = service.start(QUESTION, design(bus_timeout_s=2.0))
    wait_status(service, run_id, "waiting")
    (pending,) = service.pending_approvals()
    assert (pending["run_id"], pending["kind"], pending["agent"]) == (
        run_id,
        "escalation",
        "writer",
    )
    assert pending["query"].startswith("Write the answer") and pending["asked_at"]
    assert "did not answer request" in pending["reason"] and "within 2 s" in pending["reason"]
    snap = service.store.snapshot(run_id)
    (dead,) = snap["dead_letters"]
    assert dead["resolution"] == "waiting for a human" and snap["escalated"] == [dead["message_id"]]
    assert snap["outstanding"] == [] and drafts(settings.home) == []  # late work did nothing

    service.decide(run_id, pending["id"], "retry")
    record = service.wait(run_id, timeout=30)
    assert record.status == "done", record.reason
    assert service.pending_approvals() == []
    snap = service.store.snapshot(run_id)
    assert len([m for m in snap["bus"] if m["to"] == "human"]) == 1  # asked exactly once
    assert [r["status"] for r in snap["rows"]] == ["answered", "retried", "answered", "answered"]
    assert snap["dead_letters"][0]["resolution"] == "retried"
    assert len(drafts(settings.home)) == 1
    assert "[kb:dotcom-crash]" in snap["final_answer"]
    # the runs table holds the bus's own counts: requests to agents, messages on the bus
    assert service.store.run(run_id).counts == {"steps": 4, "messages": len(snap["bus"])}


@pytest.mark.parametrize(
    "decision, query, expect",
    [
        ("skip", "", "dropped"),
        ("edit", "reviewer", "reassigned to reviewer"),
        ("edit", "standard", "reassigned to reviewer"),  # LangChain's edit, args.agent
    ],
)
def test_an_escalation_can_be_dropped_or_reassigned_and_is_never_asked_twice(
    settings, slow_writer, decision, query, expect
):
    d = design(bus_timeout_s=2.0)
    checkpointer = checkpointer_for(settings)
    graph = build_graph(
        d,
        settings=settings,
        checkpointer=checkpointer,
        planner_model=slow_writer("planner"),
        worker_model=slow_writer("worker"),
    )
    outcome = run_question(QUESTION, d, settings=settings, graph=graph)
    assert outcome.status == "waiting"
    (asked,) = outcome.interrupts
    answer: dict = {"decision": decision, "query": query}
    if query == "standard":  # a client that knows only the standard: edit the agent
        (action,) = asked["action_requests"]
        assert action["args"] == {"agent": "writer", "query": asked["query"]}
        edited = {"name": action["name"], "args": {**action["args"], "agent": "reviewer"}}
        answer = {"decisions": [{"type": "edit", "edited_action": edited}]}
    done = continue_run(
        graph,
        Command(resume={asked["id"]: answer}),
        outcome.thread_id,
        d,
        settings=settings,
    )
    assert done.status == "done", done.reason
    state = done.state
    (dead,) = state["dead_letters"].values()
    assert dead["resolution"] == expect
    assert len(requests_to(state, "human")) == 1
    if decision == "skip":
        assert len(requests_to(state, "writer")) == 1 and "Review: " in state["final_answer"]
    else:
        reassigned = requests_to(state, "reviewer")[0]
        assert reassigned.payload["retry_of"] == dead["message_id"]
        assert reassigned.payload["task"].startswith("Write the answer")
    # Replaying from any checkpoint after the escalation never escalates again.
    after = [
        s
        for s in history(graph, outcome.thread_id)
        if s.values.get("escalated") and s.next == ("supervisor",)
    ]
    replayed = graph.invoke(None, after[0].config)
    assert len(requests_to(replayed, "human")) == 1 and replayed["outcome"] == "done"


# --------------------------------------------------------------------------- tools by role


class ForbiddenToolModel(ScriptedChatModel):
    """A researcher model that asks for the writer's side-effecting tool first."""

    def _generate(self, messages, stop=None, run_manager=None, tools=None, **kwargs):
        names = [t["function"]["name"] for t in tools or []]
        if "search_knowledge_base" in names and isinstance(messages[-1], HumanMessage):
            message = AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "write_draft",
                        "args": {"title": "pwned", "body": "x"},
                        "id": "call_forbidden",
                        "type": "tool_call",
                    }
                ],
            )
            from langchain_core.outputs import ChatGeneration, ChatResult

            return ChatResult(generations=[ChatGeneration(message=message)])
        return super()._generate(messages, stop, run_manager, tools=tools, **kwargs)


def test_a_tool_outside_the_role_is_refused_and_recorded_as_an_error_message(settings):
    d = design(enabled_agents=["researcher"])
    _, outcome = run(settings, d, worker_model=ForbiddenToolModel())
    assert outcome.status == "done", outcome.reason
    bus = messages(outcome.state)
    (refusal,) = [m for m in bus if m.type == "error"]
    (request,) = requests_to(outcome.state, "researcher")
    assert (refusal.from_, refusal.to) == ("researcher", "supervisor")
    assert refusal.payload["kind"] == "tool_refused" and refusal.payload["tool"] == "write_draft"
    assert refusal.payload["request"] == request.id
    assert drafts(settings.home) == []  # the call never ran
    assert outcome.rows[0].refused_tools == ["write_draft"]
    tool_messages = [m for m in outcome.state["messages"] if isinstance(m, ToolMessage)]
    assert tool_messages[0].content.startswith(REFUSED)


def test_the_gate_refuses_a_tool_that_exists_but_is_not_the_agents(settings):
    deps = make_deps(design(), settings=settings)
    tools = tools_for("reviewer", deps.knowledge, deps.ledger, deps.drafts_dir, "m1-x")
    gate = Gate("reviewer", tools)
    assert [t.name for t in gate.bindable()] == ["check_citations"]
    refused = gate.execute({"name": "write_draft", "args": {"title": "t", "body": "b"}, "id": "1"})
    assert refused.status == "error" and refused.content.startswith(REFUSED)
    assert gate.refused == [{"tool": "write_draft", "args": {"title": "t", "body": "b"}}]
    assert drafts(settings.home) == []
    allowed = gate.execute(
        {"name": "check_citations", "args": {"text": "[kb:dotcom-crash]"}, "id": "2"}
    )
    assert allowed.content.startswith("1 of 1 cited sources exist")


# --------------------------------------------------------------------------- the bus in parallel


def test_two_agents_append_to_the_bus_in_one_super_step_without_error(settings):
    d = design()
    deps = make_deps(d, settings=settings)
    builder = StateGraph(BusState)
    for agent in ("researcher", "reviewer"):
        builder.add_node(
            agent, lambda state, config, agent=agent: worker_node(state, config, deps, agent).update
        )
        builder.add_edge(START, agent)
    graph = builder.compile()
    state = initial_state(QUESTION, d)
    out = Outbox(state, "supervisor")
    out.send("researcher", "request", {"task": f"Search the documents for: {QUESTION}"})
    out.send("reviewer", "request", {"task": "Check the sources cited: [kb:dotcom-crash]"})
    state["bus"] = state["bus"] + out.sent
    steps = {}
    for event in graph.stream(state, stream_mode="debug"):
        if event["type"] == "task_result":
            steps[event["payload"]["name"]] = event["step"]
    assert steps["researcher"] == steps["reviewer"]  # one super-step
    final = graph.invoke(state)
    results = {m.from_: m for m in messages(final) if m.type == "result"}
    assert set(results) == {"researcher", "reviewer"}
    assert final["completed_agents"] == {"researcher", "reviewer"}
    assert final[consumed_field("researcher")] == [out.sent[0].id]
    assert final[consumed_field("reviewer")] == [out.sent[1].id]


def test_the_teaching_scenario_loses_writes_on_a_blackboard_and_none_on_the_bus():
    result = blackboard_vs_bus(QUESTION)
    board, bus = result.blackboard, result.bus
    assert board.parallel_error_type == "InvalidUpdateError"
    assert "At key 'notes'" in board.parallel_error
    lost = {(w["agent"], w["value"].split(":")[0]) for w in board.lost_writes}
    assert ("researcher", "findings") in lost
    assert not board.findings_reached_answer and "findings" not in board.answer
    assert bus.parallel_agents == ["researcher", "writer"] and bus.parallel_error is None
    assert bus.lost_writes == [] and len(bus.writes) == len(bus.bus) == 6
    assert bus.findings_reached_answer and "[kb:dotcom-crash]" in bus.answer
    assert json.loads(json.dumps(result.as_dict()))["bus"]["lost_writes"] == []


def test_the_checkpoint_timeline_shows_the_registry_and_inboxes(settings):
    graph, outcome = run(settings)
    timeline = checkpoint_timeline(graph, outcome.thread_id, BUS.forks.timeline_fields)
    json.dumps(timeline)
    writer_row = next(row for row in timeline if row["node"] == "writer")
    (request,) = requests_to(outcome.state, "writer")
    assert writer_row["diff"][consumed_field("writer")] == {"before": [], "after": [request.id]}
    sent = next(
        row
        for row in timeline
        if row["node"] == "supervisor" and request.id in (row["fields"]["outstanding"] or {})
    )
    assert sent["next"] == ["writer"]


def test_coordination_advice_names_how_the_system_in_use_fits_the_size():
    assert coordination_by_size(4, "supervisor_bus").endswith("This system is that pattern.")
    assert "bottleneck that warns of" in coordination_by_size(7, "supervisor_bus")
    assert "pays off from about six agents" in coordination_by_size(4, "hierarchical_teams")
    assert coordination_by_size(6, "hierarchical_teams").endswith("This system is that pattern.")
    assert "the Executor routes each" in coordination_by_size(5, "plan_execute")
    assert coordination_by_size(4) == coordination_by_size(4, None)  # no system: size only
