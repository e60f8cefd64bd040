"""The Executor node (docs/systems/plan_execute.md): replan?, which agent next, and the query it gets.

``current_step`` names the step being worked on. It stays while that step's agent
runs (or reruns) and advances when the executor moves to the next step's agent, so
"done" in the table means the executor accepted the step's result.

Faults of the source design fixed here (docs/systems/plan_execute.md): after a replan the agent gets a query written from the revised
step (the source design sent the stale ``agent_query``); a ``goto`` naming an agent that is
unknown or not enabled is repaired by following the plan (LangGraph would log it and
end the run silently); a step at its replan cap moves on visibly, marked skipped.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.graph import END
from langgraph.types import Command
from pydantic import AliasChoices, BaseModel, Field

from graph.kernel.messages import FINISH_WORDS, tag_messages
from graph.models.structured import JsonAsk, ModelReplyError, ask_json
from graph.plan_execute.deps import Deps
from graph.plan_execute.planner import fail
from graph.plan_execute.prompts import executor_example, executor_prompt, goto_names, repair_prompt
from graph.plan_execute.state import State
from graph.prompts import PromptSet

# How many times one step's work may be sent out within one plan version. A model that
# keeps asking for the agent of a step that already has its result would otherwise loop
# for ever (each human approval starts a fresh invocation, so the recursion limit never
# trips); past the cap the executor moves on with the result the step has.
MAX_STEP_RUNS = 3


class ExecutorDecision(BaseModel):
    replan: bool = Field(validation_alias=AliasChoices("replan", "replan_flag"))
    goto: str
    reason: str = ""
    query: str = ""


def standalone_query(action: str, user_query: str) -> str:
    """An instruction a sub-agent can act on without the plan or the history."""
    return action if user_query in action else f"{action} (User question: {user_query})"


def executor_ask(state: State, prompts: PromptSet, max_replans: int) -> JsonAsk:
    """The Executor's request for ``state`` (the node asks it; the playground too)."""
    enabled = state.get("enabled_agents")
    return JsonAsk(
        executor_prompt(state, prompts, max_replans),
        ExecutorDecision,
        label="The Executor",
        repair_prompt=repair_prompt(prompts, executor_example(enabled)),
        enums={"goto": goto_names(enabled)},
        kind="decision",
    )


def executor_node(state: State, deps: Deps) -> Command:
    plan = state.get("plan") or {}
    step = int(state.get("current_step") or 1)
    user_query = state.get("user_query") or ""
    if str(step) not in plan:
        return _finish(state, f"the plan has no step {step}")

    if state.get("replan_flag"):
        # Just replanned: run the revised step once before judging again. The query is
        # written from the revised step: the previous agent_query belongs to the old plan.
        block = plan[str(step)]
        return _dispatch(
            deps,
            state,
            step,
            block["agent"],
            standalone_query(block["action"], user_query),
            f"Replanned step {step}; running it before re-evaluating.",
            extra={"replan_flag": False},
        )

    try:
        reply = ask_json(deps.planner_model, executor_ask(state, deps.prompts, deps.max_replans))
    except ModelReplyError as exc:
        return fail(
            f"The Executor could not decide the next step: {exc}",
            messages=tag_messages(exc.replies, step, "executor"),
        )
    decision: ExecutorDecision = reply.value
    said: dict[str, Any] = {
        "messages": tag_messages(reply.replies, step, "executor"),
        "notices": reply.notices,
    }
    goto = decision.goto.strip()
    results = state.get("step_results") or {}
    current, nxt = plan[str(step)], plan.get(str(step + 1))

    if decision.replan or goto == "planner":
        attempts = (state.get("replan_attempts") or {}).get(str(step), 0)
        if attempts < deps.max_replans:
            return Command(
                update={
                    **said,
                    "replan_flag": True,
                    "last_reason": decision.reason or "(no reason)",
                    "replan_attempts": {str(step): attempts + 1},
                    "step_status": {str(step): "replanned"},
                },
                goto="planner",
            )
        return _at_cap(
            deps,
            state,
            said,
            step,
            f"Step {step} reached its replan cap ({deps.max_replans}) "
            f"and still asks for a replan: {decision.reason}",
            f"Step {step} asked for a replan after {attempts} replan(s), the cap: moving on.",
        )

    query = decision.query.strip()
    runs = (state.get("step_runs") or {}).get(str(step), 0)
    again = goto == current["agent"] or (
        goto in deps.nodes
        and goto not in ("planner", "executor")
        and not (nxt and goto == nxt["agent"])
    )
    if again and str(step) in results and runs >= MAX_STEP_RUNS:
        said["notices"] = said["notices"] + [
            f"Step {step} has been sent out {runs} times and the executor asked for {goto} "
            "again: moving on with the result it has."
        ]
        return advance(deps, state, step, "done", said, decision.reason)
    if goto == current["agent"] and not (str(step) in results and nxt and nxt["agent"] == goto):
        return _dispatch(
            deps,
            state,
            step,
            goto,
            query or standalone_query(current["action"], user_query),
            decision.reason,
            said,
        )
    moving_on = (nxt and goto == nxt["agent"]) or (goto.lower() in FINISH_WORDS and not nxt)
    if moving_on and found_nothing(results.get(str(step))):
        attempts = (state.get("replan_attempts") or {}).get(str(step), 0)
        if attempts >= deps.max_replans:
            # Moving on from a step that found nothing, with no replan left (a model
            # told the cap stops asking): the design's rule applies, not "done".
            return _at_cap(
                deps,
                state,
                said,
                step,
                f"Step {step} ({current['agent']}) found nothing usable and has no replan "
                f"left (cap {deps.max_replans}): {results[str(step)][:300]}",
                f"Step {step} found nothing usable and has no replan left: marked skipped.",
            )
    if nxt and goto == nxt["agent"]:
        if str(step) in results:
            return advance(deps, state, step, "done", said, decision.reason, query)
        said["notices"] = said["notices"] + [
            f"The executor moved on from step {step} before it ran: marked skipped."
        ]
        return advance(deps, state, step, "skipped", said, decision.reason, query)
    if goto.lower() in FINISH_WORDS and not nxt and str(step) in results:
        said["step_status"] = {str(step): "done"}
        return _finish(state, "the executor ended the run after the last step", said)
    if goto in deps.nodes and goto not in ("planner", "executor"):
        said["notices"] = said["notices"] + [
            f"The executor ran {goto}, off the plan, for step {step}."
        ]
        return _dispatch(
            deps,
            state,
            step,
            goto,
            query or standalone_query(current["action"], user_query),
            decision.reason,
            said,
        )

    # Unknown, disabled or misplaced goto: follow the plan instead of ending silently.
    said["notices"] = said["notices"] + [
        f"The executor chose {goto!r}, which is not an enabled agent here; following the plan."
    ]
    if str(step) not in results:
        return _dispatch(
            deps,
            state,
            step,
            current["agent"],
            standalone_query(current["action"], user_query),
            decision.reason,
            said,
        )
    return advance(deps, state, step, "done", said, decision.reason)


def found_nothing(result: str | None) -> bool:
    """A worker's result that says it found nothing (workers begin those with "No usable
    results")."""
    return result is not None and result.lstrip().lower().startswith("no usable results")


def _at_cap(deps: Deps, state: State, said: dict, step: int, why: str, notice: str) -> Command:
    """A step that cannot be replanned any more: a human decides (escalate at the cap),
    or the run moves on with the step marked skipped, never done."""
    if deps.escalate_at_cap:
        return route_to_human(
            state,
            said,
            kind="escalation",
            step=step,
            agent=(state.get("plan") or {})[str(step)]["agent"],
            query=state.get("agent_query") or "",
            reason=why,
        )
    said["notices"] = said["notices"] + [notice]
    return advance(deps, state, step, "skipped", said, why)


def advance(
    deps: Deps, state: State, step: int, status: str, said: dict, reason: str, query: str = ""
) -> Command:
    """Close ``step`` with ``status`` and start the next one, or finish after the last."""
    plan = state.get("plan") or {}
    said = {**said, "step_status": {str(step): status}}
    nxt = plan.get(str(step + 1))
    if not nxt:
        return _finish(state, f"the last step ended ({status})", said)
    return _dispatch(
        deps,
        state,
        step + 1,
        nxt["agent"],
        query or standalone_query(nxt["action"], state.get("user_query") or ""),
        reason,
        said,
    )


def _dispatch(
    deps: Deps,
    state: State,
    step: int,
    agent: str,
    query: str,
    reason: str,
    said: dict | None = None,
    extra: dict | None = None,
) -> Command:
    said = dict(said or {})
    if agent not in deps.nodes:  # never hand LangGraph a goto it would silently drop
        return fail(
            f"Step {step} needs agent {agent!r}, which is not enabled in this design.", **said
        )
    said.update(extra or {})
    if why := approval_reason(deps, agent, (state.get("plan") or {}).get(str(step), {})):
        return route_to_human(
            state,
            said,
            kind="approval",
            step=step,
            agent=agent,
            query=query,
            reason=why,
            executor_reason=reason,
        )
    return run_step(state, said, step, agent, query, reason)


def run_step(state: State, said: dict, step: int, agent: str, query: str, reason: str) -> Command:
    """Send ``agent`` to work on ``step`` with ``query`` (counted in ``step_runs``)."""
    status = {**said.pop("step_status", {}), str(step): "running"}
    runs = (state.get("step_runs") or {}).get(str(step), 0) + 1
    return Command(
        update={
            **said,
            "current_step": step,
            "agent_query": query,
            "last_reason": reason,
            "step_status": status,
            "step_runs": {str(step): runs},
        },
        goto=agent,
    )


def approval_reason(deps: Deps, agent: str, block: dict) -> str:
    """Why ``agent`` must wait for a human on this step, or "" when it need not."""
    policy = deps.approvals.get(agent, "planner")
    if policy == "always":
        return f"The design asks a human before every {agent} step."
    if policy == "planner" and block.get("approval") and block.get("agent") == agent:
        return f"The Planner flagged this step: {block.get('approval_reason') or 'no reason given'}"
    return ""


def route_to_human(state: State, said: dict, **request: Any) -> Command:
    """Hand over to the human node, which pauses the run until someone decides."""
    status = {**said.pop("step_status", {}), str(request["step"]): "waiting"}
    request.update(asked_at=time.time())
    return Command(
        update={
            **said,
            "current_step": request["step"],
            "human_request": request,
            "step_status": status,
        },
        goto="human",
    )


def _finish(state: State, why: str, said: dict | None = None) -> Command:
    """The plan is over without a synthesizer: the run is done, with no final answer."""
    reason = f"Finished: {why}."
    if not state.get("final_answer"):
        reason += " No final answer (the synthesizer did not run)."
    return Command(update={**(said or {}), "outcome": "done", "outcome_reason": reason}, goto=END)
