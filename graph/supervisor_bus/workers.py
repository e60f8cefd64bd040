"""The worker nodes of supervisor_bus: each processes its own inbox, once per message.

A worker takes the requests addressed to it that it has not consumed, records each id
in its own ``<agent>_consumed`` field (whatever happens next: a message is handled at
most once), runs its model with the tools of its role through the tool gate, and
answers the sender with a ``result`` (or an ``error`` when it found nothing usable).
A refused tool call becomes an ``error`` message of its own.

Timeouts: a request's answer is due ``timeout_s`` after it was sent, not counting the
time the worker's model calls were in progress: a reply still being written on a slow
server is work, not lateness (a call whose tokens stop coming is ended by the model
layer's stall clock, and one that runs past its cap by that cap). A worker past that
deadline stops before its next model call or tool call and sends nothing (late work is
abandoned, with no side effect after the deadline); the supervisor's registry then sees
the request unanswered and escalates it.

A user agent (``Deps.user_agents``) handles its requests the same way, but runs as its
ReAct worker over exactly its own tools, the side-effecting ones behind the approval gate
(``graph.kernel.user_agent_steps``), keyed by the request like ``write_draft``: a resumed
or replayed request does not make a call twice. Its run is not cut at the deadline: a
gated tool may wait for a person, and that wait is not lateness.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from graph.agents.user_agents import UserAgent
from graph.errors import StepwiseError
from graph.kernel.messages import tag_messages
from graph.kernel.user_agent_steps import run_gated_user_agent
from graph.models.replies import reply_text
from graph.supervisor_bus.agents import AGENTS
from graph.supervisor_bus.bus import Outbox, by_id, inbox, messages
from graph.supervisor_bus.deps import Deps
from graph.supervisor_bus.prompts import agent_prompt, request_prompt
from graph.supervisor_bus.state import Message, consumed_field
from graph.supervisor_bus.tools import Gate, tools_for
from graph.tools.database import open_database

TOOL_ROUNDS = 6  # model/tool turns a worker may take for one request
USELESS = "No usable results"


class TooLate(StepwiseError):
    """The request's deadline passed while the worker was on it."""

    def __init__(self, conversation: list[BaseMessage]):
        super().__init__("deadline passed")
        self.conversation = conversation


@dataclass
class Handled:
    conversation: list[BaseMessage]
    text: str
    refused: list[dict] = field(default_factory=list)
    tool_results: dict[str, list[ToolMessage]] = field(default_factory=dict)


def _late(deadline: float) -> bool:
    return time.time() > deadline


def handle(
    deps: Deps,
    agent: str,
    request: Message,
    inputs: list[Message],
    config: RunnableConfig,
    deadline: float,
) -> Handled:
    """Run ``agent``'s model on one request, tools through the gate, until it answers."""
    tools = tools_for(
        agent, deps.knowledge, deps.ledger, deps.drafts_dir, request.id, shared=deps.built
    )
    gate = Gate(agent, tools)
    model = deps.worker_model.bind_tools(gate.bindable())
    conversation: list[BaseMessage] = [
        SystemMessage(content=agent_prompt(deps.prompts, agent)),
        HumanMessage(
            content=request_prompt(deps.prompts, request.payload.get("task", ""), inputs),
            name="request",
        ),
    ]
    results: dict[str, list[ToolMessage]] = {}
    for _ in range(TOOL_ROUNDS):
        if _late(deadline):
            raise TooLate(conversation)
        began = time.time()
        reply = model.invoke(conversation, config)
        deadline += time.time() - began  # the clock stood still while the reply was written
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=reply_text(reply))
        conversation.append(reply)
        if not reply.tool_calls:
            text = reply_text(reply).strip().removeprefix("FINAL ANSWER:").strip()
            return Handled(
                conversation, text or f"{USELESS}: {agent} said nothing.", gate.refused, results
            )
        for call in reply.tool_calls:
            if _late(deadline):  # a tool that kept the worker past it: nothing more is done
                raise TooLate(conversation)
            result = gate.execute(call)
            conversation.append(result)
            results.setdefault(result.name or "", []).append(result)
    return Handled(
        conversation,
        f"{USELESS}: {agent} did not finish within {TOOL_ROUNDS} tool rounds.",
        gate.refused,
        results,
    )


def handle_user_agent(
    deps: Deps,
    agent: UserAgent,
    request: Message,
    inputs: list[Message],
    config: RunnableConfig,
    step: int,
) -> Handled:
    """Run user agent ``agent`` on one request: its ReAct worker, its gated tools."""
    database = deps.built.get("database", open_database) if "run_sql" in agent.tool_names else None
    conversation = run_gated_user_agent(
        agent,
        deps.worker_model,
        request_prompt(deps.prompts, request.payload.get("task", ""), inputs),
        config,
        settings=deps.settings,
        ledger=deps.ledger,
        scope=f"bus/{request.id}",
        step=step,
        knowledge=deps.knowledge,
        database=database,
        prompts=deps.prompts,
    )
    last = next((m for m in reversed(conversation) if isinstance(m, AIMessage)), None)
    text = reply_text(last).strip().removeprefix("FINAL ANSWER:").strip() if last else ""
    results: dict[str, list[ToolMessage]] = {}
    for m in conversation:
        if isinstance(m, ToolMessage):
            results.setdefault(m.name or "", []).append(m)
    return Handled(
        conversation, text or f"{USELESS}: {agent.name} said nothing.", tool_results=results
    )


def _payload(agent: str, handled: Handled) -> dict:
    """What an answer carries: ``text`` is what the next agent reads."""
    payload: dict = {"text": handled.text}
    sources = [
        s
        for m in handled.tool_results.get("search_knowledge_base", [])
        + handled.tool_results.get("fetch_document", [])
        for s in (m.artifact or [])
    ]
    if sources:
        payload["sources"] = list({s["id"]: s for s in sources}.values())
    if formatted := handled.tool_results.get("format_output"):
        payload["summary"] = handled.text
        payload["text"] = str(formatted[-1].content)
    if saved := handled.tool_results.get("write_draft"):
        payload["draft"] = str(saved[-1].content)
    return payload


def worker_node(state: dict, config: RunnableConfig, deps: Deps, agent: str) -> Command:
    pending = inbox(state, agent, types=("request",))
    step = int(state.get("current_step") or 0)
    if not pending:
        return Command(
            update={
                "notices": [
                    f"{agent} ran with an empty inbox: nothing to "
                    "handle (a message is handled once)."
                ]
            },
            goto="supervisor",
        )
    bus = messages(state)
    timeout = float(state.get("timeout_s") or deps.timeout_s)
    out = Outbox(state, agent)
    conversation: list[BaseMessage] = []
    completed: set[str] = set()
    notices: list[str] = []
    for request in pending:
        inputs = [m for i in request.payload.get("inputs") or [] if (m := by_id(bus, i))]
        try:
            handled = (
                handle_user_agent(deps, own, request, inputs, config, step)
                if (own := deps.user_agents.get(agent)) is not None
                else handle(deps, agent, request, inputs, config, request.sent_at + timeout)
            )
        except TooLate as late:
            conversation += late.conversation
            notices.append(
                f"{agent} was past the {timeout:g} s deadline of {request.id}: "
                "it stopped without answering."
            )
            continue
        conversation += handled.conversation
        for refused in handled.refused:
            out.send(
                request.from_,
                "error",
                {
                    "kind": "tool_refused",
                    "tool": refused["tool"],
                    "request": request.id,
                    "allowed": list(AGENTS[agent].tools),
                    "text": f"Refused: {agent} asked for {refused['tool']!r}, which its role does "
                    f"not allow (its tools: {', '.join(AGENTS[agent].tools)}).",
                },
            )
        useful = not handled.text.startswith(USELESS)
        out.send(
            request.from_,
            "result" if useful else "error",
            _payload(agent, handled),
            in_reply_to=request.id,
        )
        if useful:
            completed.add(agent)
    update = {
        consumed_field(agent): [m.id for m in pending],
        "bus": out.sent,
        "messages": tag_messages(
            [m for m in conversation if not isinstance(m, SystemMessage)], step, agent
        ),
    }
    if completed:
        update["completed_agents"] = completed
    if notices:
        update["notices"] = notices
    return Command(update=update, goto="supervisor")
