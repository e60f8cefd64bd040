"""The sub-agent nodes of plan_execute, one per catalog entry.

Researchers and chart agents are ReAct agents (``langchain.agents.create_agent``): a
mini-graph alternating model calls and tool calls, each with only its own tools.
Each node reads ``agent_query``, runs its agent, keeps what the tools produced
(sources, datasets, the chart) in the state, and routes as the catalog says.

The researchers' agents and tools hold no run data, so each graph builds them once, on
first use (``Deps.built``), instead of at every step. The chart and report agents are
built per step: their tools and prompt carry the run's datasets, chart or ledger key.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphRecursionError
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from graph.agents.user_agents import UserAgent
from graph.kernel.messages import tag_messages
from graph.kernel.user_agent_steps import run_gated_user_agent
from graph.models.replies import reply_text
from graph.plan_execute.deps import Deps
from graph.plan_execute.prompts import agent_prompt, describe_datasets, synthesizer_prompt
from graph.plan_execute.state import State
from graph.tools.charts import describe_chart_tool, make_chart_tool
from graph.tools.database import sql_tool
from graph.tools.knowledge import search_tool
from graph.tools.reports import report_body, save_report_tool
from graph.tools.web import web_search_tool

TOOL_ROUNDS = 6  # model/tool turns a sub-agent may take for one query


def create_agent(model: Any, tools: list, **kwargs: Any) -> CompiledStateGraph:
    """``langchain.agents.create_agent``, imported with a run's first ReAct step: the app's
    first page compiles graphs but builds no sub-agent (issue 33.7)."""
    from langchain.agents import create_agent as create

    return create(model, tools, **kwargs)


def _agent(deps: Deps, agent: str, tools: list, system_prompt: str) -> CompiledStateGraph:
    """A ReAct sub-agent over ``tools``, on the worker model, with no checkpointer of its
    own: each invoke starts from the messages it is given."""
    return create_agent(deps.worker_model, tools, system_prompt=system_prompt, name=agent)


def _react(
    deps: Deps, agent: str, tools: list, system_prompt: str, query: str, config: RunnableConfig
) -> list[BaseMessage]:
    """Build a ReAct sub-agent for this step only (its tools hold run data) and run it."""
    return _run_agent(_agent(deps, agent, tools, system_prompt), agent, query, config)


def _run_agent(
    sub: CompiledStateGraph, agent: str, query: str, config: RunnableConfig
) -> list[BaseMessage]:
    """Run sub-agent ``sub`` on ``query``; its messages, the query first."""
    asked = HumanMessage(content=query, name="agent_query")
    try:
        result = sub.invoke(
            {"messages": [asked]}, {**config, "recursion_limit": 2 * TOOL_ROUNDS + 1}
        )
    except GraphRecursionError:
        return [
            asked,
            AIMessage(
                content=f"No usable results: {agent} did not finish within "
                f"{TOOL_ROUNDS} tool rounds.",
                name=agent,
            ),
        ]
    return result["messages"]


def _final_text(messages: list[BaseMessage]) -> str:
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    text = reply_text(last).strip() if last else ""
    return (
        text.removeprefix("FINAL ANSWER:").strip() or "No usable results: the agent said nothing."
    )


def _artifacts(messages: list[BaseMessage], tool: str) -> list:
    return [
        m.artifact for m in messages if isinstance(m, ToolMessage) and m.name == tool and m.artifact
    ]


def _step(state: State) -> tuple[int, str]:
    return int(state.get("current_step") or 1), state.get("agent_query") or state.get(
        "user_query"
    ) or ""


def _search_tool(deps: Deps) -> BaseTool:
    key = deps.settings.tavily_api_key
    return web_search_tool(key.get_secret_value()) if key else search_tool(deps.knowledge)


def web_researcher_node(state: State, config: RunnableConfig, deps: Deps) -> Command:
    step, query = _step(state)
    tool = deps.built.get("web_researcher/tool", lambda: _search_tool(deps))
    sub = deps.built.get(
        "web_researcher",
        lambda: _agent(
            deps, "web_researcher", [tool], agent_prompt(deps.prompts, "web_researcher")
        ),
    )
    messages = _run_agent(sub, "web_researcher", query, config)
    known = {s["id"] for s in state.get("sources") or []}
    new_sources = []
    for hits in _artifacts(messages, tool.name):
        for source in hits:
            if source["id"] not in known:
                known.add(source["id"])
                new_sources.append({**source, "step": step})
    return Command(
        update={
            "messages": tag_messages(messages, step, "web_researcher"),
            "sources": new_sources,
            "step_results": {str(step): _final_text(messages)},
        },
        goto="executor",
    )


def data_researcher_node(state: State, config: RunnableConfig, deps: Deps) -> Command:
    step, query = _step(state)
    sub = deps.built.get(
        "data_researcher",
        lambda: _agent(
            deps,
            "data_researcher",
            [sql_tool(deps.database, deps.settings.sql_max_rows)],
            agent_prompt(deps.prompts, "data_researcher", schema=deps.database.schema_text()),
        ),
    )
    messages = _run_agent(sub, "data_researcher", query, config)
    count = len(state.get("datasets") or [])
    datasets = [
        {"id": f"sql:{count + i}", "step": step, **a}
        for i, a in enumerate((a for a in _artifacts(messages, "run_sql") if "rows" in a), 1)
    ]
    result = _final_text(messages)
    if datasets and not result.lower().startswith("no usable"):
        result += " " + " ".join(f"[{d['id']}]" for d in datasets)
    return Command(
        update={
            "messages": tag_messages(messages, step, "data_researcher"),
            "datasets": datasets,
            "step_results": {str(step): result},
        },
        goto="executor",
    )


def chart_generator_node(state: State, config: RunnableConfig, deps: Deps) -> Command:
    step, query = _step(state)
    datasets = state.get("datasets") or []
    messages = _react(
        deps,
        "chart_generator",
        [make_chart_tool(datasets)],
        agent_prompt(deps.prompts, "chart_generator", datasets=describe_datasets(datasets)),
        query,
        config,
    )
    specs = _artifacts(messages, "make_chart")
    update = {
        "messages": tag_messages(messages, step, "chart_generator"),
        "step_results": {str(step): _final_text(messages)},
    }
    if specs:
        update["chart_spec"] = specs[-1]
    # Fixed chain: a chart is always followed by its caption, when the summarizer is on.
    goto = "chart_summarizer" if specs and "chart_summarizer" in deps.nodes else "executor"
    return Command(update=update, goto=goto)


def chart_summarizer_node(state: State, config: RunnableConfig, deps: Deps) -> Command:
    step, _ = _step(state)
    messages = _react(
        deps,
        "chart_summarizer",
        [describe_chart_tool(state.get("chart_spec"))],
        agent_prompt(deps.prompts, "chart_summarizer"),
        "Write the caption of the chart that was just made.",
        config,
    )
    caption = _final_text(messages)
    before = (state.get("step_results") or {}).get(str(step), "")
    return Command(
        update={
            "messages": tag_messages(messages, step, "chart_summarizer"),
            "chart_caption": caption,
            "step_results": {str(step): f"{before} Caption: {caption}".strip()},
        },
        goto="executor",
    )


def synthesizer_node(state: State, config: RunnableConfig, deps: Deps) -> Command:
    step, _ = _step(state)
    asked = HumanMessage(content=synthesizer_prompt(state, deps.prompts), name="synthesizer_prompt")
    reply = deps.worker_model.invoke([asked], config)
    answer = reply_text(reply).strip().removeprefix("FINAL ANSWER:").strip()
    cited = [
        {"id": s["id"], "title": s.get("title", ""), "url": s.get("url", "")}
        for s in state.get("sources") or []
        if f"[{s['id']}]" in answer
    ]
    cited += [
        {"id": d["id"], "title": f"SQL: {d['sql']}", "url": ""}
        for d in state.get("datasets") or []
        if f"[{d['id']}]" in answer
    ]
    if not answer:  # never claim an answer was written when there is none
        outcome, why, status = "failed", "The synthesizer returned an empty answer.", "failed"
    else:
        outcome, why, status = "done", "Finished: the synthesizer wrote the final answer.", "done"
    return Command(
        update={
            "messages": tag_messages([asked, reply], step, "synthesizer"),
            "final_answer": answer,
            "citations": cited,
            "step_results": {str(step): answer},
            "step_status": {str(step): status},
            "outcome": outcome,
            "outcome_reason": why,
        },
        goto=END,
    )


def report_writer_node(state: State, config: RunnableConfig, deps: Deps) -> Command:
    step, query = _step(state)
    run_id = (config.get("configurable") or {}).get("thread_id", "run")
    attempt = (state.get("replan_attempts") or {}).get(str(step), 0)
    assert deps.ledger is not None, "the system's graph gives its nodes the side-effect ledger"
    # One key per step execution: a resumed step finds its call done and does not repeat it.
    tool = save_report_tool(
        deps.settings.home / "reports", deps.ledger, f"{run_id}/{step}/{attempt}"
    )
    findings = {k: v for k, v in (state.get("step_results") or {}).items() if int(k) < step}
    messages = _react(
        deps,
        "report_writer",
        [tool],
        agent_prompt(deps.prompts, "report_writer"),
        f"{query}\n\nFindings so far:\n{report_body(findings)}",
        config,
    )
    return Command(
        update={
            "messages": tag_messages(messages, step, "report_writer"),
            "step_results": {str(step): _final_text(messages)},
        },
        goto="executor",
    )


def user_agent_node(state: State, config: RunnableConfig, deps: Deps, agent: UserAgent) -> Command:
    """A user agent's step: its ReAct worker over exactly its tools, back to the executor."""
    step, query = _step(state)
    run_id = (config.get("configurable") or {}).get("thread_id", "run")
    attempt = (state.get("replan_attempts") or {}).get(str(step), 0)
    assert deps.ledger is not None, "the system's graph gives its nodes the side-effect ledger"
    # Side-effecting MCP tools ask a person first, and each call is made once per step
    # execution: a resumed step finds its call made and does not repeat it.
    messages = run_gated_user_agent(
        agent,
        deps.worker_model,
        query,
        config,
        settings=deps.settings,
        ledger=deps.ledger,
        scope=f"{run_id}/{step}/{attempt}",
        step=step,
        knowledge=deps.knowledge,
        database=deps.database,
        prompts=deps.prompts,
    )
    return Command(
        update={
            "messages": tag_messages(messages, step, agent.name),
            "step_results": {str(step): _final_text(messages)},
        },
        goto="executor",
    )


WORKER_NODES = {
    "web_researcher": web_researcher_node,
    "data_researcher": data_researcher_node,
    "chart_generator": chart_generator_node,
    "chart_summarizer": chart_summarizer_node,
    "report_writer": report_writer_node,
    "synthesizer": synthesizer_node,
}
