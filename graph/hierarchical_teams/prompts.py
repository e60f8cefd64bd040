"""The prompts of hierarchical_teams: which placeholders each may use, and the functions
that fill them. The texts live in ``prompts/hierarchical_teams/*.txt``.

What reaches a team is built here from the team's own input only (its subtask's
instruction, the results it depends on, its workers' reports): no function below that
serves a team takes the request or another subtask.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from graph.hierarchical_teams.agents import (
    AGENTS,
    TEAMS,
    enabled_teams,
    format_team_list,
    team_workers,
)
from graph.prompts import PromptSet, PromptSpec, register

_P = "hierarchical_teams/"
FINISH = "FINISH"

register(
    PromptSpec(
        _P + "plan",
        "Lead supervisor: decompose the request into subtasks, one team each.",
        frozenset({"request", "team_list", "team_enum", "team_names", "plan_example"}),
        frozenset({"request", "team_list"}),
    )
)
register(
    PromptSpec(
        _P + "replan",
        "Lead supervisor: revise the plan after the user edited "
        "the request (keep, cancel with a reason, add).",
        frozenset(
            {
                "request",
                "previous_request",
                "revision",
                "subtask_table",
                "team_list",
                "team_enum",
                "team_names",
                "open_ids",
                "replan_example",
            }
        ),
        frozenset({"request", "subtask_table"}),
    )
)
register(
    PromptSpec(
        _P + "route",
        "Lead supervisor: pick the next subtask among several that can run, or FINISH.",
        frozenset({"listing", "finish", "id_names", "route_example"}),
        frozenset({"listing", "finish"}),
    )
)
register(
    PromptSpec(
        _P + "team_supervisor",
        "A team's supervisor: picks its next worker or FINISH, from its subtask only.",
        frozenset(
            {
                "team",
                "team_description",
                "worker_list",
                "worker_enum",
                "worker_names",
                "route_example",
                "instruction",
                "inputs",
                "reports",
                "round",
                "max_rounds",
            }
        ),
        frozenset({"instruction"}),
    )
)
register(
    PromptSpec(
        _P + "worker_task",
        "What a worker receives: its task and the results handed to it.",
        frozenset({"task", "inputs"}),
        frozenset({"task"}),
    )
)
for _name, _spec in AGENTS.items():
    register(
        PromptSpec(
            _P + _name,
            f"Role of {_name} in {_spec.team} (its system prompt).",
            frozenset({"api_base"}) if _spec.side_effects else frozenset(),
        )
    )
register(
    PromptSpec(
        _P + "repair",
        "Sent back when a supervisor's JSON is unusable.",
        frozenset({"error", "reply", "expected"}),
        frozenset({"error"}),
    )
)

# The example request of the plan prompt, and a subtask per team for it: a model sees a
# concrete, valid plan (real team names), never a placeholder it could copy.
EXAMPLE_SUBTASKS = {
    "search_team": "Find reliable news sites about interest rates and return full Google News "
    "search URLs for each site.",
    "request_team": "Send the site URLs found by the subtask it depends on to the API's /sites "
    "endpoint and report what it stored.",
}
EXAMPLE_TASKS = {  # what a team supervisor's example hands its first worker
    "health_checker": "Call the API's health endpoint once and report whether it is up.",
    "site_requester": "Send the site URLs you were given to the API's /sites endpoint.",
    "searcher": "Find reliable news sites about interest rates.",
    "url_builder": "Build Google News search URLs for the sites found, with the query terms: "
    "interest rates",
}


def plan_example(enabled: list[str] | None) -> str:
    teams = enabled_teams(enabled)
    subtasks: list[dict] = []
    for team in ("search_team", "request_team"):
        if team in teams:
            depends = [subtasks[-1]["id"]] if subtasks and team == "request_team" else []
            subtasks.append(
                {
                    "id": str(len(subtasks) + 1),
                    "team": team,
                    "instruction": EXAMPLE_SUBTASKS[team],
                    "depends_on": depends,
                }
            )
    return json.dumps({"subtasks": subtasks})


def open_ids(subtasks: list[dict]) -> list[str]:
    return [s["id"] for s in subtasks if s["status"] in ("pending", "delegated")]


def replan_example(subtasks: list[dict], enabled: list[str] | None) -> str:
    """A valid revision of these subtasks: keep the first open one, cancel the second, add
    one for the first team that is on."""
    ids = open_ids(subtasks)
    teams = enabled_teams(enabled)
    add = (
        [{"team": teams[0], "instruction": EXAMPLE_SUBTASKS.get(teams[0], ""), "depends_on": []}]
        if teams
        else []
    )
    return json.dumps(
        {
            "keep": ids[:1],
            "cancel": [
                {"id": i, "reason": "The edited request no longer asks for it."} for i in ids[1:2]
            ],
            "add": add,
        }
    )


def route_names(ids: list[str]) -> list[str]:
    return [*ids, FINISH]


def team_names(enabled: list[str] | None) -> str:
    return ", ".join(enabled_teams(enabled)) or "(none)"


def plan_prompt(prompts: PromptSet, request: str, enabled: list[str] | None) -> str:
    return prompts.render(
        _P + "plan",
        request=request,
        team_list=format_team_list(enabled),
        team_enum=team_names(enabled),
        team_names=team_names(enabled),
        plan_example=plan_example(enabled),
    )


def subtask_line(s: dict) -> str:
    deps = f" depends_on={','.join(s.get('depends_on') or [])}" if s.get("depends_on") else ""
    text = f"- {s['id']} [{s['team']}] status={s['status']}{deps}: {s['instruction']}"
    if s.get("result"):
        text += f" | result: {' '.join(str(s['result']).split())[:300]}"
    if s.get("reason"):
        text += f" | reason: {s['reason']}"
    return text


def replan_prompt(
    prompts: PromptSet,
    request: str,
    previous: str,
    revision: int,
    subtasks: list[dict],
    enabled: list[str] | None,
) -> str:
    return prompts.render(
        _P + "replan",
        request=request,
        previous_request=previous,
        revision=revision,
        subtask_table="\n".join(subtask_line(s) for s in subtasks) or "- (none)",
        team_list=format_team_list(enabled),
        team_enum=team_names(enabled),
        team_names=team_names(enabled),
        open_ids=", ".join(open_ids(subtasks)) or "(none)",
        replan_example=replan_example(subtasks, enabled),
    )


def route_example(ids: list[str]) -> str:
    return json.dumps(
        {
            "next_subtask_id": ids[0] if ids else FINISH,
            "reason": f"{ids[0]} comes first in the plan." if ids else "No subtask should run.",
        }
    )


def route_prompt(prompts: PromptSet, dispatchable: list[dict]) -> str:
    listing = "\n".join(
        f"- id={s['id']} team={s['team']} instruction={json.dumps(s['instruction'])}"
        for s in dispatchable
    )
    ids = [s["id"] for s in dispatchable]
    return prompts.render(
        _P + "route",
        listing=listing,
        finish=FINISH,
        id_names=", ".join(route_names(ids)),
        route_example=route_example(ids),
    )


def inputs_block(inputs: list[dict], heading: str) -> str:
    """Results handed to a team or a worker: id (or worker), and the text."""
    if not inputs:
        return ""
    lines = []
    for i in inputs:
        who = i.get("id") or i.get("worker")
        text = str(i.get("result") or i.get("text") or "").strip().splitlines() or [""]
        lines.append(f"- {who} ({i.get('team') or 'teammate'}): {text[0]}")
        lines += [f"  {line.strip()}" for line in text[1:] if line.strip()]
    return f"{heading}\n" + "\n".join(lines)


def team_route_example(workers: list[str]) -> str:
    first = workers[0] if workers else None
    return json.dumps(
        {
            "next_worker": first or FINISH,
            "task": EXAMPLE_TASKS.get(first or "", ""),
            "reason": f"{first} has not reported yet." if first else "No worker is on.",
        }
    )


def team_prompt(
    prompts: PromptSet,
    team: str,
    enabled: list[str],
    instruction: str,
    inputs: list[dict],
    reports: list[dict],
    round_: int,
    max_rounds: int,
) -> str:
    workers = team_workers(team, enabled)
    return prompts.render(
        _P + "team_supervisor",
        team=team,
        team_description=TEAMS[team].description,
        worker_list="\n".join(f"- {w}: {AGENTS[w].description}" for w in workers),
        worker_enum=", ".join([*workers, FINISH]),
        worker_names=", ".join([*workers, FINISH]),
        route_example=team_route_example(workers),
        instruction=instruction,
        inputs=inputs_block(inputs, "Results of the subtasks yours depends on:"),
        reports="\n".join(
            f"- {r['worker']} ({'ok' if r.get('ok') else 'failed'}): "
            f"{' '.join(str(r.get('text', '')).split())}"
            for r in reports
        )
        or "- (none yet)",
        round=round_,
        max_rounds=max_rounds,
    )


def worker_prompts(
    prompts: PromptSet,
    worker: str,
    task: str,
    inputs: list[dict],
    reports: list[dict],
    api_base: str = "",
) -> tuple[str, str]:
    """(system prompt, task prompt) of a worker: its role, and its task with what it was
    handed (the subtask's inputs and its teammates' reports)."""
    role = prompts.render(_P + worker, api_base=api_base)
    handed = inputs_block(inputs, "Results handed to your team:")
    if reports:
        handed += ("\n" if handed else "") + inputs_block(
            [{"worker": r["worker"], "text": r.get("text", "")} for r in reports if r.get("ok")],
            "Your teammates' reports:",
        )
    return role, prompts.render(_P + "worker_task", task=task, inputs=handed).strip()


def repair_prompt(prompts: PromptSet, expected: str) -> Callable[[str, str], str]:
    return lambda error, reply: prompts.render(
        _P + "repair", error=error, reply=reply[:2000], expected=expected
    )


SAMPLE: dict[str, Any] = {
    "request": "Check that the API is healthy and find reliable news sites about what moves "
    "the stock market",
    "subtasks": [
        {
            "id": "s1",
            "team": "request_team",
            "status": "done",
            "depends_on": [],
            "instruction": "Check the API's health endpoint and report whether the API is "
            "healthy and available.",
            "result": 'HTTP 200: {"status": "ok"}',
        },
        {
            "id": "s2",
            "team": "search_team",
            "status": "pending",
            "depends_on": [],
            "instruction": "Find reliable news sites about what moves the stock market and "
            "return full Google News search URLs for each site.",
        },
    ],
}


def preview_prompt(name: str, text: str, state: dict | None = None) -> str:
    """Prompt ``name`` as a model would receive it with ``text`` as its template, for a
    sample state; PromptError names any bad placeholder."""
    prompts = PromptSet({name: text})
    short = name.removeprefix(_P)
    state = state or {}
    request = state.get("request") or SAMPLE["request"]
    subtasks = state.get("subtasks") or SAMPLE["subtasks"]
    enabled = state.get("enabled_agents") or list(AGENTS)
    if short == "plan":
        return plan_prompt(prompts, request, enabled)
    if short == "replan":
        return replan_prompt(
            prompts, request + " and send their URLs to the API", request, 1, subtasks, enabled
        )
    if short == "route":
        return route_prompt(prompts, subtasks)
    if short == "team_supervisor":
        return team_prompt(
            prompts, "search_team", enabled, SAMPLE["subtasks"][1]["instruction"], [], [], 1, 6
        )
    if short == "repair":
        return prompts.render(
            name,
            error="the reply is not valid JSON",
            reply="Sure! Here…",
            expected=plan_example(enabled),
        )
    if short == "worker_task":
        return worker_prompts(
            prompts,
            "url_builder",
            "Build Google News search URLs for the sites found, with the query terms: stock market",
            [],
            [{"worker": "searcher", "ok": True, "text": "- reuters.com (Reuters)"}],
        )[1]
    return worker_prompts(prompts, short, "(the task)", [], [], api_base="http://127.0.0.1:8765")[0]
