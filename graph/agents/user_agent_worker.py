"""A user agent at work: a ReAct agent (``langchain.agents.create_agent``) over exactly the
tools ``tools_for`` gives it, prompted with its own prompt, for one query. The systems that
take user agents call ``run_user_agent`` from their worker node.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphRecursionError

from graph.agents.user_agent_tools import UNAVAILABLE, is_read_only
from graph.agents.user_agents import UserAgent, prompt_problem

TOOL_ROUNDS = 6


READ_ONLY_WORDS, CHANGING_WORDS, UNAVAILABLE_WORDS = (
    "read-only",
    "may change something",
    "unavailable",
)
NO_TOOLS = "- (no tools)"


def tool_line(name: str, kind: str, description: str) -> str:
    """One tool as its prompt lists it (``kind``: one of the words above)."""
    return f"- {name} ({kind}): {description}"


def tool_lines(tools: list[BaseTool]) -> str:
    """The tools as its prompt lists them, each saying whether it is read-only."""
    lines = []
    for tool in tools:
        kind = READ_ONLY_WORDS if is_read_only(tool) else CHANGING_WORDS
        description = (tool.description or "").strip()
        if description.startswith(UNAVAILABLE):
            kind, description = UNAVAILABLE_WORDS, description.removeprefix(UNAVAILABLE)
        lines.append(tool_line(tool.name, kind, description))
    return "\n".join(lines) or NO_TOOLS


def system_prompt(agent: UserAgent, tools: list[BaseTool], text: str | None = None) -> str:
    """Its prompt filled in; ``text`` overrides the definition's (a design's prompt)."""
    template = text if text is not None else agent.prompt
    if problem := prompt_problem(template):
        raise ValueError(f"{agent.name}: {problem}")
    values = {"name": agent.name, "description": agent.description, "tools": tool_lines(tools)}
    used = PromptTemplate.from_template(template).input_variables
    return PromptTemplate.from_template(template).format(**{k: values[k] for k in used})


def run_user_agent(
    agent: UserAgent,
    model: BaseChatModel,
    tools: list[BaseTool],
    query: str,
    config: RunnableConfig,
    prompt_text: str | None = None,
) -> list[BaseMessage]:
    """Its messages for ``query``, the query first."""
    from langchain.agents import create_agent  # with a run's first step, not every page's

    sub = create_agent(
        model, tools, system_prompt=system_prompt(agent, tools, prompt_text), name=agent.name
    )
    asked = HumanMessage(content=query, name="agent_query")
    try:
        result = sub.invoke(
            {"messages": [asked]}, {**config, "recursion_limit": 2 * TOOL_ROUNDS + 1}
        )
    except GraphRecursionError:
        return [
            asked,
            AIMessage(
                content=f"No usable results: {agent.name} did not finish within "
                f"{TOOL_ROUNDS} tool rounds.",
                name=agent.name,
            ),
        ]
    return result["messages"]
