"""A user agent's tools, assembled in one place (``tools_for``): the built-in ones it
picked and the tools of connected MCP servers it picked, nothing else.

Every tool a user agent can call comes out of ``tools_for``; the system that runs the agent
then puts its MCP tools behind the approval gate (``graph.kernel.tool_gate.gate_agent_tools``,
issue 30.3) with each server's policies (``mcp_policies``: the Tools page's choices). A tool
is read-only when its policy says so (``is_read_only``), and the offline scripted model
calls only such a tool.

MCP servers and their policies are looked up by name in the source the service layer
registers (``use_mcp_servers``: the store's Tools page servers); the engine never reads the
store.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from graph.agents.user_agents import UserAgent, split_ref
from graph.settings import Settings
from graph.tools.database import StockDatabase, open_database, sql_tool
from graph.tools.knowledge import KnowledgeBase, default_knowledge_base, search_tool
from graph.tools.mcp_config import McpServerConfig
from graph.tools.mcp_servers import READ_ONLY, McpServerError, agent_tools

log = logging.getLogger(__name__)

UNAVAILABLE = "Unavailable: "


class ServerSource(Protocol):
    """Where MCP servers are found by name (the store's ``mcp_servers`` repository)."""

    def get(self, name: str) -> McpServerConfig | None: ...

    def policies(self, server: str) -> dict[str, str]: ...


_SOURCE: dict[str, ServerSource] = {}
_LOCK = threading.Lock()


def use_mcp_servers(source: ServerSource | None) -> None:
    """Where ``tools_for`` finds an MCP server by name (the run service registers its
    store's); None: no server is connected."""
    with _LOCK:
        if source is None:
            _SOURCE.pop("servers", None)
        else:
            _SOURCE["servers"] = source


def _source() -> ServerSource | None:
    with _LOCK:
        return _SOURCE.get("servers")


def _server(name: str) -> McpServerConfig | None:
    source = _source()
    return source.get(name) if source is not None else None


def mcp_policies(server: str) -> dict[str, str]:
    """Each recorded tool of ``server`` and its policy (a person's choice on the Tools page,
    else the default from its annotations); {} when no server source is registered."""
    source = _source()
    return source.policies(server) if source is not None else {}


def is_read_only(tool: BaseTool) -> bool:
    return (tool.metadata or {}).get("policy") == READ_ONLY


def tools_for(
    agent: UserAgent,
    settings: Settings,
    *,
    knowledge: KnowledgeBase | None = None,
    database: StockDatabase | None = None,
) -> list[BaseTool]:
    """Exactly the tools ``agent`` picked, in its order. A tool of a server that is not
    connected, or that cannot be listed now, is still given to the agent: calling it answers
    with the sentence that says why, and fails nothing else."""
    found: list[BaseTool] = []
    listed: dict[str, list[BaseTool] | str] = {}
    for ref in agent.tools:
        server, name = split_ref(ref)
        if server is None:
            found.append(_builtin(name, settings, knowledge, database))
            continue
        if server not in listed:
            listed[server] = _server_tools(server)
        tools = listed[server]
        if isinstance(tools, str):
            found.append(_unavailable(name, tools))
            continue
        match = next((t for t in tools if t.name == name), None)
        found.append(
            match
            if match is not None
            else _unavailable(name, f"The MCP server “{server}” no longer has a tool “{name}”.")
        )
    return found


def _builtin(
    name: str,
    settings: Settings,
    knowledge: KnowledgeBase | None,
    database: StockDatabase | None,
) -> BaseTool:
    if name == "search_knowledge_base":
        tool = search_tool(knowledge or default_knowledge_base())
    else:
        tool = sql_tool(database or open_database(), settings.sql_max_rows)
    tool.metadata = {**(tool.metadata or {}), "policy": READ_ONLY}
    return tool


def _server_tools(server: str) -> list[BaseTool] | str:
    config = _server(server)
    if config is None:
        return (
            f"The MCP server “{server}” is not connected on this machine: add it on the Tools page."
        )
    try:
        return agent_tools(config)
    except McpServerError as exc:
        log.warning("user agent tools of %s: %s", server, exc)
        return str(exc)


def _unavailable(name: str, sentence: str) -> BaseTool:
    def call(**_: Any) -> str:
        raise ToolException(sentence)

    return StructuredTool(
        name=name,
        description=UNAVAILABLE + sentence,
        args_schema={"type": "object", "properties": {}},
        func=call,
        handle_tool_error=True,
        metadata={"policy": "unavailable"},
    )
