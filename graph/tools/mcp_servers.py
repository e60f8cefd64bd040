"""MCP tool servers' tools, loaded with ``langchain-mcp-adapters``: list them (description,
input schema, annotations, default policy), call one with JSON arguments, or hand them to an
agent (``agent_tools``: a failed call answers the agent with its sentence).

Each listing or call opens one session to the server (a stdio server is started for it and
stopped after) under one total deadline, so a slow server is cut, not waited for. Every
failure becomes ``McpServerError`` with one sentence naming the server and what went wrong
(down, command not found, too slow, an error the tool returned, arguments that are not a
JSON object); the traceback goes to the log, never to a page or a run.

A tool's default policy comes from its annotations: ``read_only`` when the server says
``readOnlyHint`` (and not ``destructiveHint``), else ``side_effecting``, including when the
server says nothing, because a tool that writes and says nothing must still ask.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from graph.errors import StepwiseError
from graph.redaction import redact, shown_text
from graph.tools.mcp_config import McpConfigError, McpServerConfig, OffHostRequest, connection

if TYPE_CHECKING:  # the MCP client loads with a server's first listing or call (issue 33.7)
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from mcp import ClientSession

log = logging.getLogger(__name__)

DEADLINE_S = 20.0  # a whole listing or call, a stdio server's start included
Policy = Literal["read_only", "side_effecting"]
READ_ONLY: Policy = "read_only"
SIDE_EFFECTING: Policy = "side_effecting"
_CLEANUP_S = 10.0  # after the deadline, for the session to close (a stdio server to stop)


class McpServerError(StepwiseError, RuntimeError):
    """A listing or a call that failed; the message is one sentence for a person.
    ``outcome_unknown``: the call went out and was cut before its answer (the deadline), so
    whether the tool acted is unknown."""

    def __init__(self, message: str, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.outcome_unknown = outcome_unknown


class McpToolFailed(StepwiseError, ToolException):
    """An agent's MCP tool call that failed, in its sentence (``McpServerError``'s)."""

    def __init__(self, message: str, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.outcome_unknown = outcome_unknown


@dataclass(frozen=True)
class McpToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)

    @property
    def policy(self) -> Policy:
        return default_policy(self.annotations)


def default_policy(annotations: dict[str, Any] | None) -> Policy:
    """``read_only`` only when the server says so (``readOnlyHint``) and does not also
    say the tool is destructive; anything else may have side effects."""
    annotations = annotations or {}
    if annotations.get("readOnlyHint") is True and annotations.get("destructiveHint") is not True:
        return READ_ONLY
    return SIDE_EFFECTING


def list_tools(config: McpServerConfig, deadline_s: float = DEADLINE_S) -> list[McpToolInfo]:
    """The server's tools, as it lists them."""
    return _run(config, _listed(config, deadline_s), deadline_s)


def call_tool(
    config: McpServerConfig, tool: str, arguments: str | dict, deadline_s: float = DEADLINE_S
) -> str:
    """Call ``tool`` with ``arguments`` (a JSON object, as text or parsed); its result as
    text, with every remembered secret taken out."""
    args = parse_arguments(arguments)
    # a tool may echo what it was given (a token in its environment): never kept or shown
    return redact(_run(config, _called(config, tool, args, deadline_s), deadline_s, tool))


def agent_tools(config: McpServerConfig, deadline_s: float = DEADLINE_S) -> list[BaseTool]:
    """The server's tools as LangChain tools an agent can bind (their metadata carries the
    server and the default policy). Each call opens its own session under the deadline; a
    failed call answers the agent with its sentence (a tool error) and fails nothing else."""
    return [_agent_tool(config, info, deadline_s) for info in list_tools(config, deadline_s)]


def _agent_tool(config: McpServerConfig, info: McpToolInfo, deadline_s: float) -> BaseTool:
    def call(**arguments: Any) -> str:
        try:
            return call_tool(config, info.name, arguments, deadline_s)
        except McpServerError as exc:
            raise McpToolFailed(str(exc), exc.outcome_unknown) from None

    return StructuredTool(
        name=info.name,
        description=info.description,
        args_schema=info.input_schema,
        func=call,
        handle_tool_error=True,
        metadata={"mcp_server": config.name, "policy": info.policy, **info.annotations},
    )


def parse_arguments(arguments: str | dict) -> dict:
    """The arguments of a call as a dict; ``McpServerError`` says why text is not one."""
    if isinstance(arguments, dict):
        return arguments
    text = (arguments or "").strip() or "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpServerError(
            f"The arguments are not valid JSON: {exc.msg} at line {exc.lineno}, column "
            f'{exc.colno}; write an object such as {{"timezone": "Europe/Rome"}}.'
        ) from None
    if not isinstance(value, dict):
        raise McpServerError(
            f"The arguments must be a JSON object (names to values), not {type(value).__name__}"
            '; write an object such as {"timezone": "Europe/Rome"}.'
        )
    return value


# ------------------------------------------------------------------ one session, in time


async def _tools(config: McpServerConfig, session: ClientSession) -> list[BaseTool]:
    from langchain_mcp_adapters.tools import load_mcp_tools

    return await load_mcp_tools(session, server_name=config.name, handle_tool_errors=False)


async def _listed(config: McpServerConfig, deadline_s: float) -> list[McpToolInfo]:
    client = _client(config, deadline_s)
    async with client.session(config.name) as session:
        tools = await _tools(config, session)
    return [_info(t) for t in tools]


async def _called(config: McpServerConfig, tool: str, args: dict, deadline_s: float) -> str:
    client = _client(config, deadline_s)
    async with client.session(config.name) as session:
        tools = {t.name: t for t in await _tools(config, session)}
        if tool not in tools:
            known = ", ".join(sorted(tools)) or "none"
            raise McpServerError(
                f"The MCP server “{config.name}” has no tool “{tool}” (its tools: {known})."
            )
        result = await tools[tool].ainvoke(args)
    return result_text(result)


def _client(config: McpServerConfig, deadline_s: float) -> MultiServerMCPClient:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    return MultiServerMCPClient(
        {config.name: connection(config, deadline_s)},  # type: ignore[dict-item]
        handle_tool_errors=False,
    )


def _info(tool: BaseTool) -> McpToolInfo:
    schema = tool.args_schema if isinstance(tool.args_schema, dict) else {}
    metadata = tool.metadata or {}
    hints = {k: v for k, v in metadata.items() if k != "_meta" and v is not None}
    return McpToolInfo(
        name=tool.name, description=tool.description or "", input_schema=schema, annotations=hints
    )


def result_text(result: Any) -> str:
    """A tool's result (text or LangChain content blocks) as text."""
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        parts = []
        for block in result:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, str):
                parts.append(block)
            else:
                parts.append(json.dumps(block, default=str))
        return "\n".join(parts)
    return json.dumps(result, default=str)


def _run(
    config: McpServerConfig, coro: Coroutine[Any, Any, Any], deadline_s: float, tool: str = ""
) -> Any:
    """Run ``coro`` on an event loop of its own thread (the caller may be inside a loop,
    a Streamlit script or a LangGraph node), cut at ``deadline_s``; each failure in one
    sentence."""
    done: Future = Future()

    async def bounded() -> Any:
        return await asyncio.wait_for(coro, deadline_s)

    def work() -> None:
        try:
            done.set_result(asyncio.run(bounded()))
        except BaseException as exc:  # handed to the caller's thread, translated there
            done.set_exception(exc)

    threading.Thread(target=work, name=f"mcp-{config.name}", daemon=True).start()
    try:
        return done.result(timeout=deadline_s + _CLEANUP_S)
    except McpServerError:
        raise
    except BaseException as exc:
        sentence = explain(config, exc, deadline_s, tool)
        log.warning("MCP server %s: %s", config.name, sentence, exc_info=exc)
        cut = bool(tool) and any(isinstance(leaf, TimeoutError) for leaf in _leaves(exc))
        raise McpServerError(sentence, outcome_unknown=cut) from None


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def explain(config: McpServerConfig, exc: BaseException, deadline_s: float, tool: str = "") -> str:
    """What went wrong, in one sentence that names the server (and the tool)."""
    import anyio  # the MCP client's streams (loaded with it, as McpError is)
    from mcp.shared.exceptions import McpError  # loaded by the session that failed

    # what writing to a stdio server that already ended raises
    stream_gone = (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError)

    who = f"The MCP server “{config.name}”"
    what = f"the call to the tool “{tool}”" if tool else "the listing of its tools"
    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, (McpServerError, OffHostRequest, McpConfigError)):
            return str(leaf)
    for leaf in leaves:
        if isinstance(leaf, TimeoutError):
            return (
                f"{who} did not answer within {deadline_s:g} s, so {what} was stopped; "
                "it may be slow or stuck."
            )
        if isinstance(leaf, FileNotFoundError) and config.transport == "stdio":
            return f"{who} could not start: the command “{config.command}” was not found on this machine."
        if isinstance(leaf, PermissionError) and config.transport == "stdio":
            return f"{who} could not start: the command “{config.command}” may not be run (permission denied)."
        if isinstance(leaf, httpx.ConnectError):
            return f"{who} is down: nothing answers at {config.url} ({shown_text(leaf, 120)})."
        if isinstance(leaf, httpx.HTTPStatusError) and leaf.response.is_redirect:
            target = httpx.URL(leaf.response.headers.get("location", "")).host or "elsewhere"
            return (
                f"Refused: the MCP server at {config.url} redirected to {target}, off its "
                "host; only the server's own host is called."
            )
        if isinstance(leaf, httpx.HTTPStatusError):
            return (
                f"{who} answered HTTP {leaf.response.status_code} at {config.url}; is this the "
                "MCP endpoint (often ending in /mcp)?"
            )
        if isinstance(leaf, ToolException):
            return f"The tool “{tool}” of the MCP server “{config.name}” returned an error: {shown_text(leaf, 300)}"
        # A program that ends at once: the session reads "connection closed", or, when it
        # ended before the client's first message was written, the write finds the pipe
        # broken (anyio's BrokenResourceError; seen on a loaded machine).
        gone = isinstance(leaf, McpError) and "closed" in str(leaf).lower()
        if config.transport == "stdio" and (gone or isinstance(leaf, stream_gone)):
            return (
                f"{who} stopped before answering: the command “{config.command}” ran but "
                "did not speak MCP over stdio (check its arguments)."
            )
        if isinstance(leaf, McpError):
            return f"{who} refused: {shown_text(leaf, 300)}"
        if isinstance(leaf, httpx.HTTPError):
            return f"{who} could not be reached at {config.url}: {shown_text(leaf, 200)}."
    first = leaves[0]
    return f"{who} failed: {type(first).__name__}: {shown_text(first, 300) or 'no message'}."
