"""supervisor_bus as a hosted system: its graph and its state at a glance (its Run page is
``ui/systems/supervisor_bus.py``).

The graph: the supervisor hub, the human node, and only the enabled workers, each
declaring where it may go.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from langchain_core.messages import HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from graph.agents.user_agents import define
from graph.kernel.conversation import first_turn
from graph.kernel.design import Design
from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.kernel.system import System
from graph.kernel.system_parts import Ability, Forks, Prompts, Shape, preview_or_sample
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.supervisor_bus import agents, offline_rules, prompts
from graph.supervisor_bus.agents import AGENTS, enabled_specs
from graph.supervisor_bus.bus import ANSWER_TYPES, Outbox, answer_to, inbox, messages, preview
from graph.supervisor_bus.deps import make_deps, max_rounds
from graph.supervisor_bus.human import human_node
from graph.supervisor_bus.settings_model import BusSettings
from graph.supervisor_bus.state import (
    STATE_TYPES,
    USER_AGENTS_CONSUMED,
    BusState,
    consumed_field,
)
from graph.supervisor_bus.supervisor import supervisor_ask, supervisor_node
from graph.supervisor_bus.workers import worker_node

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.types import Checkpointer

    from graph.settings import Settings

INBOX_OWNERS = ("supervisor", "human", *AGENTS)


@dataclass
class RequestRow:
    """One request the supervisor sent a worker: the run table of this system."""

    step: int  # the supervisor's round that sent it
    agent: str
    task: str
    status: str  # waiting / answered / error / escalated / retried / reassigned / dropped
    answer: str
    time_to_answer_s: float | None
    message_id: str
    refused_tools: list[str]

    def as_dict(self) -> dict:
        return asdict(self)


class BusShape(Shape):
    def design_warnings(self, enabled: list[str]) -> list[str]:
        return agents.design_warnings(enabled)


class BusPrompts(Prompts):
    def node_ask(
        self, node: str, state: dict, design: Design, at: float, settings: Settings | None = None
    ) -> NodeAsk:
        """The supervisor's routing request as its node would send it at ``at``: the
        answers waiting in its inbox close their requests first, as the node does."""
        if node != "supervisor":
            return super().node_ask(node, state, design, at, settings)
        pending = inbox(state, "supervisor")
        if any(m.from_ == "human" and m.type == "result" for m in pending):
            raise NotTryable(
                "Here the supervisor carries out a human's decision without asking its "
                "model: choose a later checkpoint before the supervisor."
            )
        answered = {m.in_reply_to for m in pending if m.type in ANSWER_TYPES and m.in_reply_to}
        outstanding = {
            k: v for k, v in (state.get("outstanding") or {}).items() if k not in answered
        }
        view = {**state, "outstanding": outstanding}
        define(design.user_agents)
        enabled = [s.name for s in enabled_specs(design.enabled_agents)]
        return NodeAsk(
            node,
            "supervisor_bus/supervisor",
            "planner",
            lambda p: supervisor_ask(view, p, pending, max_rounds(enabled), at, enabled),
        )

    def preview_prompt(
        self, name: str, text: str, state: dict | None = None, design: Design | None = None
    ) -> str:
        return preview_or_sample(prompts.preview_prompt, name, text, state)


class SupervisorBus(System):
    name = "supervisor_bus"
    title = "Supervisor + message bus"
    offline_rules: ClassVar[ModuleType] = offline_rules
    # its researcher reads the bundled documents (no database tool): questions about events
    agents = AGENTS
    shape = BusShape(
        "supervisor",
        # Its supervisor routes by each worker's description, and a worker is a node that
        # answers the requests in its inbox: a user agent is one more such worker.
        takes_user_agents=True,
        hubs=frozenset({"supervisor"}),
        router="supervisor",
        abilities=(
            Ability(
                "write or save a report",
                r"\b(write|save|create|produce) (me )?(a |the )?(report|draft)\b",
                ("writer",),
            ),
        ),
        state_types=STATE_TYPES,
        # A bus round is the supervisor's decision and the run of the agent it addressed.
        # Its own bound comes first: ``Deps.max_rounds`` decisions end a run as stuck.
        node_runs_per_step=2,
    )
    # The registry and every inbox on the timeline, so a replay from a stale checkpoint
    # shows which messages it will handle again.
    forks = Forks(
        timeline_fields=(
            "current_step",
            "outstanding",
            "escalated",
            "dead_letters",
            "completed_agents",
            *(consumed_field(o) for o in INBOX_OWNERS),
            USER_AGENTS_CONSUMED,
            "final_answer",
        )
    )
    prompts = BusPrompts(
        "supervisor_bus",
        tuned={"supervisor": "supervisor_bus/supervisor"},
        nodes=frozenset(AGENTS) | {"supervisor"},
    )
    settings_model = BusSettings

    def build_graph(
        self,
        design: Design | None = None,
        *,
        settings: Settings | None = None,
        checkpointer: Checkpointer = None,
        planner_model: BaseChatModel | None = None,
        worker_model: BaseChatModel | None = None,
    ) -> CompiledStateGraph:
        """``planner_model`` is the supervisor's model, ``worker_model`` the workers'."""
        design = design or Design(system=self.name)
        deps = make_deps(
            design, settings=settings, planner_model=planner_model, worker_model=worker_model
        )
        builder = SystemGraph(BusState)
        builder.add_node(
            "supervisor",
            partial(supervisor_node, deps=deps),
            destinations=(*deps.enabled, "human", END),
        )
        builder.add_node(
            "human", partial(human_node, deps=deps), destinations=("supervisor", "human")
        )
        for name in deps.enabled:
            builder.add_node(
                name, partial(worker_node, deps=deps, agent=name), destinations=("supervisor",)
            )
        return compile_graph(
            builder,
            design,
            system=self,
            checkpointer=checkpointer,
            model=deps.supervisor_model,
            prompts=deps.prompts,
            settings=deps.settings,
        )

    def initial_state(self, question: str, design: Design) -> dict:
        """The question is the first message on the bus: from the user, to the supervisor."""
        state = {"session_id": uuid.uuid4().hex, "bus": []}
        ask = Outbox(state, "user").send("supervisor", "request", {"question": question})
        return {
            **state,
            "bus": [ask],
            "messages": [HumanMessage(content=question, name="user")],
            "user_query": question,
            "enabled_agents": list(design.enabled_agents),
            "current_step": 0,
            "outstanding": {},
            "timeout_s": design.settings_of(BusSettings).bus_timeout_s,
            "turn_start": 0,
            **first_turn(question, design, self.shape.entry),
        }

    def new_turn(self, state: dict, text: str, design: Design) -> dict:
        """A follow-up message is a new request from the user on the bus; the supervisor's
        rounds count again from 0 and it reads who answered from this turn's start."""
        ask = Outbox(state, "user").send("supervisor", "request", {"question": text})
        return {
            "bus": [ask],
            "user_query": text,
            "current_step": 0,
            "turn_start": len(state.get("bus") or []),
            "final_answer": None,
            "outcome": None,
            "outcome_reason": None,
        }

    def step_rows(self, state: dict) -> list[RequestRow]:
        """One row per request to a worker, in the order they were sent."""
        bus = messages(state)
        rounds = {d.get("request_id"): d["round"] for d in state.get("decisions") or []}
        dead = state.get("dead_letters") or {}
        outstanding = state.get("outstanding") or {}
        workers = set(AGENTS) | set(state.get("enabled_agents") or [])
        rows = []
        for m in bus:
            if m.type != "request" or m.from_ != "supervisor" or m.to not in workers:
                continue
            answer = answer_to(bus, m.id)
            if answer is not None:
                status = "answered" if answer.type == "result" else "error"
            elif m.id in dead:
                resolution = dead[m.id].get("resolution", "escalated")
                status = {"waiting for a human": "escalated"}.get(resolution, resolution).split(
                    " "
                )[0]
            elif m.id in outstanding:
                status = "waiting"
            else:
                status = "unanswered"
            refused = [
                e.payload.get("tool", "")
                for e in bus
                if e.type == "error" and e.payload.get("request") == m.id
            ]
            rows.append(
                RequestRow(
                    rounds.get(m.id, 0),
                    m.to,
                    m.payload.get("task", ""),
                    status,
                    preview(answer.payload, 300) if answer else "",
                    round(answer.sent_at - m.sent_at, 3) if answer else None,
                    m.id,
                    refused,
                )
            )
        return rows

    def snapshot(self, state: dict, now: float | None = None) -> dict:
        """What the Run page shows of a state, small and JSON-safe: the bus table, the
        outstanding registry with time left, dead letters and the supervisor's decisions."""
        now = now or time.time()
        bus = messages(state)
        timeout = float(state.get("timeout_s") or 0)
        users = [a for a in state.get("enabled_agents") or [] if a not in INBOX_OWNERS]
        owners = (*INBOX_OWNERS, *users)
        consumed = {owner: set(state.get(consumed_field(owner)) or []) for owner in owners}
        to = {m.id: m.to for m in bus}
        table = []
        for m in bus:
            answer = answer_to(bus, m.id) if m.type == "request" else None
            table.append(
                {
                    "id": m.id,
                    "from": m.from_,
                    "to": m.to,
                    "type": m.type,
                    "payload": preview(m.payload),
                    "in_reply_to": m.in_reply_to,
                    "sent_at": m.sent_at,
                    # user agents share one field: each consumed only what was sent to it
                    "consumed_by": [
                        o
                        for o in owners
                        if m.id in consumed[o] and (o in INBOX_OWNERS or m.to == o)
                    ],
                    "time_to_answer_s": round(answer.sent_at - m.sent_at, 3) if answer else None,
                }
            )
        rows = [r.as_dict() for r in self.step_rows(state)]
        return {
            "system": self.name,
            "rows": rows,
            "counts": {"steps": len(rows), "messages": len(table)},
            "bus": table,
            "outstanding": [
                {
                    "message_id": mid,
                    "to": to.get(mid, "?"),
                    "sent_at": at,
                    "timeout_s": timeout,
                    "time_left_s": round(max(0.0, at + timeout - now), 3),
                }
                for mid, at in (state.get("outstanding") or {}).items()
            ],
            "dead_letters": list((state.get("dead_letters") or {}).values()),
            "escalated": sorted(state.get("escalated") or []),
            "decisions": list(state.get("decisions") or []),
            "completed_agents": sorted(state.get("completed_agents") or []),
            "approvals": list(state.get("approvals") or []),
            "current_step": state.get("current_step"),
            "user_query": state.get("user_query"),
            "timeout_s": timeout,
            "notices": state.get("notices") or [],
            "final_answer": state.get("final_answer"),
            "outcome": state.get("outcome"),
            "outcome_reason": state.get("outcome_reason"),
        }


SYSTEM = SupervisorBus()
