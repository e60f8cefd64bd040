"""The Planner node (seed 000): the request becomes a numbered plan of one-agent steps.

Fixed seed faults: a reply that is not JSON or lacks fields, a plan with no steps, and
a plan naming agents that are unknown or not enabled each get one repair round with
the problem fed back; after that the run fails with a readable reason.
"""

from __future__ import annotations

from langgraph.graph import END
from langgraph.types import Command
from pydantic import BaseModel, Field, RootModel

from graph.models import ModelReplyError, ask_json
from graph.plan_execute.agents import plannable
from graph.plan_execute.deps import Deps
from graph.plan_execute.prompts import plan_prompt, repair_prompt
from graph.plan_execute.state import State, tag_messages

PLAN_SHAPE = ('{"1": {"agent": "<agent name>", "action": "<what to do>", "approval": false, '
              '"approval_reason": ""}, "2": {...}}')


class PlanStep(BaseModel):
    agent: str = Field(min_length=1)
    action: str = Field(min_length=1)
    # The Planner may ask for a human's approval before the step runs (side effects,
    # cost, uncertainty); the design decides whether such flags are honoured.
    approval: bool = False
    approval_reason: str = ""


class Plan(RootModel[dict[str, PlanStep]]):
    """The plan as the seed writes it: {"1": {"agent", "action"}, "2": ...}."""


def check_plan(plan: Plan, enabled: list[str] | None, keep_until: int = 1) -> None:
    """Rules the schema cannot express; each failure says how to fix it."""
    steps = plan.root
    if not steps:
        raise ValueError("the plan has no steps; give at least one step")
    expected = [str(i) for i in range(1, len(steps) + 1)]
    if sorted(steps, key=lambda k: (len(k), k)) != expected:
        raise ValueError(f"step keys must be \"1\" to \"{len(steps)}\" in order, got "
                         f"{', '.join(steps)}")
    allowed = plannable(enabled)
    for key, step in steps.items():
        if step.agent not in allowed:
            raise ValueError(f"step {key} uses agent {step.agent!r}, which is not available; "
                             f"use only: {', '.join(allowed) or '(none)'}")
    if len(steps) < keep_until:
        raise ValueError(f"the revised plan must still contain step {keep_until}")


def planner_node(state: State, deps: Deps) -> Command:
    if not plannable(state.get("enabled_agents")):
        return fail("No agent can be planned in this design: enable at least one of "
                    "web_researcher, data_researcher, chart_generator, synthesizer.")
    replan = bool(state.get("replan_flag"))
    step = int(state.get("current_step") or 1) if replan else 1
    try:
        reply = ask_json(
            deps.planner_model, plan_prompt(state, deps.prompts), Plan, label="The Planner",
            repair_prompt=repair_prompt(deps.prompts, PLAN_SHAPE),
            mode=deps.settings.structured_output,
            check=lambda p: check_plan(p, state.get("enabled_agents"), step))
    except ModelReplyError as exc:
        return fail(f"The Planner could not produce a usable plan: {exc}",
                    messages=tag_messages(exc.replies, step, "planner"))
    plan = {k: v.model_dump(exclude_defaults=True) for k, v in sorted(reply.value.root.items(), key=lambda kv: int(kv[0]))}
    history = state.get("plan_history") or []
    reason = (state.get("last_reason") or "") if replan else "initial plan"
    status = {k: "pending" for k in plan if int(k) >= step}
    return Command(
        update={
            "plan": plan,
            "messages": tag_messages(reply.replies, step, "planner"),
            "current_step": step,
            "replan_flag": replan,  # the handshake: the executor runs the new step first
            "last_reason": "",
            "step_status": status,
            "plan_history": [{"version": len(history) + 1, "step": step, "reason": reason,
                              "plan": plan}],
            "notices": reply.notices,
        },
        goto="executor",
    )


def fail(reason: str, **update) -> Command:
    """End the run with a readable reason; everything gathered so far stays in the state."""
    return Command(update={"outcome": "failed", "outcome_reason": reason, **update}, goto=END)
