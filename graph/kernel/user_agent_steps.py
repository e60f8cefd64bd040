"""A user agent's piece of work in any system that takes user agents: exactly its tools
(``graph.agents.user_agent_tools.tools_for``), its side-effecting MCP tools behind the
approval gate (``gate_agent_tools``: a person is asked, each call is made once per
``scope``), and its ReAct worker (``graph.agents.user_agent_worker.run_user_agent``).

It lives in the kernel, not in ``graph.agents``, because the gate does: the agents' layer
sits below the kernel and cannot import it. plan_execute calls it per plan step,
supervisor_bus per bus request.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from graph.agents.user_agent_tools import tools_for
from graph.agents.user_agent_worker import run_user_agent
from graph.agents.user_agents import UserAgent, prompt_name
from graph.kernel.tool_gate import gate_agent_tools
from graph.prompts import PromptSet
from graph.settings import Settings
from graph.tools.database import StockDatabase
from graph.tools.effects import Ledger
from graph.tools.knowledge import KnowledgeBase


def run_gated_user_agent(
    agent: UserAgent,
    model: BaseChatModel,
    query: str,
    config: RunnableConfig,
    *,
    settings: Settings,
    ledger: Ledger,
    scope: str,
    step: int | None,
    knowledge: KnowledgeBase | None = None,
    database: StockDatabase | None = None,
    prompts: PromptSet | None = None,
) -> list[BaseMessage]:
    """``agent``'s messages for ``query``, the query first. ``scope`` keys its gated calls
    in the side-effect ledger: one scope per piece of work (a plan step's execution, a bus
    request), so a resumed one finds its call made and does not make it again; ``step`` is
    shown with the question a person is asked. Its prompt is the run's active version of
    ``user_agents/<name>`` in ``prompts`` when there is one, else its definition's."""
    tools = gate_agent_tools(
        tools_for(agent, settings, knowledge=knowledge, database=database),
        ledger,
        agent=agent.name,
        scope=scope,
        step=step,
    )
    prompt_text = prompts.given(prompt_name(agent.name)) if prompts is not None else None
    return run_user_agent(agent, model, tools, query, config, prompt_text)
