"""plan_execute as a hosted system: its graph, its state at a glance, what its pages say.

The graph: Planner → Executor → the enabled sub-agents (each declaring where it may go,
so the drawn graph shows exactly the routes that exist), and a human node for approvals
and escalations at the replan cap.

Over 400 lines: the System contract's members for this system (graph, snapshot, panels,
fork checks, texts), each short; the contract is what ties them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, AbstractSet, Any, ClassVar, cast

from langchain_core.messages import HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from graph.kernel.conversation import first_turn
from graph.kernel.design import Design
from graph.kernel.ledger import side_effect_ledger
from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.kernel.system import (
    Ability,
    ApprovalView,
    ForkTable,
    Panel,
    RunFacts,
    System,
)
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.models.chat import role_models
from graph.plan_execute import agents, offline_rules, prompts
from graph.plan_execute.agents import AGENTS, enabled_specs
from graph.plan_execute.deps import Deps
from graph.plan_execute.executor import executor_ask, executor_node
from graph.plan_execute.fork_plan import plan_table, read_plan
from graph.plan_execute.human import human_node
from graph.plan_execute.planner import planner_ask, planner_node
from graph.plan_execute.settings_model import PlanSettings
from graph.plan_execute.state import RESET, State
from graph.plan_execute.workers import WORKER_NODES
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


# What each hub does with the state when it runs next (step mode explains the pause).
NODE_ROLES = {
    "planner": "writes the plan from the question, or revises the current step when "
    "replan_flag is set, reading last_reason",
    "executor": "reads the plan, current_step and the step's result, then picks the agent "
    "to run (writing agent_query), asks for a replan, or moves on",
    "human": "stops and asks a person to decide on the step in human_request",
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
    spec = AGENTS[name]
    if spec.routing == "end":
        return (END,)
    if spec.routing == "chain" and spec.chain_to is not None and spec.chain_to in nodes:
        return (spec.chain_to, "executor")
    return ("executor",)


class PlanExecute(System):
    name = "plan_execute"
    title = "Planner / Executor"
    summary = (
        "A Planner writes numbered steps; an Executor routes each step to one agent and "
        "asks for a new plan when a step fails."
    )
    intro = (
        "The **Planner** turns a question into numbered steps; the **Executor** hands "
        "each step to one of the agents below and asks for a new plan when a step fails."
    )
    always_on = "The Planner and the Executor are always on."
    offline_rules: ClassVar[ModuleType] = offline_rules
    examples = (
        "Which stock in the database grew the most between 2005 and 2009? Chart the prices.",
        "What happened to Apple when it launched the iPhone, and how did its stock price "
        "change in 2007?",
        "How did Tesla's stock do in 2008?",
        "What caused the dot-com crash and how much did Amazon's price fall from 2000 to 2001?",
    )
    entry = "planner"
    agents = AGENTS
    hubs = frozenset({"planner", "executor"})
    router = "executor"
    settings_model = PlanSettings
    count_labels = {"steps": "Steps", "replans": "Replans"}
    abilities = (
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
    )
    timeline_fields = (
        "plan",
        "current_step",
        "agent_query",
        "last_reason",
        "replan_flag",
        "replan_attempts",
        "step_status",
        "step_results",
        "human_request",
    )
    field_labels = {
        "current_step": "Step",
        "plan": "Plan",
        "agent_query": "Agent query",
        "last_reason": "Last reason",
        "replan_flag": "Replan flag",
        "replan_attempts": "Replan attempts",
        "step_status": "Step status",
        "step_results": "Results",
        "human_request": "Asks a human",
    }
    fork_fields = ("plan", "agent_query")
    tuned_prompts = {"planner": "plan_execute/planner", "executor": "plan_execute/executor"}
    rejected = "reject the step (the Planner revises it)"
    approvals_note = (
        "A run stops **before** a flagged step and waits: approve it, edit the "
        "query the agent will get and approve, reject it with a reason (the "
        "Planner revises the step), or skip it. A step that reached its replan "
        "cap asks too (escalation), and may be retried."
    )
    graph_legend = (
        "Dashed: a route the node may choose. Blue: back to the executor; green: "
        "fixed chain; red: ends the run. The human node asks a person to approve a "
        "flagged step, or one at its replan cap, before it goes on."
    )
    working = "The Planner is writing the plan…"
    before_first_step = "the first plan, written before step 1"
    answer_pending = "The final answer appears here when the synthesizer has written it."

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
            builder.add_node(
                name,
                partial(WORKER_NODES[name], deps=deps),
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
            **first_turn(question, design, self.entry),
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
        return {
            "system": self.name,
            "rows": [r.as_dict() for r in self.step_rows(state)],
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

    def counts(self, snapshot: dict) -> dict[str, int]:
        return {
            "steps": len(snapshot.get("rows") or []),
            "replans": sum(int(v or 0) for v in (snapshot.get("replan_attempts") or {}).values()),
        }

    def facts(self, snapshot: dict, counts: dict[str, int]) -> list[str]:
        return [f"{counts.get('steps', 0)} step(s)", f"{counts.get('replans', 0)} replan(s)"]

    def panels(self, snapshot: dict, facts: RunFacts) -> list[Panel]:
        steps = []
        for r in snapshot.get("rows") or []:
            cells = facts.step_cells(r["step"])  # a human's decision reads before the replans
            steps.append(
                {
                    "Step": r["step"],
                    "Agent": r["agent"],
                    "Action": r["action"],
                    "Status": r["status"],
                    **facts.marks(r["step"]),
                    "Decision": cells.pop("Decision", ""),
                    "Replans": r["replans"],
                    **cells,
                }
            )
        history = snapshot.get("plan_history") or []
        items = []
        for version in history:
            reason = version.get("reason") or ""
            replanned = reason and reason != "initial plan"
            items.append(
                {
                    "label": f"Plan v{version.get('version')}"
                    + (f" — replanned at step {version.get('step')}" if replanned else ""),
                    "text": f"**Why the Executor asked for it:** {reason}" if replanned else "",
                    "rows": [
                        {
                            "Step": int(k),
                            "Agent": b.get("agent", "?"),
                            "Action": b.get("action", ""),
                        }
                        for k, b in sorted(
                            (version.get("plan") or {}).items(), key=lambda kv: int(kv[0])
                        )
                    ],
                    "open": len(history) > 1 and version is history[-1],
                }
            )
        return [
            Panel(
                "steps",
                "Steps",
                steps,
                status_column="Status",
                lead_columns=("Step", "Agent", "Status", "Replans"),
                empty=self.working
                if facts.live
                else (
                    f"No plan yet: the run is paused before {facts.paused_next}."
                    if facts.paused_next
                    else "This run has no plan steps."
                ),
            ),
            Panel("plans", "Plan history", items=items, empty="No plan yet."),
        ]

    def row_line(self, row: dict) -> str:
        return (
            f"step {row['step']} | {row['agent']:<16} | {row['status']:<9} | replans "
            f"{row['replans']} | {row['action']}"
        )

    def progress(self, before: dict, after: dict) -> list[str]:
        """New plan versions, then each step whose status or replan count changed."""
        lines = []
        for version in (after.get("plan_history") or [])[len(before.get("plan_history") or []) :]:
            why = "" if version["reason"] == "initial plan" else f" ({version['reason']})"
            lines.append(f"plan v{version['version']}{why}:")
            lines += [
                f"  {key}. {block['agent']}: {block['action']}"
                for key, block in version["plan"].items()
            ]
        seen = {r["step"]: (r["status"], r["replans"]) for r in before.get("rows") or []}
        return lines + [
            self.row_line(r)
            for r in after.get("rows") or []
            if seen.get(r["step"], ("pending", 0)) != (r["status"], r["replans"])
        ]

    def outcome_lines(self, snapshot: dict) -> list[str]:
        lines = []
        if spec := snapshot.get("chart_spec"):
            lines.append(
                f"chart: Vega-Lite spec, {len(spec['data']['values'])} points, "
                f"title {spec.get('title')!r}"
            )
            if snapshot.get("chart_caption"):
                lines.append(f"caption: {snapshot['chart_caption']}")
        return lines + super().outcome_lines(snapshot)

    def limits(self, design: Design) -> str:
        return f"at most {design.settings_of(PlanSettings).max_replans} replan(s) per step"

    def design_warnings(self, enabled: list[str]) -> list[str]:
        return agents.design_warnings(enabled)

    def agent_caption(self, name: str) -> str:
        spec = AGENTS[name]
        return f"{spec.description} After it: {spec.routing_label}."

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

    def node_role(self, node: str) -> str:
        return NODE_ROLES.get(
            node,
            "runs the current step: it receives agent_query and writes its result for the executor",
        )

    def paused_fields(self, values: dict) -> list[tuple[str, object]]:
        plan = values.get("plan") or {}
        step = values.get("current_step")
        block = plan.get(str(step)) or {}
        plan_step = f"{block.get('agent')}: {block.get('action')}" if block else "(no plan yet)"
        rows = [
            ("current_step", step),
            ("plan step", plan_step),
            ("agent_query", values.get("agent_query")),
            ("last_reason", values.get("last_reason")),
            ("replan_flag", values.get("replan_flag")),
            ("replan_attempts", values.get("replan_attempts") or {}),
        ]
        if request := values.get("human_request"):
            rows.append(
                (
                    "human_request",
                    f"{request.get('kind')} of step {request.get('step')} "
                    f"({request.get('agent')}): {request.get('reason')}",
                )
            )
        return rows

    def approval_view(self, item: dict) -> ApprovalView:
        kind = item.get("kind") or "approval"
        what = {
            "approval": "approval before the step runs",
            "escalation": "escalation: the step reached its replan cap",
        }.get(kind, kind)
        return ApprovalView(
            f"**Step {item.get('step')} · {item.get('agent')}** · {what}",
            note=f"The Executor's note: {item['executor_reason']}"
            if item.get("executor_reason")
            else "",
            help={
                "reject": "The Planner revises the step with your reason (a replan attempt).",
                "skip": "Move on without running this step.",
                "retry": "Grant one more replan of this step.",
            },
            placeholder="e.g. why retry it, or what the Planner should do instead"
            if kind == "escalation"
            else "e.g. not this source, look in the database",
        )

    def check_fork_change(self, field: str, text: str, design: Design) -> Any:
        """A plan typed for a fork (the table's rows, or the map), checked like the
        Planner's own; ValueError names the step that is wrong."""
        if field != "plan":
            return super().check_fork_change(field, text, design)
        return read_plan(text, design)

    def fork_table(self, field: str, values: dict, design: Design) -> ForkTable | None:
        return plan_table(values, design) if field == "plan" else None

    # ------------------------------------------------------------------ drawing

    def edge_style(self, source: str, target: str) -> dict[str, str]:
        spec = AGENTS.get(source)
        if spec is None:
            return {}
        if target == "__end__":
            return ROUTE_STYLE["end"]
        if spec.routing == "chain" and target == spec.chain_to:
            return ROUTE_STYLE["chain"]
        return ROUTE_STYLE["executor"] if target == "executor" else {}


SYSTEM = PlanExecute()
