"""relay: a drafter asks the worker model for a first answer, a checker signs it off.

Two agents in a line, no routing: the least a system needs to be hosted (a graph, its
state, a snapshot with rows; its view, ``tests/fourth/view.py``, adds a panel for the
Run page)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import ModuleType
from typing import ClassVar, Optional

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, MessagesState

from graph.kernel.conversation import ConversationState, first_turn
from graph.kernel.design import Design
from graph.kernel.messages import tag_messages
from graph.kernel.system import AgentSpec, System
from graph.kernel.system_parts import Forks, Prompts, Shape
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.models.chat import make_chat_model
from graph.settings import get_settings
from tests.fourth import offline_rules
from tests.fourth.offline_rules import draft_request
from tests.fourth.settings_model import RelaySettings


class RelayState(MessagesState, ConversationState):
    question: str
    draft: Optional[str]
    rows: list[dict]
    final_answer: Optional[str]
    outcome: Optional[str]
    outcome_reason: Optional[str]


@dataclass
class Row:
    step: int
    agent: str
    status: str
    text: str

    def as_dict(self) -> dict:
        return asdict(self)


class Relay(System):
    name = "relay"
    title = "Relay (a test system)"
    agents = {
        "drafter": AgentSpec("drafter", "Asks the worker model for a first answer."),
        "checker": AgentSpec("checker", "Reads the draft and signs it off."),
    }
    offline_rules: ClassVar[ModuleType] = offline_rules
    settings_model = RelaySettings
    shape = Shape("drafter")
    forks = Forks(timeline_fields=("draft", "rows"), fork_fields=("draft",))
    prompts = Prompts("relay", nodes=frozenset({"drafter", "checker"}))

    def build_graph(
        self,
        design: Design | None = None,
        *,
        settings=None,
        checkpointer=None,
        planner_model=None,
        worker_model=None,
    ):
        design = design or Design(system=self.name)
        settings = settings or get_settings()
        model = worker_model or make_chat_model("worker", settings)
        enabled = set(design.enabled_agents)
        sign_off = design.settings_of(RelaySettings).sign_off

        def drafter(state: dict) -> dict:
            reply = model.invoke([HumanMessage(content=draft_request(state["question"]))])
            draft = reply.content if isinstance(reply.content, str) else str(reply.content)
            return {
                "draft": draft,
                "messages": tag_messages([reply], 1, "drafter"),
                "rows": [{"step": 1, "agent": "drafter", "status": "done", "text": draft}],
            }

        def checker(state: dict) -> dict:
            signed = f"{sign_off}: {state.get('draft') or '(no draft)'}"
            rows = [
                *(state.get("rows") or []),
                {"step": 2, "agent": "checker", "status": "done", "text": "signed off"},
            ]
            return {
                "final_answer": signed,
                "outcome": "done",
                "rows": rows,
                "outcome_reason": "Finished: the checker signed the draft off.",
                "messages": tag_messages([AIMessage(content=signed)], 2, "checker"),
            }

        builder = SystemGraph(RelayState)
        builder.add_node("drafter", drafter)
        last = "drafter"
        if "checker" in enabled:
            builder.add_node("checker", checker)
            builder.add_edge("drafter", "checker")
            last = "checker"
        else:
            builder.add_node(
                "close",
                lambda state: {
                    "final_answer": state.get("draft"),
                    "outcome": "done",
                    "outcome_reason": "Finished: nobody checked the draft.",
                },
            )
            builder.add_edge("drafter", "close")
            last = "close"
        builder.add_edge(last, END)
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
            "rows": [],
            **first_turn(question, design, self.shape.entry),
        }

    def new_turn(self, state: dict, text: str, design: Design) -> dict:
        return {
            "question": text,
            "draft": None,
            "rows": [],
            "final_answer": None,
            "outcome": None,
            "outcome_reason": None,
        }

    def step_rows(self, state: dict) -> list[Row]:
        return [Row(**r) for r in state.get("rows") or []]

    def snapshot(self, state: dict) -> dict:
        return {
            "system": self.name,
            "rows": [r.as_dict() for r in self.step_rows(state)],
            "draft": state.get("draft"),
            "final_answer": state.get("final_answer"),
            "outcome": state.get("outcome"),
            "outcome_reason": state.get("outcome_reason"),
        }


SYSTEM = Relay()
