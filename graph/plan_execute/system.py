"""plan_execute as a hosted system: its graph, its state at a glance, its forks and the
requests its hubs send (what its pages say is in ``ui/systems/plan_execute.py``).

The graph: Planner → Executor → the enabled sub-agents (each declaring where it may go,
so the drawn graph shows exactly the routes that exist), and a human node for approvals
and escalations at the replan cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, AbstractSet, Any, ClassVar, cast

from langchain_core.messages import HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from graph.agents.user_agents import define
from graph.kernel.conversation import first_turn
from graph.kernel.design import Design
from graph.kernel.ledger import side_effect_ledger
from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.kernel.system import System
from graph.kernel.system_parts import Ability, Forks, Prompts, Shape
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.models.chat import role_models
from graph.plan_execute import agents, offline_rules, prompts
from graph.plan_execute.agents import AGENTS, enabled_specs, spec_of
from graph.plan_execute.deps import Deps
from graph.plan_execute.executor import executor_ask, executor_node
from graph.plan_execute.fork_plan import read_plan
from graph.plan_execute.human import human_node
from graph.plan_execute.planner import planner_ask, planner_node
from graph.plan_execute.settings_model import PlanSettings
from graph.plan_execute.state import RESET, State
from graph.plan_execute.workers import WORKER_NODES, user_agent_node
from graph.prompts import PromptSet
from graph.settings import get_settings
from graph.tools.database import open_database
from graph.tools.knowledge import default_knowledge_base

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.types import Checkpointer

    from graph.settings import Settings

ROUTE_STYLE = {
    "executor": {"color": "#1f77b4"},  # back to the executor
    "chain": {"color": "#2ca02c", "penwidth": "2"},  # fixed chain
    "end": {"color": "#d62728"},  # ends the run
}


@dataclass
class StepRow:
    step: int
    agent: str
    action: str
    status: str  # pending / running / done / replanned / skipped / failed
    replans: int
    result: str

    def as_dict(self) -> dict:
        # Every field is a scalar: a plain copy, not asdict's deep one (rows are made
        # for every state event of a run).
        return dict(vars(self))


def _worker_destinations(name: str, nodes: AbstractSet[str]) -> tuple[str, ...]:
    spec = spec_of(name)
    if spec is None:
        return ("executor",)
    if spec.routing == "end":
        return (END,)
    if spec.routing == "chain" and spec.chain_to is not None and spec.chain_to in nodes:
        return (spec.chain_to, "executor")
    return ("executor",)


class PlanShape(Shape):
    def edge_style(self, source: str, target: str) -> dict[str, str]:
        spec = spec_of(source)
        if spec is None:
            return {}
        if target == "__end__":
            return ROUTE_STYLE["end"]
        if spec.routing == "chain" and target == spec.chain_to:
            return ROUTE_STYLE["chain"]
        return ROUTE_STYLE["executor"] if target == "executor" else {}

    def design_warnings(self, enabled: list[str]) -> list[str]:
        return agents.design_warnings(enabled)


class PlanForks(Forks):
    def check_fork_change(self, field: str, text: str, design: Design) -> Any:
        """A plan typed for a fork (the table's rows, or the map), checked like the
        Planner's own; ValueError names the step that is wrong."""
        if field != "plan":
            return super().check_fork_change(field, text, design)
        return read_plan(text, design)


class PlanPrompts(Prompts):
    def node_ask(
        self, node: str, state: dict, design: Design, at: float, settings: Settings | None = None
    ) -> NodeAsk:
        if node == "planner":
            return NodeAsk(
                node,
                "plan_execute/planner",
                "planner",
                lambda p: planner_ask(cast(State, state), p),
            )
        if node == "executor":
            if state.get("replan_flag"):
                raise NotTryable(
                    "Here the Executor runs the step the Planner just revised without asking "
                    "its model: choose the checkpoint after that step, where it judges it."
                )
            return NodeAsk(
                node,
                "plan_execute/executor",
                "planner",
                lambda p: executor_ask(
                    cast(State, state), p, design.settings_of(PlanSettings).max_replans
                ),
            )
        return super().node_ask(node, state, design, at, settings)

    def prompt_node(self, name: str) -> str | None:
        short = name.split("/", 1)[-1]
        return "planner" if short.startswith("planner") else super().prompt_node(name)

    def preview_prompt(
        self, name: str, text: str, state: dict | None = None, design: Design | None = None
    ) -> str:
        return prompts.preview_prompt(
            name,
            text,
            state,
            max_replans=design.settings_of(PlanSettings).max_replans if design else 3,
        )


class PlanExecute(System):
    name = "plan_execute"
    title = "Planner / Executor"
    offline_rules: ClassVar[ModuleType] = offline_rules
    agents = AGENTS
    shape = PlanShape(
        "planner",
        # Its Planner picks any agent by its description; its Executor hands a step to any
        # worker and takes it back: a user agent is one more such worker.
        takes_user_agents=True,
        hubs=frozenset({"planner", "executor"}),
        router="executor",
        abilities=(
            Ability("make charts", r"\b(chart|plot|visuali[sz]e)", ("chart_generator",)),
            Ability(
                "write or save a report",
                r"\b(write|save|create|produce) (me )?(a |the )?(report|draft)\b",
                ("report_writer",),
            ),
            Ability(
                "query the stock database",
                r"\b(stock|share) prices?\b|\bdatabase\b|\bsql\b",
                ("data_researcher",),
            ),
        ),
    )
    forks = PlanForks(
        timeline_fields=(
            "plan",
            "current_step",
            "agent_query",
            "last_reason",
            "replan_flag",
            "replan_attempts",
            "step_status",
            "step_results",
            "human_request",
        ),
        fork_fields=("plan", "agent_query"),
    )
    prompts = PlanPrompts(
        "plan_execute",
        tuned={"planner": "plan_execute/planner", "executor": "plan_execute/executor"},
        nodes=frozenset(AGENTS) | {"planner", "executor"},
    )
    settings_model = PlanSettings

    # ------------------------------------------------------------------ the graph

    def build_graph(
        self,
        design: Design | None = None,
        *,
        settings: Settings | None = None,
        checkpointer: Checkpointer = None,
        planner_model: BaseChatModel | None = None,
        worker_model: BaseChatModel | None = None,
    ) -> CompiledStateGraph:
        design = design or Design(system=self.name)
        settings = settings or get_settings()
        define(design.user_agents)
        own_agents = {a.name: a for a in design.user_agents}
        enabled = [s.name for s in enabled_specs(design.enabled_agents)]
        nodes = frozenset({"planner", "executor", "human", *enabled})
        texts = PromptSet(design.prompts)
        own = design.settings_of(PlanSettings)
        planner, worker = role_models(settings, texts, planner_model, worker_model)
        deps = Deps(
            settings=settings,
            planner_model=planner,
            worker_model=worker,
            prompts=texts,
            knowledge=default_knowledge_base(),
            database=open_database(),
            enabled=enabled,
            max_replans=own.max_replans,
            nodes=nodes,
            approvals={a: design.approval_policy(a) for a in enabled},
            escalate_at_cap=own.escalate_at_cap,
            ledger=side_effect_ledger(settings),
        )
        builder = SystemGraph(State)
        builder.add_node(
            "planner", partial(planner_node, deps=deps), destinations=("executor", END)
        )
        planned = tuple(s.name for s in enabled_specs(enabled) if s.planned)
        builder.add_node(
            "executor",
            partial(executor_node, deps=deps),
            destinations=(*planned, "planner", "human", END),
        )
        # Where people come in: approvals of flagged steps, escalations at the replan cap.
        builder.add_node(
            "human",
            partial(human_node, deps=deps),
            destinations=(*planned, "planner", "human", END),
        )
        for name in enabled:
            node = (
                partial(user_agent_node, deps=deps, agent=own_agents[name])
                if name in own_agents
                else partial(WORKER_NODES[name], deps=deps)
            )
            builder.add_node(
                name,
                node,
                destinations=_worker_destinations(name, nodes),
            )
        return compile_graph(
            builder,
            design,
            system=self,
            checkpointer=checkpointer,
            model=deps.planner_model,
            prompts=deps.prompts,
            settings=deps.settings,
        )

    def initial_state(self, question: str, design: Design) -> dict:
        return {
            "messages": [HumanMessage(content=question, name="user")],
            "user_query": question,
            "enabled_agents": list(design.enabled_agents),
            "current_step": 0,
            "replan_flag": False,
            "replan_attempts": {},
            **first_turn(question, design, self.shape.entry),
        }

    def new_turn(self, state: dict, text: str, design: Design) -> dict:
        """A follow-up message starts a new plan in the same thread: the per-turn fields
        start afresh; messages, plan history, sources and datasets stay (the synthesizer
        may cite what earlier turns found)."""
        return {
            "user_query": text,
            "plan": None,
            "current_step": 0,
            "agent_query": None,
            "last_reason": None,
            "replan_flag": False,
            "replan_attempts": {RESET: True},
            "step_status": {RESET: True},
            "step_results": {RESET: True},
            "step_runs": {RESET: True},
            "human_request": None,
            "chart_spec": None,
            "chart_caption": None,
            "final_answer": None,
            "citations": None,
            "outcome": None,
            "outcome_reason": None,
        }

    # ------------------------------------------------------------------ what it shows

    def step_rows(self, state: dict) -> list[StepRow]:
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
            rows.append(
                StepRow(
                    int(key),
                    plan[key]["agent"],
                    plan[key]["action"],
                    s,
                    attempts.get(key, 0),
                    results.get(key, ""),
                )
            )
        return rows

    def snapshot(self, state: dict) -> dict:
        rows = [r.as_dict() for r in self.step_rows(state)]
        attempts = state.get("replan_attempts") or {}
        return {
            "system": self.name,
            "rows": rows,
            "counts": {
                "steps": len(rows),
                "replans": sum(int(v or 0) for v in attempts.values()),
            },
            "plan": state.get("plan") or {},
            "plan_history": state.get("plan_history") or [],
            "current_step": state.get("current_step"),
            "agent_query": state.get("agent_query"),
            "last_reason": state.get("last_reason"),
            "replan_flag": state.get("replan_flag"),
            "replan_attempts": state.get("replan_attempts") or {},
            "notices": state.get("notices") or [],
            "sources": state.get("sources") or [],
            "datasets": [
                {k: d.get(k) for k in ("id", "step", "sql", "columns", "truncated")}
                | {"row_count": len(d.get("rows") or [])}
                for d in state.get("datasets") or []
            ],
            "chart_spec": state.get("chart_spec"),
            "chart_caption": state.get("chart_caption"),
            "final_answer": state.get("final_answer"),
            "citations": state.get("citations") or [],
            "outcome": state.get("outcome"),
            "outcome_reason": state.get("outcome_reason"),
        }


SYSTEM = PlanExecute()
