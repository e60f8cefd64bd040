"""The lead supervisor's requests to its model (docs/systems/hierarchical_teams.md): its
first plan, a replan after the human edited the request, and its routing among subtasks
that can run; and which of them it sends first from a state (``first_ask``).

The node (``lead.py``) asks them and the node playground builds the same ones from a
stored state, so a prompt is never built two ways. The reply shapes are tight: team and
id enums, arrays; ids are the model's own labels, mapped to s1, s2... in code.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from pydantic import BaseModel, Field, field_validator

from graph.hierarchical_teams.prompts import (
    FINISH,
    open_ids,
    plan_example,
    plan_prompt,
    repair_prompt,
    replan_example,
    replan_prompt,
    route_example,
    route_names,
    route_prompt,
)
from graph.hierarchical_teams.repairs import (
    label_of,
    repair_choice,
    repair_drafts,
    repair_replan,
)
from graph.kernel.messages import FINISH_WORDS
from graph.models.structured import JsonAsk
from graph.prompts import PromptSet


class NewSubtask(BaseModel):
    """A subtask a replan adds: its team, instruction and what it depends on (existing ids,
    or "new:N" for the N-th subtask added with it). A status the model echoes is ignored:
    every new subtask starts pending."""

    team: str
    instruction: str = Field(min_length=1)
    depends_on: list[str] = Field(default_factory=list)

    @field_validator("depends_on", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> Any:
        return [str(v) for v in value] if isinstance(value, list) else value


class Subtask(NewSubtask):
    """One subtask of a first plan; ``id`` is the model's own label, mapped to s1, s2... in
    code (so is a 1-based position in ``depends_on``)."""

    id: str = ""

    @field_validator("id", mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        return "" if value is None else str(value)


class SubtaskPlan(BaseModel):
    subtasks: list[Subtask] = Field(min_length=1)


class Cancellation(BaseModel):
    id: str
    reason: str = ""


class Replan(BaseModel):
    keep: list[str] = Field(default_factory=list)
    cancel: list[Cancellation] = Field(default_factory=list)
    add: list[NewSubtask] = Field(default_factory=list)


class RoutingDecision(BaseModel):
    next_subtask_id: str = Field(min_length=1)
    reason: str = ""


def _check_drafts(drafts: Sequence[NewSubtask], teams: list[str]) -> None:
    """What ``repair_drafts`` leaves for the model to mend: a team that is not on.
    Dependencies need no check: the repair leaves none that is unknown or cyclic."""
    for i, d in enumerate(drafts):
        if d.team not in teams:
            raise ValueError(
                f"subtask {label_of(d, i)!r} goes to team {d.team!r}, which is not on; "
                f"use one of: {', '.join(teams)}"
            )


def fold_results(state: dict) -> list[dict]:
    """The subtasks with the outcomes teams handed back applied (copies)."""
    results = state.get("team_results") or {}
    folded = []
    for s in state.get("subtasks") or []:
        s = dict(s)
        found = results.get(s["id"])
        if s["status"] == "delegated" and found:
            s.update(
                status=found.get("status", "failed"),
                result=found.get("result"),
                reason=found.get("reason"),
                ended_at=found.get("ended_at"),
            )
        folded.append(s)
    return folded


def plan_ask(request: str, prompts: PromptSet, enabled: list[str], teams: list[str]) -> JsonAsk:
    """The lead supervisor's first plan request (the node asks it; the playground too)."""
    label = "The lead supervisor's plan"

    def repair(p: SubtaskPlan) -> tuple[SubtaskPlan, list[str]]:
        subtasks, notices = repair_drafts(p.subtasks, teams, set(), label)
        return p.model_copy(update={"subtasks": subtasks}), notices

    return JsonAsk(
        plan_prompt(prompts, request, enabled),
        SubtaskPlan,
        label,
        repair_prompt(prompts, plan_example(enabled)),
        check=lambda p: _check_drafts(p.subtasks, teams),
        enums={"team": teams},
        kind="plan",
        repair=repair,
    )


def replan_ask(
    state: dict, subtasks: list[dict], prompts: PromptSet, enabled: list[str], teams: list[str]
) -> JsonAsk:
    """The lead supervisor's replan request after the human edited the request, over the
    plan as it stands (``subtasks``: the teams' results folded in); the node asks it, the
    playground too."""
    still_open = open_ids(subtasks)
    all_ids = {s["id"] for s in subtasks}
    edits = state.get("edits") or []
    previous = edits[-1].get("previous", "") if edits else state.get("user_query") or ""

    def check(r: Replan) -> None:
        for ref in [*r.keep, *(c.id for c in r.cancel)]:
            if ref not in all_ids:
                raise ValueError(f"{ref!r} is no subtask of the plan")
        if both := set(r.keep) & {c.id for c in r.cancel}:
            raise ValueError(f"{', '.join(sorted(both))} both kept and cancelled")
        _check_drafts(r.add, teams)

    label = "The lead supervisor's replan"
    return JsonAsk(
        replan_prompt(
            prompts,
            state.get("request") or "",
            previous,
            int(state.get("request_revision") or 0),
            subtasks,
            enabled,
        ),
        Replan,
        label,
        repair_prompt(prompts, replan_example(subtasks, enabled)),
        check=check,
        enums={"team": teams, "keep": still_open, "id": still_open},
        kind="plan",
        repair=lambda r: repair_replan(r, teams, all_ids, label),
    )


def route_ask(dispatchable: list[dict], prompts: PromptSet) -> JsonAsk:
    """The lead supervisor's routing request among the subtasks that can run now (the
    node asks it, the playground too)."""
    ids = [s["id"] for s in dispatchable]

    def check(d: RoutingDecision) -> None:
        name = d.next_subtask_id.strip()
        if name.lower() not in FINISH_WORDS and name not in ids:
            raise ValueError(
                f"next_subtask_id {name!r} is not one of the listed ids; use "
                f"one of: {', '.join([*ids, FINISH])}"
            )

    return JsonAsk(
        route_prompt(prompts, dispatchable),
        RoutingDecision,
        "The lead supervisor's routing",
        repair_prompt(prompts, route_example(ids)),
        check=check,
        enums={"next_subtask_id": route_names(ids)},
        kind="route",
        repair=lambda d: repair_choice(d, route_names(ids)),
    )


def ready(subtasks: list[dict]) -> list[dict]:
    """The pending subtasks whose dependencies are all done: what can be dispatched now."""
    status = {s["id"]: s["status"] for s in subtasks}
    return [
        s
        for s in subtasks
        if s["status"] == "pending" and all(status.get(d) == "done" for d in s["depends_on"])
    ]


def close_unanswered(subtasks: list[dict]) -> None:
    """A subtask still delegated when the lead is back: its team ended without a result."""
    for s in subtasks:
        if s["status"] == "delegated":
            s.update(
                status="failed", reason="its team ended without a result", ended_at=time.time()
            )


def dispatch_limit(max_dispatches: int, subtasks: Sequence[dict]) -> int:
    """Dispatches the lead may make before it stops as stuck: one per subtask of the plan
    as it stands (a replan that lengthens the plan raises it), plus ``max_dispatches`` for
    redispatches and retries. A loop that keeps adding subtasks meets the recursion limit."""
    return max_dispatches + len(subtasks)


def first_ask(
    state: dict, prompts: PromptSet, enabled: list[str], teams: list[str], max_dispatches: int
) -> JsonAsk | str:
    """The first request ``lead_supervisor_node`` would send from ``state`` (its plan, its
    replan or its routing), or why it would send none."""
    if not state.get("subtasks_planned"):
        subtasks = fold_results(state)
        if subtasks:
            return replan_ask(state, subtasks, prompts, enabled, teams)
        if not teams:
            return "No team is on in this design, so the lead supervisor plans nothing."
        return plan_ask(state.get("request") or "", prompts, enabled, teams)
    subtasks = fold_results(state)
    close_unanswered(subtasks)
    if not any(s["status"] == "pending" for s in subtasks):
        return "Here the lead supervisor ends the run (no subtask is pending), asking no model."
    choices = ready(subtasks)
    if not choices:
        return (
            "Here the lead supervisor finds pending work that cannot run and ends the run "
            "as blocked, without asking its model."
        )
    if int(state.get("current_step") or 0) >= dispatch_limit(max_dispatches, subtasks):
        return "Here the lead supervisor stops at its limit of dispatches, asking no model."
    if len(choices) > 1:
        return route_ask(choices, prompts)
    return (
        f"Here the lead supervisor dispatches {choices[0]['id']}, the only subtask that can "
        "run, without asking its model: choose a checkpoint before it plans, replans or "
        "chooses among several subtasks."
    )
