"""A team's supervisor: the request it sends its model (``team_ask``), the route it
reads back (``TeamRoute``), and handing the team's outcome back when it answers FINISH
or runs out of rounds.

A team's input is its subtask only; every prompt its supervisor receives is built from
that and from its workers' reports, never from the request or another subtask."""

from __future__ import annotations

import time
from typing import Sequence

from langgraph.graph import END
from langgraph.types import Command
from pydantic import BaseModel, Field

from graph.hierarchical_teams.agents import team_workers
from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.prompts import (
    FINISH,
    repair_prompt,
    team_prompt,
    team_route_example,
)
from graph.hierarchical_teams.team_steps import team_step
from graph.kernel.messages import FINISH_WORDS, tag_messages
from graph.kernel.slips import repair_name
from graph.models.structured import JsonAsk, ModelReplyError, ask_json
from graph.prompts import PromptSet


class TeamRoute(BaseModel):
    next_worker: str = Field(min_length=1)
    task: str = ""
    reason: str = ""


def repair_route(route: TeamRoute, names: list[str], team: str) -> tuple[TeamRoute, list[str]]:
    """The route with ``next_worker`` read as the one name of ``names`` it means when a
    small model wrote it in another case or spacing; a notice says so."""
    name, said = repair_name(route.next_worker, names, f"{team}'s supervisor named next_worker")
    return route.model_copy(update={"next_worker": name}), said


def _max_rounds(team: str, enabled: list[str]) -> int:
    return 2 * len(team_workers(team, enabled)) + 2


def team_ask(state: dict, prompts: PromptSet, team: str, enabled: list[str]) -> JsonAsk | str:
    """The request ``team``'s supervisor sends from its state (the node asks it, the
    playground too), or why it sends none."""
    workers = team_workers(team, enabled)
    round_ = int(state.get("team_round") or 0) + 1
    if round_ > _max_rounds(team, enabled):
        return (
            f"Here {team}'s supervisor has reached its limit of {_max_rounds(team, enabled)} "
            "rounds and hands back its outcome without asking its model."
        )

    def check(route: TeamRoute) -> None:
        name = route.next_worker.strip()
        if name.lower() not in FINISH_WORDS and name not in workers:
            raise ValueError(
                f"next_worker {name!r} is not a worker of {team}; use one of: "
                f"{', '.join([*workers, FINISH])}"
            )

    return JsonAsk(
        team_prompt(
            prompts,
            team,
            enabled,
            state.get("current_instruction") or "",
            state.get("current_inputs") or [],
            state.get("reports") or [],
            round_,
            _max_rounds(team, enabled),
        ),
        TeamRoute,
        f"{team}'s supervisor",
        repair_prompt(prompts, team_route_example(workers)),
        check=check,
        enums={"next_worker": [*workers, FINISH]},
        kind="decision",
        repair=lambda r: repair_route(r, [*workers, FINISH], team),
    )


def team_supervisor_node(state: dict, deps: Deps, team: str) -> Command:
    round_ = int(state.get("team_round") or 0) + 1
    step = int(state.get("current_step") or 0)
    if round_ > _max_rounds(team, deps.enabled):
        return _finish(
            state,
            team,
            f"{team}'s supervisor reached its limit of {_max_rounds(team, deps.enabled)} rounds",
            [],
        )

    ask = team_ask(state, deps.prompts, team, deps.enabled)
    assert isinstance(ask, JsonAsk), "within its rounds the supervisor asks its model"
    try:
        reply = ask_json(deps.worker_model, ask)
    except ModelReplyError as exc:
        return _finish(
            state,
            team,
            f"{team}'s supervisor could not decide: {exc}",
            tag_messages(exc.replies, step, team),
        )
    route: TeamRoute = reply.value
    said = tag_messages(reply.replies, step, team)
    name = route.next_worker.strip()
    if name.lower() in FINISH_WORDS:
        return _finish(
            state,
            team,
            route.reason or "the team's supervisor answered FINISH",
            said,
            reply.notices,
        )
    task = route.task.strip() or (state.get("current_instruction") or "")
    return Command(
        update={
            "team_round": round_,
            "worker_task": task,
            "messages": said,
            "notices": reply.notices,
            "team_steps": [
                team_step(
                    state,
                    "supervisor",
                    "route",
                    f"→ {name}: {task}",
                    worker=name,
                    reason=route.reason,
                )
            ],
        },
        goto=name,
    )


def _finish(
    state: dict, team: str, reason: str, said: list, notices: Sequence[str] = ()
) -> Command:
    """Hand the team's outcome back: done when every worker's latest report is good."""
    latest: dict[str, dict] = {}
    for r in state.get("reports") or []:
        latest[r["worker"]] = r
    failed = [r for r in latest.values() if not r.get("ok")]
    ok = bool(latest) and not failed
    result = "\n".join(f"{r['worker']}: {r['text']}" for r in latest.values()) or ""
    outcome = {
        "status": "done" if ok else "failed",
        "team": team,
        "result": result,
        "reason": None
        if ok
        else (
            "; ".join(f"{r['worker']}: {r['text']}" for r in failed)
            or f"no worker reported ({reason})"
        ),
        "ended_at": time.time(),
    }
    return Command(
        update={
            "team_results": {state["current_subtask_id"]: outcome},
            "messages": said,
            "notices": list(notices),
            "team_steps": [
                team_step(state, "supervisor", "finish", f"FINISH ({outcome['status']}): {reason}")
            ],
        },
        goto=END,
    )
