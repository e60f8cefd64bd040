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

The requests it sends (plan, replan, routing) are built in ``lead_asks.py``, where the
node playground builds them too. Over 400 lines: decomposition, replanning and dispatch
all write the same subtask list, and read best next to each other.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

from langgraph.config import get_stream_writer
from langgraph.graph import END
from langgraph.types import Command
from pydantic import BaseModel

from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.lead_asks import (
    NewSubtask,
    Replan,
    RoutingDecision,
    SubtaskPlan,
    close_unanswered,
    dispatch_limit,
    fold_results,
    plan_ask,
    ready,
    replan_ask,
    route_ask,
)
from graph.hierarchical_teams.prompts import (
    FINISH,
    open_ids,
    repair_prompt,
)
from graph.hierarchical_teams.repairs import (
    label_of,
    resolver,
)
from graph.kernel.messages import FINISH_WORDS, tag_messages
from graph.models.structured import JsonAsk, ModelReplyError, ask_json

# --------------------------------------------------------------------------- plans


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
    if turn.step >= dispatch_limit(deps.max_dispatches, turn.subtasks):
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
