"""How the pages present a plan_execute run: its words, the steps table and plan history,
its approval cards, the plan a fork edits as a table, and step mode's fields."""

from __future__ import annotations

from typing import TYPE_CHECKING

from graph.plan_execute.agents import AGENTS
from graph.plan_execute.fork_plan import COLUMNS
from graph.plan_execute.settings_model import PlanSettings
from ui.system_view import SystemView
from ui.view_models import ApprovalView, ForkTable, Panel, RunFacts

if TYPE_CHECKING:
    from graph.kernel.design import Design

# What each hub does with the state when it runs next (step mode explains the pause).
NODE_ROLES = {
    "planner": "writes the plan from the question, or revises the current step when "
    "replan_flag is set, reading last_reason",
    "executor": "reads the plan, current_step and the step's result, then picks the agent "
    "to run (writing agent_query), asks for a replan, or moves on",
    "human": "stops and asks a person to decide on the step in human_request",
}


def plan_table(values: dict, design: Design) -> ForkTable:
    """The plan at a checkpoint as rows, one per step, in order."""
    plan = values.get("plan") or {}
    rows = [
        {
            "step": int(number),
            "agent": step.get("agent", ""),
            "action": step.get("action", ""),
            "approval": bool(step.get("approval")),
            "approval_reason": step.get("approval_reason") or "",
        }
        for number, step in sorted(plan.items(), key=lambda item: int(item[0]))
    ]
    return ForkTable(
        columns=list(COLUMNS),
        rows=rows,
        choices={"agent": list(design.enabled_agents)},
        locked=("step",),
        note=(
            "Change a step's agent or action, tick approval to have a person approve it "
            "before it runs, add a row for a new step at the end, or delete a row. Steps "
            "are numbered in the order of the rows. The new run goes on from this "
            "checkpoint with this plan."
        ),
    )


class PlanView(SystemView):
    count_labels = {"steps": "Steps", "replans": "Replans"}
    summary = (
        "A Planner writes numbered steps; an Executor routes each step to one agent and "
        "asks for a new plan when a step fails."
    )
    intro = (
        "The **Planner** turns a question into numbered steps; the **Executor** hands "
        "each step to one of the agents below and asks for a new plan when a step fails."
    )
    always_on = "The Planner and the Executor are always on."
    examples = (
        "Which stock in the database grew the most between 2005 and 2009? Chart the prices.",
        "What happened to Apple when it launched the iPhone, and how did its stock price "
        "change in 2007?",
        "How did Tesla's stock do in 2008?",
        "What caused the dot-com crash and how much did Amazon's price fall from 2000 to 2001?",
    )
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

    def limits(self, design: Design) -> str:
        return f"at most {design.settings_of(PlanSettings).max_replans} replan(s) per step"

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

    def fork_table(self, field: str, values: dict, design: Design) -> ForkTable | None:
        return plan_table(values, design) if field == "plan" else None

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

    def agent_caption(self, name: str) -> str:
        spec = AGENTS[name]
        return f"{spec.description} After it: {spec.routing_label}."
