"""The lead supervisor (docs/systems/hierarchical_teams.md): decompose the request, dispatch, finish.

On first entry, and after the human edited the request (``subtasks_planned`` False),
it asks the model for a structured plan; ids are assigned here (s1, s2, ...), and the
model's own ids or positions in ``depends_on`` are mapped to them, after its slips with
one reading are repaired (``repairs.py``). Then, every time it
runs: the results teams handed back close their subtasks; among the pending subtasks
whose dependencies are all done, one is taken directly, several go to a routing call
(``RoutingDecision``, or FINISH). Nothing pending ends the run; pending work of which
nothing can run ends it as blocked, saying which subtask waits on which.

A replan keeps done subtasks as they are (never redone), keeps the open ones the model
keeps, cancels the others explicitly with a reason, and adds new ones. Every plan
object is appended to ``plans`` and written to the stream as a custom event, so it is
in the run's event log and its export.

Over 400 lines: decomposition, replanning and dispatch all write the same subtask list,
and read best next to each other.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from langgraph.config import get_stream_writer
from langgraph.graph import END
from langgraph.types import Command
from pydantic import BaseModel, Field, field_validator

from graph.hierarchical_teams.deps import Deps
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
    resolver,
)
from graph.kernel.messages import FINISH_WORDS, tag_messages
from graph.models.structured import JsonAsk, ModelReplyError, ask_json
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


# --------------------------------------------------------------------------- plans


def _check_drafts(drafts: Sequence[NewSubtask], teams: list[str]) -> None:
    """What ``repair_drafts`` leaves for the model to mend: a team that is not on.
    Dependencies need no check: the repair leaves none that is unknown or cyclic."""
    for i, d in enumerate(drafts):
        if d.team not in teams:
            raise ValueError(
                f"subtask {label_of(d, i)!r} goes to team {d.team!r}, which is not on; "
                f"use one of: {', '.join(teams)}"
            )


def materialise(
    drafts: Sequence[NewSubtask],
    start: int,
    request_id: str,
    existing: set[str],
    new_prefix: str = "",
) -> list[dict]:
    """Drafted subtasks (as ``repair_drafts`` leaves them) as state records with ids
    s<start>, s<start+1>, ...; their ``depends_on`` mapped to real ids."""
    labels = [label_of(d, i) for i, d in enumerate(drafts)]
    ids = [f"s{start + i}" for i in range(len(drafts))]
    resolve = resolver(labels, existing, new_prefix)
    records = []
    for i, d in enumerate(drafts):
        deps = []
        for target in map(resolve, d.depends_on):  # repair_drafts left none unresolved
            real = ids[target] if isinstance(target, int) else target
            if real is not None and real not in deps:
                deps.append(real)
        records.append(
            {
                "id": ids[i],
                "team": d.team,
                "instruction": d.instruction.strip(),
                "status": "pending",
                "depends_on": deps,
                "request_id": request_id,
                "result": None,
                "reason": None,
                "started_at": None,
                "ended_at": None,
            }
        )
    return records


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


# --------------------------------------------------------------------------- the node


class _Turn:
    def __init__(self, state: dict, deps: Deps):
        self.state, self.deps = state, deps
        self.subtasks = fold_results(state)
        self.step = int(state.get("current_step") or 0)
        self.update: dict = {"notices": [], "messages": [], "plans": [], "routing": []}

    def by_id(self) -> dict[str, dict]:
        return {s["id"]: s for s in self.subtasks}

    def ask(
        self,
        prompt: str | JsonAsk,
        schema: type[BaseModel] | None = None,
        label: str = "",
        example: str = "",
        *,
        kind: str | None = None,
        check: Callable[[Any], None] | None = None,
        enums: Mapping[str, Sequence] | None = None,
        repair: Callable[[Any], tuple[Any, list[str]]] | None = None,
    ) -> Any:  # the schema's model: callers name it
        if not isinstance(prompt, JsonAsk):
            assert schema is not None, "a prompt text needs its schema"
            prompt = JsonAsk(
                prompt,
                schema,
                label,
                repair_prompt(self.deps.prompts, example),
                check=check,
                enums=enums,
                kind=kind,
                repair=repair,
            )
        reply = ask_json(self.deps.lead_model, prompt)
        self.update["messages"] += tag_messages(reply.replies, self.step, "lead_supervisor")
        self.update["notices"] += reply.notices
        return reply.value

    def command(self, goto: str, **fields: Any) -> Command:
        update = {**self.update, "subtasks": self.subtasks, "current_step": self.step, **fields}
        return Command(
            update={k: v for k, v in update.items() if v != [] or k == "subtasks"}, goto=goto
        )

    def record_plan(
        self,
        kind: str,
        kept: Sequence[str] = (),
        cancelled: Sequence[dict] = (),
        added: Sequence[str] = (),
    ) -> None:
        plan = {
            "revision": int(self.state.get("request_revision") or 0),
            "request_id": self.state.get("request_id"),
            "kind": kind,
            "request": self.state.get("request"),
            "at": time.time(),
            "subtasks": [dict(s) for s in self.subtasks],
            "kept": list(kept),
            "cancelled": list(cancelled),
            "added": list(added),
        }
        self.update["plans"].append(plan)
        try:
            writer = get_stream_writer()
        except RuntimeError:  # outside a graph run (a node called directly): state keeps it
            return
        writer({"plan": plan})

    def finish(self, outcome: str, reason: str) -> Command:
        answer = final_answer(self.subtasks, self.state.get("request") or "")
        prefix = "Finished" if outcome == "done" else "Stopped"
        why = f"{prefix}: {reason}"
        if outcome == "done":  # done only with a result to show, naming what failed
            outcome, why = done_or_failed(self.subtasks, reason)
        return self.command(
            END,
            final_answer=answer,
            outcome=outcome,
            outcome_reason=why,
            current_subtask_id=None,
        )


def lead_supervisor_node(state: dict, deps: Deps) -> Command:
    turn = _Turn(state, deps)
    if not state.get("subtasks_planned"):
        try:
            if state.get("subtasks"):
                _replan(turn)
            else:
                _plan(turn)
        except ModelReplyError as exc:
            turn.update["messages"] += tag_messages(exc.replies, turn.step, "lead_supervisor")
            return turn.finish("failed", f"the lead supervisor could not plan: {exc}")
    else:
        close_unanswered(turn.subtasks)
    return _dispatch(turn)


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


def _plan(turn: _Turn) -> None:
    deps, state = turn.deps, turn.state
    if not deps.teams:
        raise ModelReplyError("no team is on in this design, so nothing can be delegated")
    plan: SubtaskPlan = turn.ask(
        plan_ask(state.get("request") or "", deps.prompts, deps.enabled, deps.teams)
    )
    turn.subtasks = materialise(
        plan.subtasks,
        int(state.get("next_subtask_number") or 1),
        state.get("request_id") or "",
        set(),
    )
    turn.update["next_subtask_number"] = int(state.get("next_subtask_number") or 1) + len(
        turn.subtasks
    )
    turn.update["subtasks_planned"] = True
    turn.record_plan("initial", added=[s["id"] for s in turn.subtasks])


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


def _replan(turn: _Turn) -> None:
    deps, state = turn.deps, turn.state
    subtasks = turn.subtasks
    still_open = open_ids(subtasks)
    all_ids = {s["id"] for s in subtasks}
    decision: Replan = turn.ask(replan_ask(state, subtasks, deps.prompts, deps.enabled, deps.teams))
    now = time.time()
    by_id = turn.by_id()
    kept, cancelled = [], []
    reasons = {c.id: c.reason.strip() for c in decision.cancel}
    for sid in sorted(still_open, key=lambda i: int(i[1:]) if i[1:].isdigit() else 0):
        s = by_id[sid]
        if sid in decision.keep:
            kept.append(sid)
            if s["status"] == "delegated":  # its team was stopped by the edit: it runs again
                s.update(status="pending", started_at=None)
        else:
            why = reasons.get(sid) or "the replan did not keep it"
            s.update(
                status="cancelled",
                ended_at=now,
                reason=f"Cancelled by the edit to revision "
                f"{int(state.get('request_revision') or 0)}: {why}",
            )
            cancelled.append({"id": sid, "reason": s["reason"]})
    for ref in [*decision.keep, *reasons]:
        if ref in all_ids and ref not in still_open:
            turn.update["notices"].append(
                f"The replan named {ref}, which is {by_id[ref]['status']}: left as it is "
                "(finished work is never redone or cancelled)."
            )
    start = int(state.get("next_subtask_number") or len(subtasks) + 1)
    added = materialise(
        decision.add, start, state.get("request_id") or "", all_ids, new_prefix="new:"
    )
    turn.subtasks = subtasks + added
    turn.update["next_subtask_number"] = start + len(added)
    turn.update["subtasks_planned"] = True
    turn.record_plan("replan", kept=kept, cancelled=cancelled, added=[s["id"] for s in added])


def blocked_reasons(subtasks: list[dict]) -> dict[str, str]:
    """For each pending subtask, which failed or cancelled one it waits on (through
    chains of pending ones)."""
    by_id = {s["id"]: s for s in subtasks}

    def root(sid: str, seen: set[str]) -> dict | None:
        for dep in by_id[sid].get("depends_on") or []:
            d = by_id.get(dep)
            if d is None or d["status"] in ("failed", "cancelled"):
                return d or {"id": dep, "status": "missing", "reason": "no such subtask"}
            if d["status"] == "pending" and dep not in seen:
                if found := root(dep, seen | {dep}):
                    return found
        return None

    reasons = {}
    for s in subtasks:
        if s["status"] != "pending":
            continue
        cause = root(s["id"], {s["id"]})
        if cause is None:
            reasons[s["id"]] = f"{s['id']} ({s['team']}) waits on unfinished work"
            continue
        why = f" ({cause['reason']})" if cause.get("reason") else ""
        reasons[s["id"]] = (
            f"{s['id']} ({s['team']}) waits on {cause['id']}, which "
            f"{'is ' if cause['status'] == 'missing' else ''}"
            f"{cause['status']}{why}"
        )
    return reasons


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
    if int(state.get("current_step") or 0) >= max_dispatches:
        return "Here the lead supervisor stops at its limit of dispatches, asking no model."
    if len(choices) > 1:
        return route_ask(choices, prompts)
    return (
        f"Here the lead supervisor dispatches {choices[0]['id']}, the only subtask that can "
        "run, without asking its model: choose a checkpoint before it plans, replans or "
        "chooses among several subtasks."
    )


def _dispatch(turn: _Turn) -> Command:
    deps = turn.deps
    pending = [s for s in turn.subtasks if s["status"] == "pending"]
    if not pending:
        return turn.finish("done", "every subtask has ended.")
    dispatchable = ready(turn.subtasks)
    if not dispatchable:
        reasons = blocked_reasons(turn.subtasks)
        for s in pending:
            s["reason"] = f"Blocked: {reasons[s['id']]}."
        return turn.finish("failed", "blocked: " + "; ".join(reasons.values()) + ".")
    if turn.step >= deps.max_dispatches:
        return turn.finish(
            "failed",
            f"the lead supervisor dispatched {turn.step} subtasks, its limit, without finishing.",
        )
    if len(dispatchable) == 1:
        chosen, by, why = dispatchable[0], "direct", "the only subtask that can run now"
    else:
        try:
            decision: RoutingDecision = turn.ask(route_ask(dispatchable, deps.prompts))
        except ModelReplyError as exc:
            turn.update["messages"] += tag_messages(exc.replies, turn.step, "lead_supervisor")
            return turn.finish("failed", f"the lead supervisor could not route: {exc}")
        name = decision.next_subtask_id.strip()
        if name.lower() in FINISH_WORDS:
            now = time.time()
            for s in pending:
                s.update(
                    status="cancelled",
                    ended_at=now,
                    reason=f"Not dispatched: the lead supervisor answered {FINISH} "
                    f"({decision.reason or 'no reason given'}).",
                )
            turn.update["routing"].append(
                {
                    "step": turn.step,
                    "subtask_id": FINISH,
                    "team": "",
                    "by": "lead",
                    "reason": decision.reason,
                    "at": time.time(),
                }
            )
            return turn.finish(
                "done",
                f"the lead supervisor answered {FINISH}: {decision.reason or 'no reason given'}",
            )
        chosen = next(s for s in dispatchable if s["id"] == name)
        by, why = "lead", decision.reason
    if chosen["team"] not in deps.nodes:  # never hand LangGraph a goto it would drop
        chosen.update(
            status="failed",
            reason=f"its team {chosen['team']} is not on in this design",
            ended_at=time.time(),
        )
        return _dispatch(turn)
    turn.step += 1
    chosen.update(status="delegated", started_at=time.time(), result=None, reason=None)
    done = {s["id"]: s for s in turn.subtasks}
    inputs = [
        {"id": d, "team": done[d]["team"], "result": done[d].get("result") or ""}
        for d in chosen["depends_on"]
    ]
    turn.update["routing"].append(
        {
            "step": turn.step,
            "subtask_id": chosen["id"],
            "team": chosen["team"],
            "by": by,
            "reason": why,
            "at": time.time(),
        }
    )
    return turn.command(
        chosen["team"],
        current_subtask_id=chosen["id"],
        current_team=chosen["team"],
        current_instruction=chosen["instruction"],
        current_inputs=inputs,
        current_call_scope=turn.state.get("session_id") or "",
    )


def _named(subtasks: list[dict]) -> str:
    return "; ".join(
        f"{s['id']} ({s['team']}): {(s.get('reason') or 'no reason given').rstrip('. ')}"
        for s in subtasks
    )


def done_or_failed(subtasks: list[dict], reason: str) -> tuple[str, str]:
    """The outcome of a run whose lead found nothing left to do (``reason``: why, in its
    words): ``done`` only when some subtask handed back a result, naming the subtasks that
    failed; else ``failed``, saying that every subtask failed or none produced a result."""
    answered = [s for s in subtasks if s["status"] == "done" and str(s.get("result") or "").strip()]
    failed = [s for s in subtasks if s["status"] == "failed"]
    if not answered:
        if failed and len(failed) == len(subtasks):
            return "failed", f"Every subtask failed, so there is no answer: {_named(failed)}."
        return "failed", (
            f"No subtask produced a result, so there is no answer ({reason.rstrip('. ')})"
            + (f"; failed: {_named(failed)}." if failed else ".")
        )
    if failed:
        return "done", (
            f"Finished: {reason.rstrip('. ')}; {len(failed)} of {len(subtasks)} subtasks "
            f"failed: {_named(failed)}."
        )
    return "done", f"Finished: {reason}"


def final_answer(subtasks: list[dict], request: str) -> str:
    """The subtasks' results, in plan order; cancelled and failed ones say why."""
    lines = [f'Results for: "{request}"', ""]
    for s in subtasks:
        head = f"**{s['id']} · {s['team']} · {s['status']}** — {s['instruction']}"
        lines.append(f"- {head}")
        if s["status"] == "done" and s.get("result"):
            lines += [f"  {line}" for line in str(s["result"]).splitlines() if line.strip()]
        elif s.get("reason"):
            lines.append(f"  {s['reason']}")
    if not subtasks:
        lines.append("- No subtask was planned.")
    return "\n".join(lines)
