"""A team's workers: the tools each is offered (``worker_tools``; the HTTP ones only
propose a call, which the ``call_api`` gate sends: ``http_gate``), the first request it
sends its model (``worker_ask``) and its node, which reports back to its supervisor."""

from __future__ import annotations

from typing import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import Command

from graph.hierarchical_teams.agents import AGENTS
from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.prompts import worker_prompts
from graph.hierarchical_teams.team_steps import USELESS, team_step
from graph.kernel.messages import tag_messages
from graph.kernel.node_asks import ToolAsk
from graph.models.replies import reply_text
from graph.prompts import PromptSet
from graph.settings import Settings
from graph.tools.news import build_news_urls_tool, find_news_sites_tool
from graph.tools.team_api import ApiCall, api_base

TOOL_ROUNDS = 4
HTTP_TOOLS = {"http_get": "GET", "http_post": "POST"}


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
                        team_step(
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
            "team_steps": [team_step(state, worker, "report", text, ok=ok)],
        },
        goto="supervisor",
    )
