"""The Planner node (docs/systems/plan_execute.md): the request becomes a numbered plan of one-agent steps.

Faults of the source design fixed here (docs/systems/plan_execute.md): a reply that is not JSON or lacks fields, a plan with no steps, and
a plan naming agents that are unknown or not enabled each get one repair round with
the problem fed back; after that the run fails with a readable reason. A slip with one
reading (an agent named in another case, a step repeated) is repaired in code instead,
with a notice on the run.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END
from langgraph.types import Command
from pydantic import BaseModel, Field, model_validator

from graph.kernel.messages import tag_messages
from graph.kernel.slips import repair_name
from graph.models.structured import JsonAsk, ModelReplyError, ask_json
from graph.plan_execute.agents import plannable
from graph.plan_execute.deps import Deps
from graph.plan_execute.prompts import plan_example, plan_prompt, repair_prompt
from graph.plan_execute.state import State
from graph.prompts import PromptSet


class PlanStep(BaseModel):
    agent: str = Field(min_length=1)
    action: str = Field(min_length=1)
    # The Planner may ask for a human's approval before the step runs (side effects,
    # cost, uncertainty); the design decides whether such flags are honoured.
    approval: bool = False
    approval_reason: str = ""


class Plan(BaseModel):
    """A plan as the Planner writes it: ``{"steps": [{agent, action, approval,
    approval_reason}, ...]}``, steps in order. The model is asked for a list, not the
    source design's ``{"1": {...}, "2": ...}`` map: grammar-constrained decoding fills a free-key map
    with nonsense keys. The map is still read (an older prompt version, a plan edited for a
    fork), its keys "1" to "n" in order; ``as_map`` gives the source design's shape the state keeps."""

    steps: list[PlanStep] = Field(json_schema_extra={"minItems": 1})

    @model_validator(mode="before")
    @classmethod
    def _from_source_map(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "steps" in data:
            return data
        expected = [str(i) for i in range(1, len(data) + 1)]
        if sorted(data, key=lambda k: (len(str(k)), str(k))) != expected:
            raise ValueError(
                f'step keys must be "1" to "{len(data)}" in order, got {", ".join(map(str, data))}'
            )
        return {"steps": [data[k] for k in expected]}

    def as_map(self, exclude_defaults: bool = False) -> dict[str, dict]:
        return {
            str(i): s.model_dump(exclude_defaults=exclude_defaults)
            for i, s in enumerate(self.steps, 1)
        }


def repair_plan(plan: Plan, allowed: list[str], keep_until: int = 1) -> tuple[Plan, list[str]]:
    """The plan with a small model's unambiguous slips repaired, and a notice for each: an
    agent named in another case is read as the agent it means; a step from ``keep_until``
    on that repeats an earlier one there (same agent, action and approval) is dropped.
    Steps before ``keep_until`` have run and keep their numbers."""
    notices: list[str] = []
    steps: list[PlanStep] = []
    first: dict[tuple, int] = {}
    for number, step in enumerate(plan.steps, 1):
        agent, said = repair_name(step.agent, allowed, f"The Planner's step {number} named agent")
        notices += said
        step = step.model_copy(update={"agent": agent})
        same = (agent, " ".join(step.action.split()).casefold(), step.approval)
        if number >= keep_until and first.setdefault(same, number) != number:
            notices.append(
                f"The Planner's step {number} repeats step {first[same]} (same agent and "
                "action): it was dropped."
            )
            continue
        steps.append(step)
    return plan.model_copy(update={"steps": steps}), notices


def check_plan(plan: Plan, enabled: list[str] | None, keep_until: int = 1) -> None:
    """Rules the schema cannot express; each failure says how to fix it."""
    if not plan.steps:
        raise ValueError("the plan has no steps; give at least one step")
    allowed = plannable(enabled)
    for number, step in enumerate(plan.steps, 1):
        if step.agent not in allowed:
            raise ValueError(
                f"step {number} uses agent {step.agent!r}, which is not available; "
                f"use only: {', '.join(allowed) or '(none)'}"
            )
    if len(plan.steps) < keep_until:
        raise ValueError(f"the revised plan must still contain step {keep_until}")


def planner_ask(state: State, prompts: PromptSet) -> JsonAsk:
    """The Planner's request for ``state`` (the node asks it; the playground too)."""
    replan = bool(state.get("replan_flag"))
    step = int(state.get("current_step") or 1) if replan else 1
    enabled = state.get("enabled_agents")
    return JsonAsk(
        plan_prompt(state, prompts),
        Plan,
        label="The Planner",
        repair_prompt=repair_prompt(prompts, plan_example(enabled)),
        check=lambda p: check_plan(p, enabled, step),
        repair=lambda p: repair_plan(p, plannable(enabled), step),
        enums={"agent": plannable(enabled)},
        kind="plan",
    )


def planner_node(state: State, deps: Deps) -> Command:
    if not plannable(state.get("enabled_agents")):
        return fail(
            "No agent can be planned in this design: enable at least one of "
            "web_researcher, data_researcher, chart_generator, synthesizer."
        )
    replan = bool(state.get("replan_flag"))
    step = int(state.get("current_step") or 1) if replan else 1
    try:
        reply = ask_json(deps.planner_model, planner_ask(state, deps.prompts))
    except ModelReplyError as exc:
        return fail(
            f"The Planner could not produce a usable plan: {exc}",
            messages=tag_messages(exc.replies, step, "planner"),
        )
    plan = reply.value.as_map(exclude_defaults=True)
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
            "step_runs": {k: 0 for k in plan if int(k) >= step},  # a new plan: counts afresh
            "plan_history": [
                {"version": len(history) + 1, "step": step, "reason": reason, "plan": plan}
            ],
            "notices": reply.notices,
        },
        goto="executor",
    )


def fail(reason: str, **update: Any) -> Command:
    """End the run with a readable reason; everything gathered so far stays in the state."""
    return Command(update={"outcome": "failed", "outcome_reason": reason, **update}, goto=END)
