"""plan_execute (seed 000): Planner → Executor → sub-agents, with a capped replan loop.

The surface every hosted system offers: ``build_graph`` (a design → a compiled
graph) and ``step_rows`` (a state → the rows of the run table).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.conversation import first_turn, wire
from graph.models.chat import make_chat_model
from graph.plan_execute.agents import AGENTS, enabled_specs
from graph.plan_execute.deps import Deps
from graph.plan_execute.executor import executor_node
from graph.plan_execute.human import human_node
from graph.plan_execute.planner import planner_node
from graph.plan_execute.state import RESET, State
from graph.plan_execute.workers import WORKER_NODES
from graph.prompts import PromptSet
from graph.settings import Settings, get_settings
from graph.tools.database import open_database
from graph.tools.knowledge import default_knowledge_base
from graph.tools.reports import SideEffectLedger

if TYPE_CHECKING:
    from graph.design import Design

SYSTEM = "plan_execute"
ENTRY = "planner"  # where a turn starts


@lru_cache(maxsize=8)
def side_effect_ledger(home: Path) -> SideEffectLedger:
    return SideEffectLedger(home / "side_effects.sqlite")


def _worker_destinations(name: str, nodes: set[str]) -> tuple[str, ...]:
    spec = AGENTS[name]
    if spec.routing == "end":
        return (END,)
    if spec.routing == "chain" and spec.chain_to in nodes:
        return (spec.chain_to, "executor")
    return ("executor",)


def build_graph(design: Design | None = None, *, settings: Settings | None = None,
                checkpointer=None, planner_model=None, worker_model=None) -> CompiledStateGraph:
    """Compile the graph for a design: only enabled agents become nodes, and each node
    declares where it may go, so the drawn graph shows exactly the routes that exist."""
    from graph.design import Design  # graph.design reads this package's catalog

    design = design or Design()
    settings = settings or get_settings()
    enabled = [s.name for s in enabled_specs(design.enabled_agents)]
    nodes = frozenset({"planner", "executor", "human", *enabled})
    prompts = PromptSet(design.prompts)
    deps = Deps(
        settings=settings,
        planner_model=planner_model or make_chat_model("planner", settings, prompts=prompts),
        worker_model=worker_model or make_chat_model("worker", settings, prompts=prompts),
        prompts=prompts,
        knowledge=default_knowledge_base(), database=open_database(),
        enabled=enabled, max_replans=design.max_replans, nodes=nodes,
        approvals={a: design.approval_policy(a) for a in enabled},
        escalate_at_cap=design.escalate_at_cap, ledger=side_effect_ledger(settings.home))
    builder = StateGraph(State)
    builder.add_node("planner", partial(planner_node, deps=deps), destinations=("executor", END))
    planned = tuple(s.name for s in enabled_specs(enabled) if s.planned)
    builder.add_node("executor", partial(executor_node, deps=deps),
                     destinations=(*planned, "planner", "human", END))
    # Where people come in: approvals of flagged steps, escalations at the replan cap.
    builder.add_node("human", partial(human_node, deps=deps),
                     destinations=(*planned, "planner", "human", END))
    for name in enabled:
        builder.add_node(name, partial(WORKER_NODES[name], deps=deps),
                         destinations=_worker_destinations(name, nodes))
    builder.add_edge(START, ENTRY)
    wire(builder, design, system=SYSTEM, entry=ENTRY, model=deps.planner_model,
         prompts=deps.prompts, settings=deps.settings)
    # Without a checkpointer a human's approval could not pause the run: keep one in memory.
    from graph.runs import memory_checkpointer  # graph.runs imports the systems

    return builder.compile(checkpointer=checkpointer if checkpointer is not None else memory_checkpointer(),
                           name=SYSTEM)


def initial_state(question: str, design: Design) -> dict:
    from langchain_core.messages import HumanMessage

    return {"messages": [HumanMessage(content=question, name="user")], "user_query": question,
            "enabled_agents": list(design.enabled_agents), "current_step": 0,
            "replan_flag": False, "replan_attempts": {}, **first_turn(question, design)}


def new_turn(state: dict, text: str, design: Design) -> dict:
    """A follow-up message starts a new plan in the same thread: the per-turn fields start
    afresh; messages, plan history, sources and datasets stay (the synthesizer may cite
    what earlier turns found)."""
    return {"user_query": text, "plan": None, "current_step": 0, "agent_query": None,
            "last_reason": None, "replan_flag": False, "replan_attempts": {RESET: True},
            "step_status": {RESET: True}, "step_results": {RESET: True},
            "step_runs": {RESET: True},
            "human_request": None, "chart_spec": None, "chart_caption": None,
            "final_answer": None, "citations": None, "outcome": None, "outcome_reason": None}


@dataclass
class StepRow:
    step: int
    agent: str
    action: str
    status: str  # pending / running / done / replanned / skipped / failed
    replans: int
    result: str
    duration_s: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def step_rows(state: dict, durations: dict[str, float] | None = None) -> list[StepRow]:
    """One row per step of the current plan, for the run table and the command line."""
    plan = state.get("plan") or {}
    status = state.get("step_status") or {}
    attempts = state.get("replan_attempts") or {}
    results = state.get("step_results") or {}
    failed = state.get("outcome") == "failed"
    rows = []
    for key in sorted(plan, key=int):
        s = status.get(key, "pending")
        if failed and s in ("running", "replanned"):
            s = "failed"
        rows.append(StepRow(int(key), plan[key]["agent"], plan[key]["action"], s,
                            attempts.get(key, 0), results.get(key, ""),
                            (durations or {}).get(key)))
    return rows


def snapshot(state: dict) -> dict:
    """What the run page shows of a state, small and JSON-safe (no messages: those
    are stored with the update events that added them)."""
    return {
        "rows": [r.as_dict() for r in step_rows(state)],
        "plan": state.get("plan") or {},
        "plan_history": state.get("plan_history") or [],
        "current_step": state.get("current_step"),
        "agent_query": state.get("agent_query"),
        "last_reason": state.get("last_reason"),
        "replan_flag": state.get("replan_flag"),
        "replan_attempts": state.get("replan_attempts") or {},
        "notices": state.get("notices") or [],
        "sources": state.get("sources") or [],
        "datasets": [{k: d.get(k) for k in ("id", "step", "sql", "columns", "truncated")}
                     | {"row_count": len(d.get("rows") or [])}
                     for d in state.get("datasets") or []],
        "chart_spec": state.get("chart_spec"),
        "chart_caption": state.get("chart_caption"),
        "final_answer": state.get("final_answer"),
        "citations": state.get("citations") or [],
        "outcome": state.get("outcome"),
        "outcome_reason": state.get("outcome_reason"),
    }
