"""The user agents' prompts on the Prompts page (issue 30.1): one prompt per agent of the
store's library, ``user_agents/<name>``, versioned like every prompt; its default is the
agent's definition's own prompt. No Streamlit here: names, titles and the preview.

The preview lists the agent's tools as its worker's prompt does, from what is stored (the
built-in tools' descriptions, the Tools page's listing and policies of each MCP server): no
MCP server is started to preview a prompt, so an MCP tool's own description, which only its
server gives, is not in it.
"""

from __future__ import annotations

from graph.agents.user_agent_worker import (
    CHANGING_WORDS,
    NO_TOOLS,
    READ_ONLY_WORDS,
    UNAVAILABLE_WORDS,
    tool_line,
)
from graph.agents.user_agents import (
    BUILTIN_TOOLS,
    UserAgent,
    agent_of_prompt,
    define,
    prompt_name,
    split_ref,
)
from graph.prompts import render
from graph.service.store import Store

NOT_ON_A_STATE = (
    "A user agent's prompt is filled in with the agent's name, description and tools, not "
    "from a run's state: the preview shows it as its worker is sent it."
)
AFTER_IT = (
    "After it: back to the Executor (plan_execute) or the supervisor (supervisor_bus), "
    "which decides what comes next."
)


def is_agent_prompt(name: str) -> bool:
    return agent_of_prompt(name) is not None


def names(store: Store) -> list[str]:
    """The prompts of the library's agents, by name. Their definitions are made the ones
    the prompts' defaults read (``graph.agents.user_agents.define``), so Reset and the
    compared default are each agent's prompt as defined on the Design page."""
    agents = store.user_agents.all()
    define(agents)
    return [prompt_name(agent.name) for agent in agents]


def tool_lines(agent: UserAgent, store: Store) -> str:
    """Its tools as its worker's prompt lists them, from what is stored."""
    lines = []
    listed: dict[str, dict[str, str] | None] = {}
    for ref in agent.tools:
        server, tool = split_ref(ref)
        if server is None:
            lines.append(tool_line(tool, READ_ONLY_WORDS, BUILTIN_TOOLS.get(tool, "")))
            continue
        if server not in listed:
            stored = store.mcp_servers.get(server) is not None
            listed[server] = store.mcp_servers.policies(server) if stored else None
        policies = listed[server]
        if policies is None:
            why = f"The MCP server “{server}” is not connected on this machine: add it on the Tools page."
            lines.append(tool_line(tool, UNAVAILABLE_WORDS, why))
        elif tool not in policies:
            why = (
                f"The MCP server “{server}” has no tool “{tool}” in its listing on the Tools page."
            )
            lines.append(tool_line(tool, UNAVAILABLE_WORDS, why))
        else:
            kind = READ_ONLY_WORDS if policies[tool] == "read_only" else CHANGING_WORDS
            lines.append(tool_line(tool, kind, f"a tool of the MCP server “{server}”."))
    return "\n".join(lines) or NO_TOOLS


def preview(name: str, text: str, store: Store) -> str:
    """Prompt ``name`` filled in as the agent's worker is sent it; PromptError names a bad
    placeholder. An agent no longer in the library is previewed with its name only."""
    named = agent_of_prompt(name) or ""
    agent = store.user_agents.get(named)
    values = {
        "name": named,
        "description": agent.description if agent else "",
        "tools": tool_lines(agent, store) if agent else NO_TOOLS,
    }
    return render(name, text, values)
