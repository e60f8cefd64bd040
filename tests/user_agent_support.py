"""A user agent "clock" with mcp-server-time's ``get_current_time`` (over stdio), for the
tests of user agents (issue 30, points 1, 5, 6)."""

from __future__ import annotations

from graph.agents.user_agents import UserAgent, mcp_tool_ref
from graph.kernel.design import Design
from graph.tools.mcp_config import make_config
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
