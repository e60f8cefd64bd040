"""Tools behind the approval gate: an agent's side-effecting tools ask a person before each
call, and each call is carried out once, even across a crash, a resume or a fork.

``gate_tools(tools, ledger, agent=...)`` takes LangChain tools (MCP tools from
``graph.tools.mcp_servers.agent_tools``, or any other) and returns the ones an agent binds:
a read-only tool as it is, a side-effecting one wrapped. Each tool's policy is
``policies[tool.name]`` when given (the Tools page's stored choice), else its metadata's
``policy`` (an MCP tool's default, from its annotations), else side-effecting: a tool
nobody described must ask.

A wrapped call, inside a LangGraph run (a ReAct agent's tool node, any node):

1. its ledger key is ``tools/<scope>/<tool>/<digest of the arguments>`` (``scope``: the
   caller's, e.g. a run's session and step; by default the run's thread id). A key already
   carried out answers with its recorded result and calls nothing (also when the call was
   approved with edited arguments: the proposed call's key then points to the edited one,
   since a decision is not kept by LangGraph across the app's death before the next
   checkpoint, and the resumed run would otherwise ask again about a call already made).
2. it asks through the project's one gate, ``graph.kernel.approval.ask_human``: the standard
   LangChain HITL request whose action is the tool's exact name and arguments (``edit``
   changes them; ``tool_call`` carries them for the Approvals inbox, ``query`` as JSON
   text), so the inbox, the design's timeout and an experiment's automatic decisions
   (which skip it: it has side effects) answer it like every other question.
3. approved (or edited: the edited arguments are what the tool receives), the intent is
   recorded (``sending``), the tool is called, and the result recorded (``sent``). A call
   found ``sending`` (the app died between the call and its record) is not made again on
   its own: a person is asked, told its outcome is unknown. A call that failed before
   reaching the tool (a server down) is forgotten, so it may be tried again; one cut by its
   deadline stays ``sending``.

A rejected or skipped call, and a failed one, answer the agent with a sentence (the tool's
result), never an exception: the run goes on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.config import get_config
from langgraph.types import Command

from graph.agents.user_agent_tools import mcp_policies
from graph.kernel.approval import HumanDecision, ask_human, decided_by_words
from graph.redaction import redact
from graph.tools.effects import Effect, Ledger, key_digest

log = logging.getLogger(__name__)

READ_ONLY = "read_only"
SIDE_EFFECTING = "side_effecting"
POLICIES = (READ_ONLY, SIDE_EFFECTING)
EDITED = "edited"  # a ledger state: the proposed call was approved as the call in ``detail``


def policy_of(tool: BaseTool, policies: Mapping[str, str] | None = None) -> str:
    """``tool``'s policy: the given one, else its metadata's, else side-effecting."""
    chosen = (policies or {}).get(tool.name) or (tool.metadata or {}).get("policy")
    return chosen if chosen in POLICIES else SIDE_EFFECTING


def gate_tools(
    tools: Sequence[BaseTool],
    ledger: Ledger,
    *,
    agent: str,
    policies: Mapping[str, str] | None = None,
    scope: str | None = None,
    step: int | None = None,
) -> list[BaseTool]:
    """``tools`` as ``agent`` may bind them: read-only ones unchanged, side-effecting ones
    asking a person before each call and carrying it out once (see the module's text).
    ``scope`` names the calls' ledger keys (default: the run's thread id, read at call
    time); ``step`` is shown with the question."""
    return [
        tool
        if policy_of(tool, policies) == READ_ONLY
        else gated_tool(tool, ledger, agent=agent, scope=scope, step=step)
        for tool in tools
    ]


def gate_agent_tools(
    tools: Sequence[BaseTool],
    ledger: Ledger,
    *,
    agent: str,
    scope: str | None = None,
    step: int | None = None,
) -> list[BaseTool]:
    """A user agent's tools (``graph.agents.user_agent_tools.tools_for``) as it binds them:
    each MCP tool under its own server's policies (the Tools page's choice, else the default
    from its annotations): a read-only one as it is, marked read-only, a side-effecting one
    gated; a tool of no MCP server (a built-in read-only one, the placeholder of a server
    that is not connected) as it is. Policies are keyed by tool name per server, so two
    servers' tools of one name keep their own."""
    gated: list[BaseTool] = []
    policies: dict[str, dict[str, str]] = {}
    for tool in tools:
        server = str((tool.metadata or {}).get("mcp_server") or "")
        if not server:
            gated.append(tool)
            continue
        if server not in policies:
            policies[server] = mcp_policies(server)
        if policy_of(tool, policies[server]) == READ_ONLY:
            metadata = {**(tool.metadata or {}), "policy": READ_ONLY}
            gated.append(tool.model_copy(update={"metadata": metadata}))
        else:
            gated.append(gated_tool(tool, ledger, agent=agent, scope=scope, step=step))
    return gated


def arguments_text(args: dict) -> str:
    return json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)


def _scope(scope: str | None) -> str:
    if scope:
        return scope
    try:
        return str((get_config().get("configurable") or {}).get("thread_id") or "no-run")
    except RuntimeError:  # called outside a run: still keyed, never asked twice in it
        return "no-run"


def gated_tool(
    tool: BaseTool,
    ledger: Ledger,
    *,
    agent: str,
    scope: str | None = None,
    step: int | None = None,
) -> BaseTool:
    """``tool`` behind the approval gate and the ledger (``gate_tools`` for one tool)."""
    inner = tool.model_copy(update={"handle_tool_error": False})
    server = str((tool.metadata or {}).get("mcp_server") or "")
    where = f" of the MCP server “{server}”" if server else ""

    def key_of(args: dict) -> str:
        return f"tools/{_scope(scope)}/{tool.name}/{key_digest(arguments_text(args))}"

    def ask(args: dict, reason: str) -> HumanDecision:
        request = {
            "kind": "approval",
            "step": step,
            "agent": agent,
            "tool_call": {"server": server, "tool": tool.name, "args": args},
            "query": arguments_text(args),
            "asked_at": time.time(),
            "reason": reason,
        }
        while True:  # an unusable answer: the same question, asked again
            decided = ask_human(request, node=agent)
            if not isinstance(decided, Command):
                return decided
            log.warning("Gated tool %s: %s", tool.name, (decided.update or {}).get("notices"))

    def done_before(found_result: str) -> str:
        return f"{found_result} (already called with these arguments: not repeated)"

    def recorded(args: dict) -> tuple[dict, Effect | None]:
        """The call as the ledger knows it: where an approved edit led, and its entry."""
        found = ledger.entry(key_of(args))
        if found is not None and found.state == EDITED:  # approved as other arguments
            args = json.loads(found.detail)
            found = ledger.entry(key_of(args))
        return args, found

    def approved(args: dict) -> dict | str:
        """The arguments a person approved (perhaps edited), or why nothing is called."""
        decision = ask(
            args,
            f"{agent} is about to call the side-effecting tool “{tool.name}”{where} with the "
            f"arguments {arguments_text(args)}. Approve to call it, edit the arguments (a "
            "JSON object), or reject it.",
        )
        if decision.decision not in ("approve", "edit"):
            return (
                f"Not called: the call to “{tool.name}” with {arguments_text(args)} was "
                f"declined. {decided_by_words(decision.by)}: {decision.decision} "
                f"({decision.reason or 'no reason given'}); nothing was done."
            )
        if decision.decision != "edit" or not decision.query.strip():
            return args
        try:
            edited = json.loads(decision.query)
        except json.JSONDecodeError as exc:
            edited = f"not JSON ({exc.msg})"
        if not isinstance(edited, dict):
            return (
                f"Not called: the edited arguments of “{tool.name}” are unusable "
                f"({edited if isinstance(edited, str) else 'not a JSON object'}); "
                "nothing was done."
            )
        if edited != args:  # a resume that lost the decision finds the call made
            ledger.begin(key_of(args), EDITED, arguments_text(edited))
        return edited

    def call(**args: Any) -> str:
        args, found = recorded(args)
        if found is None or found.state != "sending":
            if found is not None and found.finished:
                return done_before(found.result)
            chosen = approved(args)
            if isinstance(chosen, str):
                return chosen
            args = chosen
            found = ledger.entry(key_of(args))
            if found is not None and found.finished:
                return done_before(found.result)
        if found is not None and found.state == "sending":  # the app died mid-call
            again = ask(
                args,
                f"An earlier call to “{tool.name}”{where} with {arguments_text(args)} was cut "
                "off (the app stopped) before its answer was recorded: whether the tool acted "
                "is unknown. Approve to call it again, or reject it to leave it.",
            )
            if again.decision != "approve":
                return (
                    f"Not called again: the earlier call to “{tool.name}” was cut off and its "
                    f"outcome is unknown ({again.decision} by {again.by}: "
                    f"{again.reason or 'no reason given'})."
                )
        key = key_of(args)
        ledger.begin(key, "sending", f"{tool.name} {arguments_text(args)}")
        try:
            result = inner.invoke(args)
        except ToolException as exc:
            if not getattr(exc, "outcome_unknown", False):
                ledger.forget(key)  # it failed before acting: it may be tried again
            raise ToolException(str(exc)) from None
        text = redact(result if isinstance(result, str) else json.dumps(result, default=str))
        ledger.finish(key, text, "sent")
        return text

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        func=call,
        handle_tool_error=True,
        metadata={**(tool.metadata or {}), "policy": SIDE_EFFECTING, "gated": True},
    )
