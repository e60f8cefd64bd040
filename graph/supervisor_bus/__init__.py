"""supervisor_bus (seed 001): a supervisor routing typed messages on an append-only bus.

The surface every hosted system offers: ``build_graph`` (a design → a compiled
graph), ``initial_state``, ``snapshot`` (a state → what the Run page shows) and
``step_rows`` (a state → the rows of the run table). The teaching scenario (shared
blackboard vs. bus) is ``graph.supervisor_bus.teaching.blackboard_vs_bus``.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.conversation import first_turn, wire
from graph.models.chat import make_chat_model
from graph.plan_execute import side_effect_ledger
from graph.prompts import PromptSet
from graph.settings import Settings, get_settings
from graph.supervisor_bus.agents import AGENTS, enabled_specs
from graph.supervisor_bus.bus import Outbox, answer_to, messages, preview
from graph.supervisor_bus.deps import Deps
from graph.supervisor_bus.human import human_node
from graph.supervisor_bus.state import BusState, consumed_field
from graph.supervisor_bus.supervisor import supervisor_node
from graph.supervisor_bus.workers import worker_node
from graph.tools.knowledge import default_knowledge_base

if TYPE_CHECKING:
    from graph.design import Design

SYSTEM = "supervisor_bus"
ENTRY = "supervisor"  # where a turn starts
INBOX_OWNERS = ("supervisor", "human", *AGENTS)
# What the checkpoint timeline shows and diffs: the registry and every inbox, so a
# replay from a stale checkpoint shows which messages it will handle again.
TIMELINE_FIELDS = ("current_step", "outstanding", "escalated", "dead_letters",
                   "completed_agents", *(consumed_field(o) for o in INBOX_OWNERS),
                   "final_answer")


def build_graph(design: Design | None = None, *, settings: Settings | None = None,
                checkpointer=None, planner_model=None, worker_model=None) -> CompiledStateGraph:
    """Compile the graph for a design: the supervisor hub, the human node, and only the
    enabled workers, each declaring where it may go (``planner_model`` is the
    supervisor's model, as the Planner/Executor's in plan_execute)."""
    from graph.design import Design  # graph.design reads the system registry

    design = design or Design(system=SYSTEM)
    deps = make_deps(design, settings=settings, planner_model=planner_model,
                     worker_model=worker_model)
    enabled = deps.enabled
    builder = StateGraph(BusState)
    builder.add_node("supervisor", partial(supervisor_node, deps=deps),
                     destinations=(*enabled, "human", END))
    builder.add_node("human", partial(human_node, deps=deps), destinations=("supervisor", "human"))
    for name in enabled:
        builder.add_node(name, partial(worker_node, deps=deps, agent=name),
                         destinations=("supervisor",))
    builder.add_edge(START, ENTRY)
    wire(builder, design, system=SYSTEM, entry=ENTRY, model=deps.supervisor_model,
         prompts=deps.prompts, settings=deps.settings)
    # Without a checkpointer a human's answer could not resume the run: keep one in memory.
    from graph.runs import memory_checkpointer  # graph.runs imports the systems

    return builder.compile(checkpointer=checkpointer if checkpointer is not None else memory_checkpointer(),
                           name=SYSTEM)


def make_deps(design: Design, *, settings: Settings | None = None, planner_model=None,
              worker_model=None) -> Deps:
    """What the nodes of one compiled graph share: models, prompts, tools, limits."""
    settings = settings or get_settings()
    enabled = [s.name for s in enabled_specs(design.enabled_agents)]
    prompts = PromptSet(design.prompts)
    return Deps(
        settings=settings,
        supervisor_model=planner_model or make_chat_model("planner", settings, prompts=prompts),
        worker_model=worker_model or make_chat_model("worker", settings, prompts=prompts),
        prompts=prompts, knowledge=default_knowledge_base(),
        ledger=side_effect_ledger(settings.home), drafts_dir=settings.home / "drafts",
        enabled=enabled, nodes=frozenset({"supervisor", "human", *enabled}),
        timeout_s=design.bus_timeout_s, max_rounds=4 * len(enabled) + 4,
        approvals={a: design.approval_policy(a) for a in enabled})


def initial_state(question: str, design: Design) -> dict:
    """The question is the first message on the bus: from the user, to the supervisor."""
    from langchain_core.messages import HumanMessage

    state = {"session_id": uuid.uuid4().hex, "bus": []}
    ask = Outbox(state, "user").send("supervisor", "request", {"question": question})
    return {**state, "bus": [ask],
            "messages": [HumanMessage(content=question, name="user")], "user_query": question,
            "enabled_agents": list(design.enabled_agents), "current_step": 0,
            "outstanding": {}, "timeout_s": design.bus_timeout_s, "turn_start": 0,
            **first_turn(question, design)}


def new_turn(state: dict, text: str, design: Design) -> dict:
    """A follow-up message is a new request from the user on the bus; the supervisor's
    rounds count again from 0 and it reads who answered from this turn's start."""
    ask = Outbox(state, "user").send("supervisor", "request", {"question": text})
    return {"bus": [ask], "user_query": text, "current_step": 0,
            "turn_start": len(state.get("bus") or []), "final_answer": None, "outcome": None,
            "outcome_reason": None}


@dataclass
class RequestRow:
    """One request the supervisor sent a worker: the run table of this system."""

    step: int  # the supervisor's round that sent it
    agent: str
    task: str
    status: str  # waiting / answered / error / escalated / retried / reassigned / dropped
    answer: str
    time_to_answer_s: float | None
    message_id: str
    refused_tools: list[str]

    def as_dict(self) -> dict:
        return asdict(self)


def step_rows(state: dict, durations: dict[str, float] | None = None) -> list[RequestRow]:
    """One row per request to a worker, in the order they were sent."""
    bus = messages(state)
    rounds = {d.get("request_id"): d["round"] for d in state.get("decisions") or []}
    dead = state.get("dead_letters") or {}
    outstanding = state.get("outstanding") or {}
    rows = []
    for m in bus:
        if m.type != "request" or m.from_ != "supervisor" or m.to not in AGENTS:
            continue
        answer = answer_to(bus, m.id)
        if answer is not None:
            status = "answered" if answer.type == "result" else "error"
        elif m.id in dead:
            resolution = dead[m.id].get("resolution", "escalated")
            status = {"waiting for a human": "escalated"}.get(resolution, resolution).split(" ")[0]
        elif m.id in outstanding:
            status = "waiting"
        else:
            status = "unanswered"
        refused = [e.payload.get("tool", "") for e in bus
                   if e.type == "error" and e.payload.get("request") == m.id]
        rows.append(RequestRow(
            rounds.get(m.id, 0), m.to, m.payload.get("task", ""), status,
            preview(answer.payload, 300) if answer else "",
            round(answer.sent_at - m.sent_at, 3) if answer else None, m.id, refused))
    return rows


def snapshot(state: dict, now: float | None = None) -> dict:
    """What the Run page shows of a state, small and JSON-safe: the bus table, the
    outstanding registry with time left, dead letters and the supervisor's decisions."""
    now = now or time.time()
    bus = messages(state)
    timeout = float(state.get("timeout_s") or 0)
    consumed = {owner: set(state.get(consumed_field(owner)) or []) for owner in INBOX_OWNERS}
    to = {m.id: m.to for m in bus}
    table = []
    for m in bus:
        answer = answer_to(bus, m.id) if m.type == "request" else None
        table.append({
            "id": m.id, "from": m.from_, "to": m.to, "type": m.type,
            "payload": preview(m.payload), "in_reply_to": m.in_reply_to, "sent_at": m.sent_at,
            "consumed_by": [o for o in INBOX_OWNERS if m.id in consumed[o]],
            "time_to_answer_s": round(answer.sent_at - m.sent_at, 3) if answer else None})
    return {
        "system": SYSTEM,
        "rows": [r.as_dict() for r in step_rows(state)],
        "bus": table,
        "outstanding": [{"message_id": mid, "to": to.get(mid, "?"), "sent_at": at,
                         "timeout_s": timeout,
                         "time_left_s": round(max(0.0, at + timeout - now), 3)}
                        for mid, at in (state.get("outstanding") or {}).items()],
        "dead_letters": list((state.get("dead_letters") or {}).values()),
        "escalated": sorted(state.get("escalated") or []),
        "decisions": list(state.get("decisions") or []),
        "completed_agents": sorted(state.get("completed_agents") or []),
        "approvals": list(state.get("approvals") or []),
        "current_step": state.get("current_step"),
        "user_query": state.get("user_query"),
        "timeout_s": timeout,
        "notices": state.get("notices") or [],
        "final_answer": state.get("final_answer"),
        "outcome": state.get("outcome"),
        "outcome_reason": state.get("outcome_reason"),
    }
