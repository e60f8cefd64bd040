"""A user agent "clock" with mcp-server-time's ``get_current_time`` (over stdio), and a
worker model that proposes a side-effecting tool call, for the tests of user agents
(issue 30, points 1, 3, 5, 6)."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.sqlite import SqliteSaver

from graph.agents.user_agent_tools import use_mcp_servers
from graph.agents.user_agents import UserAgent, mcp_tool_ref
from graph.kernel.design import Design
from graph.tools.mcp_config import make_config
from graph.tools.mcp_servers import list_tools
from tests.mcp_support import TIME_COMMAND

CLOCK_QUESTION = "What is the current time in Europe/Rome?"


def time_server():
    command, args = TIME_COMMAND
    return make_config("time", "stdio", command=command, args=args)


def clock() -> UserAgent:
    return UserAgent(
        name="clock",
        description="Tells the current time in a timezone.",
        tools=(mcp_tool_ref("time", "get_current_time"),),
    )


def clock_design() -> Design:
    return Design(
        system="plan_execute",
        user_agents=[clock()],
        enabled_agents=["web_researcher", "clock", "synthesizer"],
    )


def notary() -> UserAgent:
    """A user agent with the counting MCP server's side-effecting ``send_note`` (the server
    stored as "notes", tests/mcp_support.py)."""
    return UserAgent(
        name="notary",
        description="Sends a note by e-mail to a person.",
        tools=(mcp_tool_ref("notes", "send_note"),),
    )


NOTE = {"to": "ada@example.org", "body": "the minutes"}
QUESTION = "Send a note by e-mail to Ada with the minutes."


class NoteSender(BaseChatModel):
    """As the user agent (its query is named ``agent_query``): proposes ``send_note`` once,
    then answers with what the tool said. As the synthesizer: a plain answer."""

    @property
    def _llm_type(self) -> str:
        return "note-sending-test-model"

    def bind_tools(self, tools, **kwargs):  # type: ignore[override]
        return self.bind()  # a binding, as BaseChatModel's own (the app caps it)

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kw):
        said = [m for m in messages if isinstance(m, ToolMessage)]
        as_agent = any(m.name == "agent_query" for m in messages)
        reply = (
            AIMessage(content="The note was sent to Ada.")
            if not as_agent
            else AIMessage(content=f"The tool said: {said[-1].content}")
            if said
            else AIMessage(
                content="", tool_calls=[{"name": "send_note", "args": NOTE, "id": "call-1"}]
            )
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])


@contextmanager
def notary_graph(
    system, store, settings, server_url: str, checkpoints: Path, enabled: list[str]
) -> Iterator[tuple]:
    """``system``'s graph with the notary (its tool from the counting MCP server at
    ``server_url``, listed and stored as the Tools page does), on real SQLite checkpoints
    at ``checkpoints``, its worker model ``NoteSender``; and the design. The MCP servers
    are forgotten again after."""
    config = make_config("notes", "streamable_http", url=server_url)
    store.mcp_servers.add(config)
    store.mcp_servers.remember_tools("notes", list_tools(config))
    use_mcp_servers(store.mcp_servers)
    design = Design(system=system.name, user_agents=[notary()], enabled_agents=enabled)
    connection = sqlite3.connect(checkpoints, check_same_thread=False)
    try:
        graph = system.build_graph(
            design,
            settings=settings,
            checkpointer=SqliteSaver(connection),
            worker_model=NoteSender(),
        )
        yield graph, design
    finally:
        use_mcp_servers(None)
        connection.close()
