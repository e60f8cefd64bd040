"""A test system whose one agent is a ReAct worker (``langchain.agents.create_agent``) over
an MCP server's tools put behind the approval gate (``graph.kernel.tool_gate``): what a
user agent will be, hosted by the real run service, so the Approvals inbox, decisions,
timeouts, experiments, kill and resume all meet the gate as in the app.

The question is the tool call its model proposes, as JSON: ``{"tool": ..., "args": ...}``;
the model (``ToolCallingModel``) proposes it once, then answers with the tool's result.
The server is the one stored as ``GATE_SERVER`` in the run's store; its tools' policies are
those the store keeps (the Tools page's), else their defaults from their annotations.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Optional

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, MessagesState

from graph.kernel.conversation import ConversationState, first_turn
from graph.kernel.design import Design
from graph.kernel.ledger import side_effect_ledger
from graph.kernel.system import AgentSpec, System
from graph.kernel.system_parts import Prompts, Shape
from graph.kernel.tool_gate import gate_tools
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.settings import get_settings
from graph.tools.mcp_servers import agent_tools

GATE_SERVER = "notes"
AGENT = "clerk"


class ToolCallingModel(BaseChatModel):
    """Proposes the question's tool call once, then answers with what the tool said."""

    @property
    def _llm_type(self) -> str:
        return "tool-calling-test-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kw):
        answered = [m for m in messages if isinstance(m, ToolMessage)]
        if answered:
            reply = AIMessage(content=f"FINAL ANSWER: {answered[-1].content}")
        else:
            asked = next(m for m in messages if isinstance(m, HumanMessage))
            call = json.loads(str(asked.content))
            reply = AIMessage(
                content="",
                tool_calls=[{"name": call["tool"], "args": call["args"], "id": "call-1"}],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


class GateState(MessagesState, ConversationState):
    question: str
    session_id: str
    rows: list[dict]
    final_answer: Optional[str]
    outcome: Optional[str]
    outcome_reason: Optional[str]


class GateSystem(System):
    name = "gate_test"
    title = "Gated MCP tools (a test system)"
    agents = {AGENT: AgentSpec(AGENT, "Calls the MCP server's tools.", side_effects=True)}
    shape = Shape(AGENT)
    prompts = Prompts("gate_test", nodes=frozenset())

    def build_graph(
        self,
        design: Design | None = None,
        *,
        settings=None,
        checkpointer=None,
        planner_model=None,
        worker_model=None,
    ):
        from graph.service.store import Store

        design = design or Design(system=self.name)
        settings = settings or get_settings()
        store = Store.open(settings)
        ledger = side_effect_ledger(settings)
        model = ToolCallingModel()

        def clerk(state: dict, config) -> dict:
            server = store.mcp_servers.get(GATE_SERVER)
            assert server is not None, "the test stores the MCP server first"
            tools = gate_tools(
                agent_tools(server),
                ledger,
                agent=AGENT,
                policies=store.mcp_servers.policies(GATE_SERVER),
                scope=f"{state['session_id']}/1",
                step=1,
            )
            agent = create_agent(model, tools, name=AGENT)
            result = agent.invoke({"messages": [HumanMessage(content=state["question"])]}, config)
            answer = str(result["messages"][-1].content).removeprefix("FINAL ANSWER:").strip()
            return {
                "final_answer": answer,
                "outcome": "done",
                "outcome_reason": "Finished: the clerk answered.",
                "rows": [{"step": 1, "agent": AGENT, "status": "done", "text": answer}],
            }

        builder = SystemGraph(GateState)
        builder.add_node(AGENT, clerk)
        builder.add_edge(AGENT, END)
        return compile_graph(
            builder,
            design,
            system=self,
            checkpointer=checkpointer,
            model=planner_model,
            settings=settings,
        )

    def initial_state(self, question: str, design: Design) -> dict:
        return {
            "messages": [HumanMessage(content=question, name="user")],
            "question": question,
            "session_id": uuid.uuid4().hex,
            "rows": [],
            **first_turn(question, design, self.shape.entry),
        }

    def new_turn(self, state: dict, text: str, design: Design) -> dict:
        return {"question": text, "rows": [], "final_answer": None, "outcome": None}

    def snapshot(self, state: dict) -> dict:
        return {
            "system": self.name,
            "rows": list(state.get("rows") or []),
            "final_answer": state.get("final_answer"),
            "outcome": state.get("outcome"),
            "outcome_reason": state.get("outcome_reason"),
        }


SYSTEM = GateSystem()


def question(tool: str, **args: Any) -> str:
    return json.dumps({"tool": tool, "args": args})
