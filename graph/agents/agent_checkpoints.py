"""Reading what a ReAct agent a node invokes saved inside a run.

In Stepwise a graph a node only invokes (no subgraph node) is a ReAct agent
(``create_agent``): plan_execute's sub-agents (the researchers, the chart and report
agents) and every system's user agents. Its checkpoints are saved under the node's
namespace (``web_researcher:<task id>``), but LangGraph cannot find that graph from the
top graph and reads such a namespace with the top graph's own channels: every checkpoint
looked like "its input" with the plan's fields and nothing to run next. They are read
with this graph instead: one of the same shape (the nodes ``model`` and ``tools``, the
agent's channels), on the offline scripted model with one tool. Reading a checkpoint
needs only the shape; this graph is never run.
"""

from __future__ import annotations

from functools import lru_cache

from langchain_core.tools import tool
from langgraph.graph.state import CompiledStateGraph

from graph.models.scripted import ScriptedChatModel


@tool
def never_called(query: str) -> str:
    """Stands for a sub-agent's tools in a graph that only reads its checkpoints."""
    raise RuntimeError("agent_checkpoints' reader graph is never run")


@lru_cache(maxsize=1)
def sub_agent_reader() -> CompiledStateGraph:
    """A ReAct graph shaped like every agent a node invokes, to read their checkpoints."""
    from langchain.agents import create_agent  # when a run's inside is read, not at start

    return create_agent(ScriptedChatModel(), [never_called], name="sub_agent")
