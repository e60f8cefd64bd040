"""The teaching scenario of docs/systems/supervisor_bus.md: one three-agent task on a shared blackboard and on a bus.

A planner, a researcher and a writer answer a question in four steps: the planner
plans; the researcher researches while the writer sketches an outline (one parallel
step); the planner revises the plan; the writer drafts the answer.

- On a flat shared state without reducers (a blackboard), the parallel step makes
  LangGraph raise ``InvalidUpdateError`` (failure mode 1: two writes to one key in
  one super-step). Run one agent at a time instead and nothing fails, but each write
  to the shared ``notes`` replaces the last: the researcher's findings are gone before
  the writer drafts, silently, visible only by comparing checkpoints.
- On the bus each agent appends typed messages to its addressees; the same parallel
  step merges, and every message written is still there at the end: nothing is lost.

No model is involved: the agents are fixed functions, so the result is the same every
time and only the coordination differs. ``blackboard_vs_bus`` returns both sides for a
page to show side by side.
"""

from __future__ import annotations

import operator
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Iterator, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.errors import InvalidUpdateError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from graph.kernel.checkpoints import memory_checkpointer
from graph.supervisor_bus.bus import Outbox, inbox, messages, preview
from graph.supervisor_bus.state import STATE_TYPES, Message, consumed_field
from graph.tools.knowledge import default_knowledge_base

TASK = (
    "Three agents answer a question: the planner plans; the researcher researches "
    "while the writer sketches an outline (one parallel step); the planner revises the "
    "plan; the writer drafts the answer."
)
QUESTION = "What caused the dot-com crash?"


def _node_writes(
    graph: CompiledStateGraph, run_input: dict, config: RunnableConfig
) -> Iterator[tuple[int, str, dict]]:
    """(super-step, node, update) for every node that finished, in order."""
    for event in graph.stream(run_input, config, stream_mode="debug"):
        if event["type"] == "task_result" and not event["payload"].get("error"):
            result = event["payload"].get("result") or {}
            yield event["step"], event["payload"]["name"], dict(result)


def _findings(question: str) -> str:
    hits = default_knowledge_base().search(question, limit=2)
    return "; ".join(f"{h.title} [kb:{h.id}]" for h in hits) or "nothing found"


# --------------------------------------------------------------------------- blackboard


class Blackboard(TypedDict, total=False):
    """A flat shared state: every agent reads and writes the same keys, no reducers."""

    question: str
    notes: str  # the shared scratch field every agent uses
    draft: str


def _blackboard_graph(parallel: bool) -> CompiledStateGraph:
    def planner(state: Blackboard) -> dict:
        return {"notes": f'plan: research "{state["question"]}", then write the answer'}

    def researcher(state: Blackboard) -> dict:
        return {"notes": f"findings: {_findings(state['question'])}"}

    def writer_outline(state: Blackboard) -> dict:
        return {"notes": "outline: causes, then consequences"}

    def planner_revise(state: Blackboard) -> dict:
        return {"notes": "plan v2: the writer drafts the answer now"}

    def writer_draft(state: Blackboard) -> dict:
        return {"draft": f'Draft written from the notes it found: "{state.get("notes", "")}"'}

    builder = StateGraph(Blackboard)
    for name, node in (
        ("planner", planner),
        ("researcher", researcher),
        ("writer", writer_outline),
        ("planner_revises", planner_revise),
        ("writer_drafts", writer_draft),
    ):
        builder.add_node(name, node)
    builder.add_edge(START, "planner")
    if parallel:  # the researcher and the writer in one super-step
        builder.add_edge("planner", "researcher")
        builder.add_edge("planner", "writer")
        builder.add_edge(["researcher", "writer"], "planner_revises")
    else:  # the same agents, one at a time
        builder.add_edge("planner", "researcher")
        builder.add_edge("researcher", "writer")
        builder.add_edge("writer", "planner_revises")
    builder.add_edge("planner_revises", "writer_drafts")
    builder.add_edge("writer_drafts", END)
    return builder.compile(checkpointer=memory_checkpointer(STATE_TYPES), name="blackboard")


AGENT_OF = {
    "planner": "planner",
    "researcher": "researcher",
    "writer": "writer",
    "planner_revises": "planner",
    "writer_drafts": "writer",
}


@dataclass
class BlackboardSide:
    coordination: str
    parallel_agents: list[str]
    parallel_error_type: str | None  # "InvalidUpdateError" when failure mode 1 showed
    parallel_error: str | None
    writes: list[dict[str, Any]]  # the one-at-a-time run: every write, in order
    lost_writes: list[dict[str, Any]]  # writes replaced by a later one, with no error
    final_state: dict[str, Any]
    answer: str
    findings_reached_answer: bool


def run_blackboard(question: str = QUESTION) -> BlackboardSide:
    error_type = error = None
    try:
        _blackboard_graph(parallel=True).invoke(
            {"question": question}, {"configurable": {"thread_id": "parallel"}}
        )
    except InvalidUpdateError as exc:
        error_type, error = type(exc).__name__, str(exc).splitlines()[0]

    graph = _blackboard_graph(parallel=False)
    config: RunnableConfig = {"configurable": {"thread_id": "one-at-a-time"}}
    writes: list[dict[str, Any]] = []
    for step, node, update in _node_writes(graph, {"question": question}, config):
        for key, value in update.items():
            writes.append(
                {"step": step, "agent": AGENT_OF[node], "node": node, "key": key, "value": value}
            )
    final = dict(graph.get_state(config).values)
    lost = []
    for i, w in enumerate(writes):
        later = next((x for x in writes[i + 1 :] if x["key"] == w["key"]), None)
        if later is not None and later["value"] != w["value"]:
            lost.append(
                {
                    **w,
                    "overwritten_by": later["agent"],
                    "overwritten_at_step": later["step"],
                    "overwriting_value": later["value"],
                }
            )
    answer = final.get("draft", "")
    return BlackboardSide(
        "shared blackboard: one flat state, no reducers",
        ["researcher", "writer"],
        error_type,
        error,
        writes,
        lost,
        final,
        answer,
        "findings:" in answer,
    )


# --------------------------------------------------------------------------- bus


class TeachingBus(TypedDict, total=False):
    """The same task's state on a bus: one append-only channel, one inbox field per agent."""

    question: str
    session_id: str
    bus: Annotated[list[Message], operator.add]
    completed_agents: Annotated[set[str], operator.or_]
    planner_consumed: Annotated[list[str], operator.add]
    researcher_consumed: Annotated[list[str], operator.add]
    writer_consumed: Annotated[list[str], operator.add]


def _bus_graph() -> CompiledStateGraph:
    def planner(state: TeachingBus) -> Command:
        out = Outbox(state, "planner")
        out.send("researcher", "request", {"task": f"Research: {state['question']}"})
        out.send("writer", "request", {"task": "Sketch an outline of the answer."})
        return Command(update={"bus": out.sent}, goto=["researcher", "writer"])

    def researcher(state: TeachingBus) -> dict:
        out, mine = Outbox(state, "researcher"), inbox(state, "researcher")
        for m in mine:
            out.send(
                "writer",
                "result",
                {"text": f"findings: {_findings(state['question'])}"},
                in_reply_to=m.id,
            )
        return {
            "bus": out.sent,
            consumed_field("researcher"): [m.id for m in mine],
            "completed_agents": {"researcher"},
        }

    def writer(state: TeachingBus) -> dict:
        out, mine = Outbox(state, "writer"), inbox(state, "writer")
        for m in mine:
            out.send(
                "planner",
                "result",
                {"text": "outline: causes, then consequences"},
                in_reply_to=m.id,
            )
        return {"bus": out.sent, consumed_field("writer"): [m.id for m in mine]}

    def planner_revises(state: TeachingBus) -> dict:
        out, mine = Outbox(state, "planner"), inbox(state, "planner")
        out.send("writer", "request", {"task": "plan v2: draft the answer now"})
        return {"bus": out.sent, consumed_field("planner"): [m.id for m in mine]}

    def writer_drafts(state: TeachingBus) -> dict:
        out, mine = Outbox(state, "writer"), inbox(state, "writer")
        received = " | ".join(m.payload.get("text") or m.payload.get("task", "") for m in mine)
        out.send("planner", "result", {"text": f'Draft written from its inbox: "{received}"'})
        return {
            "bus": out.sent,
            consumed_field("writer"): [m.id for m in mine],
            "completed_agents": {"writer"},
        }

    builder = StateGraph(TeachingBus)
    builder.add_node("planner", planner, destinations=("researcher", "writer"))
    for name, node in (
        ("researcher", researcher),
        ("writer", writer),
        ("planner_revises", planner_revises),
        ("writer_drafts", writer_drafts),
    ):
        builder.add_node(name, node)
    builder.add_edge(START, "planner")
    builder.add_edge(["researcher", "writer"], "planner_revises")
    builder.add_edge("planner_revises", "writer_drafts")
    builder.add_edge("writer_drafts", END)
    return builder.compile(checkpointer=memory_checkpointer(STATE_TYPES), name="bus")


@dataclass
class BusSide:
    coordination: str
    parallel_agents: list[str]
    parallel_error_type: str | None
    parallel_error: str | None
    writes: list[dict[str, Any]]  # every message appended, in order, with its step
    lost_writes: list[dict[str, Any]]  # written but no longer on the bus: none
    bus: list[dict[str, Any]]
    answer: str
    findings_reached_answer: bool


def run_bus(question: str = QUESTION) -> BusSide:
    graph = _bus_graph()
    config: RunnableConfig = {"configurable": {"thread_id": "bus"}}
    writes: list[dict[str, Any]] = []
    error_type = error = None
    try:
        for step, node, update in _node_writes(
            graph, {"question": question, "session_id": "teaching"}, config
        ):
            for m in update.get("bus") or []:
                writes.append(
                    {
                        "step": step,
                        "agent": AGENT_OF[node],
                        "node": node,
                        "key": "bus",
                        "id": m.id,
                        "to": m.to,
                        "type": m.type,
                        "value": preview(m.payload),
                    }
                )
    except InvalidUpdateError as exc:  # not expected: the bus has reducers
        error_type, error = type(exc).__name__, str(exc).splitlines()[0]
    steps: dict[int, list[str]] = {}
    for w in writes:
        steps.setdefault(w["step"], [])
        if w["agent"] not in steps[w["step"]]:
            steps[w["step"]].append(w["agent"])
    parallel = next((sorted(agents) for agents in steps.values() if len(agents) > 1), [])
    final = graph.get_state(config).values
    bus = messages(final)
    present = {m.id for m in bus}
    lost = [w for w in writes if w["id"] not in present]
    answer = next(
        (
            m.payload.get("text", "")
            for m in reversed(bus)
            if m.from_ == "writer" and m.to == "planner" and m.in_reply_to is None
        ),
        "",
    )
    table = [
        {
            "id": m.id,
            "from": m.from_,
            "to": m.to,
            "type": m.type,
            "payload": preview(m.payload),
            "in_reply_to": m.in_reply_to,
        }
        for m in bus
    ]
    return BusSide(
        "message bus: typed messages appended to one channel, an inbox per agent",
        parallel,
        error_type,
        error,
        writes,
        lost,
        table,
        answer,
        "findings:" in answer,
    )


@dataclass
class TeachingResult:
    task: str
    question: str
    blackboard: BlackboardSide
    bus: BusSide
    lessons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def blackboard_vs_bus(question: str = QUESTION) -> TeachingResult:
    """Run the same three-agent task both ways; both sides, for a page to show side by side."""
    board, bus = run_blackboard(question), run_bus(question)
    lessons = [
        f"Blackboard, parallel step: {board.parallel_error_type or 'no error'} "
        f"({board.parallel_error or 'the writes merged'}).",
        f"Blackboard, one agent at a time: no error, but {len(board.lost_writes)} write(s) "
        "replaced by a later one"
        + (
            ", including the researcher's findings, so the draft never saw them."
            if not board.findings_reached_answer
            else "."
        ),
        f"Bus: the parallel step merged ({bus.parallel_error or 'no error'}); "
        f"{len(bus.writes)} message(s) written, {len(bus.lost_writes)} lost; the draft "
        + ("used the findings." if bus.findings_reached_answer else "missed the findings."),
    ]
    return TeachingResult(TASK, question, board, bus, lessons)
