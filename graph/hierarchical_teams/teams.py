"""The teams: each a compiled subgraph with its own supervisor and workers.

A team's input is its subtask only (``TeamInput``: id, instruction, the results it
depends on); every prompt its models receive is built from that and from its
workers' reports, never from the request or another subtask. Its output is its
outcome in ``team_results`` and its inner steps (``TeamOutput``).

request_team's workers make real HTTP calls, which have side effects: a worker's
model proposes the call (a tool call, not carried out), and the ``call_api`` node
checks it against the allowlist, asks a human with ``interrupt()`` (the exact method,
URL and body), and only then sends it. The call is recorded in the side-effect ledger
under the run and the subtask, as ``sending`` before it goes out and ``sent`` once its
answer is in, with an ``Idempotency-Key`` header derived from that key: a replay, a
retry or a resumed run never sends a sent call twice, and a call a crash left in
``sending`` (it may or may not have reached the API) is not resent on its own: a human
is asked, told that the earlier attempt's outcome is unknown.

Over 400 lines: a team's supervisor, workers and approval gate are one compiled subgraph
and share its state; apart they would each need the others to be read.
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import partial
from typing import Any, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from pydantic import BaseModel, Field

from graph.hierarchical_teams.agents import AGENTS, team_workers
from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.prompts import (
    FINISH,
    repair_prompt,
    team_prompt,
    team_route_example,
    worker_prompts,
)
from graph.hierarchical_teams.state import TeamInput, TeamOutput, TeamState
from graph.kernel.approval import HumanDecision, ask_human
from graph.kernel.messages import FINISH_WORDS, tag_messages
from graph.kernel.node_asks import ToolAsk
from graph.kernel.slips import repair_name
from graph.models.replies import reply_text
from graph.models.structured import JsonAsk, ModelReplyError, ask_json
from graph.prompts import PromptSet
from graph.settings import Settings
from graph.tools.effects import Effect, key_digest
from graph.tools.news import build_news_urls_tool, find_news_sites_tool
from graph.tools.team_api import (
    OUTCOME_UNKNOWN,
    ApiCall,
    RefusedCall,
    api_base,
    check_allowed,
    send,
)

TOOL_ROUNDS = 4
USELESS = "No usable results"
HTTP_TOOLS = {"http_get": "GET", "http_post": "POST"}


class TeamRoute(BaseModel):
    next_worker: str = Field(min_length=1)
    task: str = ""
    reason: str = ""


def repair_route(route: TeamRoute, names: list[str], team: str) -> tuple[TeamRoute, list[str]]:
    """The route with ``next_worker`` read as the one name of ``names`` it means when a
    small model wrote it in another case or spacing; a notice says so."""
    name, said = repair_name(route.next_worker, names, f"{team}'s supervisor named next_worker")
    return route.model_copy(update={"next_worker": name}), said


def _step(state: dict, node: str, kind: str, text: str, **extra: Any) -> dict:
    """One inner step of a team, for the Run page."""
    return {
        "subtask_id": state.get("current_subtask_id"),
        "team": state.get("current_team"),
        "node": node,
        "kind": kind,
        "text": text,
        "at": time.time(),
        **extra,
    }


def _max_rounds(team: str, enabled: list[str]) -> int:
    return 2 * len(team_workers(team, enabled)) + 2


# --------------------------------------------------------------------------- supervisor


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
                _step(
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
                _step(state, "supervisor", "finish", f"FINISH ({outcome['status']}): {reason}")
            ],
        },
        goto=END,
    )


# --------------------------------------------------------------------------- workers


def worker_tools(worker: str, settings: Settings) -> list:
    """The tools ``worker``'s model is offered (the HTTP ones only propose a call)."""
    if worker == "searcher":
        key = settings.tavily_api_key
        return [find_news_sites_tool(key.get_secret_value() if key else None)]
    if worker == "url_builder":
        return [build_news_urls_tool()]
    from langchain_core.tools import StructuredTool

    if worker == "health_checker":

        def http_get(url: str) -> str:
            """Proposed only: the call_api node sends it after approval."""
            return ""

        return [
            StructuredTool.from_function(
                http_get,
                name="http_get",
                description="GET a URL of the API (a human approves it before it is sent).",
            )
        ]

    def http_post(url: str, body: dict) -> str:
        """Proposed only: the call_api node sends it after approval."""
        return ""

    return [
        StructuredTool.from_function(
            http_post,
            name="http_post",
            description="POST a JSON body to a URL of the API (a human approves it before it is "
            "sent).",
        )
    ]


def worker_ask(
    state: dict, prompts: PromptSet, worker: str, settings: Settings, tools: Sequence[BaseTool]
) -> ToolAsk:
    """The first request ``worker`` sends from its team's state: its role, the task its
    supervisor gave it and the tools it may call (the node asks it, the playground too)."""
    role, task = worker_prompts(
        prompts,
        worker,
        state.get("worker_task") or "",
        state.get("current_inputs") or [],
        state.get("reports") or [],
        api_base=api_base(settings) if AGENTS[worker].side_effects else "",
    )
    return ToolAsk(
        f"{worker}'s call",
        (SystemMessage(content=role), HumanMessage(content=task, name="team_supervisor")),
        tuple(tools),
    )


def worker_node(state: dict, config: RunnableConfig, deps: Deps, worker: str) -> Command:
    """Run the worker's model with its tools on the task its supervisor gave it. A
    proposed HTTP call goes to ``call_api``; anything else is carried out here."""
    step = int(state.get("current_step") or 0)
    # A worker's tools hold no run data: built once per graph, not at every task.
    made = deps.built.get(f"{worker}/tools", lambda: worker_tools(worker, deps.settings))
    tools = {t.name: t for t in made}
    ask = worker_ask(state, deps.prompts, worker, deps.settings, made)
    model = deps.worker_model.bind_tools(list(ask.tools))
    conversation: list[BaseMessage] = list(ask.messages)
    text = f"{USELESS}: {worker} did not finish within {TOOL_ROUNDS} tool rounds."
    for _ in range(TOOL_ROUNDS):
        reply = model.invoke(conversation, config)
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=reply_text(reply))
        conversation.append(reply)
        if not reply.tool_calls:
            text = reply_text(reply).strip() or f"{USELESS}: {worker} said nothing."
            break
        call = reply.tool_calls[0]
        if call["name"] in HTTP_TOOLS:
            args = call.get("args") or {}
            method, url = HTTP_TOOLS[call["name"]], str(args.get("url", ""))
            body = args.get("body") if call["name"] == "http_post" else None
            proposed = {
                "worker": worker,
                "method": method,
                "url": url,
                "body": body,
                "tool": call["name"],
                "call_id": call.get("id") or "",
            }
            return Command(
                update={
                    "proposed_call": proposed,
                    "messages": tag_messages(conversation[1:], step, worker),
                    "team_steps": [
                        _step(
                            state,
                            worker,
                            "propose",
                            "proposes " + ApiCall(method, url, body).describe(),
                        )
                    ],
                },
                goto="call_api",
            )
        for c in reply.tool_calls:
            tool = tools.get(c["name"])
            if tool is None:
                result = ToolMessage(
                    content=f"REFUSED: {worker} has no tool {c['name']!r}.",
                    tool_call_id=c.get("id") or "",
                    name=c["name"],
                    status="error",
                )
            else:
                result = tool.invoke({**c, "type": "tool_call"})
            conversation.append(result)
    ok = not text.startswith(USELESS) and not text.startswith(("ERROR", "REFUSED"))
    return Command(
        update={
            "reports": [
                {"worker": worker, "task": state.get("worker_task"), "text": text, "ok": ok}
            ],
            "messages": tag_messages(conversation[1:], step, worker),
            "team_steps": [_step(state, worker, "report", text, ok=ok)],
        },
        goto="supervisor",
    )


# --------------------------------------------------------------------------- the HTTP gate


def _parse_edited(text: str, original: ApiCall) -> ApiCall:
    """A call as a human edited it: "METHOD URL [JSON body]"."""
    parts = text.strip().split(None, 2)
    if len(parts) < 2:
        raise ValueError("write the call as: METHOD URL [JSON body]")
    body = original.body
    if len(parts) == 3:
        body = json.loads(parts[2])
    return ApiCall(parts[0].upper(), parts[1], body)


def call_key(state: dict, call: ApiCall) -> str:
    digest = hashlib.sha1(call.describe().encode()).hexdigest()[:12]
    return (
        f"teams/{state.get('current_call_scope') or ''}/{state.get('current_subtask_id')}/{digest}"
    )


def call_api_node(state: dict, deps: Deps) -> Command:
    proposed = dict(state.get("proposed_call") or {})
    worker = proposed.get("worker", "?")
    call = ApiCall(proposed.get("method", "GET"), proposed.get("url", ""), proposed.get("body"))
    step = int(state.get("current_step") or 0)
    base = api_base(deps.settings)
    update: dict = {"proposed_call": None, "approvals": [], "team_steps": [], "messages": []}

    def report(text: str, ok: bool) -> Command:
        update["reports"] = [
            {
                "worker": worker,
                "task": state.get("worker_task"),
                "text": text,
                "ok": ok,
                "call": call.as_dict(),
            }
        ]
        update["team_steps"].append(
            _step(state, "call_api", "call", text, ok=ok, call=call.describe())
        )
        # the answer to the worker's proposed tool call: what the call returned
        update["messages"].append(
            tag_messages(
                [
                    ToolMessage(
                        content=text,
                        tool_call_id=proposed.get("call_id") or "",
                        name=proposed.get("tool") or "http",
                    )
                ],
                step,
                worker,
            )[0]
        )
        return Command(update={k: v for k, v in update.items() if v != []}, goto="supervisor")

    def ask(reason: str) -> HumanDecision | Command:
        return ask_human(
            {
                "kind": "approval",
                "step": step,
                "agent": worker,
                "team": state.get("current_team"),
                "subtask_id": state.get("current_subtask_id"),
                "query": call.describe(),
                "call": call.as_dict(),
                "asked_at": time.time(),
                "reason": reason,
            },
            node="call_api",
        )

    def recorded(decision: HumanDecision, **extra: Any) -> None:
        update["approvals"].append(
            {
                "kind": "approval",
                "step": step,
                "agent": worker,
                "subtask_id": state.get("current_subtask_id"),
                "query": call.describe(),
                **decision.model_dump(),
                "decided_at": time.time(),
                **extra,
            }
        )

    def already_sent(found: Effect) -> Command:
        return report(
            f"{found.result} (already sent for this subtask: not repeated)",
            not found.result.startswith("ERROR"),
        )

    try:
        call = ApiCall(call.method, check_allowed(call, base), call.body)
    except RefusedCall as exc:
        return report(str(exc), False)
    found = deps.ledger.entry(call_key(state, call))
    if found is not None and found.finished:
        return already_sent(found)
    if found is not None:  # "sending": a crash came between sending and its answer
        decision = ask(
            f"An earlier attempt to send {call.method} {call.url} was cut off (the app "
            "stopped) before its answer was recorded: the outcome of that attempt is "
            "unknown, and the API may already have acted on it. Approve to send it again "
            "(with the same Idempotency-Key, so an API that honours it applies it once), "
            "or reject it to leave it unsent."
        )
        if isinstance(decision, Command):  # not a decision: the same question, asked again
            return decision
        recorded(decision, outcome_unknown=True)
        if decision.decision != "approve":
            return report(
                f"{USELESS}: the earlier attempt at {call.describe()} was cut off and its "
                f"outcome is unknown; it was not sent again ({decision.decision} by "
                f"{decision.by}: {decision.reason or 'no reason given'}).",
                False,
            )
        update["team_steps"].append(
            _step(state, "call_api", "approval", f"resend approved by {decision.by}")
        )
    elif deps.approvals.get(worker, "always") != "never":
        decision = ask(
            f"{worker} is about to send a real HTTP request with side effects: "
            f"{call.method} {call.url}. Approve to send it, edit the call, or reject it."
        )
        if isinstance(decision, Command):  # not a decision: the same question, asked again
            return decision
        recorded(decision)
        who = {
            "timeout": "The approval timed out; the default applied",
            "experiment": "The experiment, deciding automatically,",
        }.get(decision.by, "A human")
        if decision.decision in ("reject", "skip"):
            update["team_steps"].append(
                _step(state, "call_api", "approval", f"{decision.decision}: {decision.reason}")
            )
            return report(
                f"{USELESS}: {who} declined the call {call.describe()} "
                f"({decision.decision}: {decision.reason or 'no reason given'}); "
                "nothing was sent.",
                False,
            )
        if decision.decision == "edit" and decision.query.strip():
            try:
                edited = _parse_edited(decision.query, call)
                call = ApiCall(edited.method, check_allowed(edited, base), edited.body)
            except RefusedCall as exc:
                return report(str(exc), False)
            except ValueError as exc:
                return report(
                    f"{USELESS}: the edited call is unusable ({exc}); nothing was sent.", False
                )
            found = deps.ledger.entry(call_key(state, call))
            if found is not None and found.finished:
                return already_sent(found)
        update["team_steps"].append(
            _step(
                state,
                "call_api",
                "approval",
                f"{decision.decision} by {decision.by}: {call.describe()}",
            )
        )
    # Intent first: killed from here until the answer is recorded, the call stays
    # "sending", and a resumed run asks a human instead of sending it again.
    key = call_key(state, call)
    deps.ledger.begin(key, "sending", call.describe())
    result = send(call, base, deps.settings.teams_http_timeout_s, idempotency_key=key_digest(key))
    if not result.startswith("ERROR"):
        deps.ledger.finish(key, result, "sent")
    elif OUTCOME_UNKNOWN not in result:
        deps.ledger.forget(key)  # a failed call may be tried again; a sent one never
    # else: sent with no answer; it stays "sending", so trying it again asks a human
    return report(result, not result.startswith("ERROR"))


# --------------------------------------------------------------------------- the subgraph


def build_team(team: str, deps: Deps) -> CompiledStateGraph:
    """A team's compiled subgraph: its supervisor, its enabled workers, and (for a team
    with side-effecting workers) the ``call_api`` gate."""
    workers = team_workers(team, deps.enabled)
    gated = any(AGENTS[w].side_effects for w in workers)
    builder = StateGraph(TeamState, input_schema=TeamInput, output_schema=TeamOutput)
    builder.add_node(
        "supervisor",
        partial(team_supervisor_node, deps=deps, team=team),
        destinations=(*workers, END),
    )
    for w in workers:
        builder.add_node(
            w,
            partial(worker_node, deps=deps, worker=w),
            destinations=("call_api", "supervisor") if AGENTS[w].side_effects else ("supervisor",),
        )
    if gated:
        builder.add_node(
            "call_api", partial(call_api_node, deps=deps), destinations=("supervisor",)
        )
    builder.add_edge(START, "supervisor")
    return builder.compile(name=team)
