"""The idiomatic LangGraph peer of plan_execute, for ``bench/engine_overhead.py``.

The same plan-execute shape written directly in LangGraph, the way its documentation
shows it: a planner node, an executor node routing with ``Command(goto=...)``, and
sub-agents made once with ``langchain.agents.create_agent`` over Stepwise's own tools
(``graph/tools``), with the same prompt texts (``prompts/plan_execute``, filled with
``str.format``), the same model and a ``SqliteSaver``. No Stepwise engine code runs here:
only the tools, the prompt files and the agent catalog's descriptions are shared, so the
bench compares the engine with what a hand-written graph doing the same work costs.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from pydantic import BaseModel, RootModel

from graph.plan_execute.agents import AGENTS
from graph.tools.database import open_database, sql_tool
from graph.tools.knowledge import default_knowledge_base, search_tool

PROMPTS = Path(__file__).resolve().parent.parent / "prompts" / "plan_execute"
WORKERS = ("web_researcher", "data_researcher")  # the researchers the bench's plans use
PLANNED = (*WORKERS, "synthesizer")


def _text(name: str) -> str:
    return (PROMPTS / f"{name}.txt").read_text(encoding="utf-8")


class PeerStep(BaseModel):
    agent: str
    action: str


class PeerPlan(RootModel[dict[str, PeerStep]]):
    pass


class PeerDecision(BaseModel):
    replan: bool
    goto: str
    reason: str = ""
    query: str = ""


class PeerState(MessagesState):
    user_query: str
    plan: dict
    current_step: int
    agent_query: str
    step_results: dict
    final_answer: str


def peer_checkpointer(path: Path) -> SqliteSaver:
    """A plain ``SqliteSaver`` on its own file, in WAL mode with ``synchronous=NORMAL``
    like Stepwise's (SQLite's default FULL syncs the disk at every commit: the bench would
    time the disk). ``bench/fairness.py`` reads both back and the bench checks them."""
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return SqliteSaver(conn)


def peer_graph(model: BaseChatModel, checkpointer):
    """planner -> executor -> (researcher -> executor)* -> synthesizer -> END."""
    kb, db = default_knowledge_base(), open_database()
    team = _text("agent_system")
    agents = {
        "web_researcher": create_agent(
            model,
            [search_tool(kb)],
            system_prompt=team.format(role=_text("web_researcher")),
            name="web_researcher",
        ),
        "data_researcher": create_agent(
            model,
            [sql_tool(db, 200)],
            system_prompt=team.format(
                role=_text("data_researcher").format(schema=db.schema_text())
            ),
            name="data_researcher",
        ),
    }
    agent_list = "\n".join(f"- {n}: {AGENTS[n].description}" for n in PLANNED)
    guidelines = "\n".join(f"- {n}: limits: {AGENTS[n].limits}" for n in PLANNED)
    planner_text, fresh_text = _text("planner"), _text("planner_fresh")
    executor_text, synth_text = _text("executor"), _text("synthesizer")

    def planner(state: PeerState) -> Command:
        prompt = planner_text.format(
            agent_list=agent_list,
            agent_guidelines=guidelines,
            agent_names=", ".join(PLANNED),
            plan_example="{}",
            replan_section=fresh_text.format(user_query=state["user_query"]),
            user_query=state["user_query"],
        )
        reply = model.invoke([HumanMessage(prompt)])
        plan = {
            k: v.model_dump() for k, v in PeerPlan.model_validate_json(reply.content).root.items()
        }
        return Command(
            update={"plan": plan, "current_step": 1, "messages": [reply]}, goto="executor"
        )

    def executor(state: PeerState) -> Command:
        plan, step = state["plan"], state["current_step"]
        block, nxt = plan[str(step)], plan.get(str(step + 1))
        prompt = executor_text.format(
            agents=", ".join((*PLANNED, "planner")),
            agent_guidelines=guidelines,
            max_replans=3,
            attempts=0,
            plan_agent=block["agent"],
            next_agent=nxt["agent"] if nxt else "end",
            user_query=state["user_query"],
            current_step=step,
            plan_step=json.dumps(block),
            plan_json=json.dumps(plan),
            step_result=state["step_results"].get(str(step), "(not run yet)"),
            replan_flag=False,
            messages_tail="\n".join(
                f"  [{m.type}] {m.content[:300]}" for m in state["messages"][-4:]
            ),
            goto_names=", ".join((*PLANNED, "planner", "end")),
            decision_example="{}",
        )
        reply = model.invoke([HumanMessage(prompt)])
        decision = PeerDecision.model_validate_json(reply.content)
        if decision.goto == "end" or decision.goto not in PLANNED:
            return Command(update={"messages": [reply]}, goto=END)
        if str(step) in state["step_results"]:  # the step is done: on to the next one
            step += 1
        return Command(
            update={"messages": [reply], "current_step": step, "agent_query": decision.query},
            goto=decision.goto,
        )

    def worker(name: str):
        def run(state: PeerState) -> Command:
            result = agents[name].invoke({"messages": [HumanMessage(state["agent_query"])]})
            text = result["messages"][-1].content.removeprefix("FINAL ANSWER:").strip()
            results = {**state["step_results"], str(state["current_step"]): text}
            return Command(
                update={"messages": result["messages"], "step_results": results}, goto="executor"
            )

        return run

    def synthesizer(state: PeerState) -> Command:
        findings = "\n".join(
            f"- Step {k} ({state['plan'][k]['agent']}): {v}"
            for k, v in sorted(state["step_results"].items(), key=lambda kv: int(kv[0]))
        )
        prompt = synth_text.format(
            user_query=state["user_query"], findings=findings, sources="", chart_caption="none"
        )
        reply: AIMessage = model.invoke([HumanMessage(prompt)])
        answer = reply.content.removeprefix("FINAL ANSWER:").strip()
        results = {**state["step_results"], str(state["current_step"]): answer}
        return Command(
            update={"messages": [reply], "final_answer": answer, "step_results": results},
            goto=END,
        )

    builder = StateGraph(PeerState)
    builder.add_node("planner", planner, destinations=("executor",))
    builder.add_node("executor", executor, destinations=(*PLANNED, END))
    for name in WORKERS:
        builder.add_node(name, worker(name), destinations=("executor",))
    builder.add_node("synthesizer", synthesizer, destinations=(END,))
    builder.add_edge(START, "planner")
    return builder.compile(checkpointer=checkpointer)


def peer_input(question: str) -> dict:
    return {
        "messages": [HumanMessage(question)],
        "user_query": question,
        "step_results": {},
        "current_step": 0,
    }
