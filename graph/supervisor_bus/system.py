"""supervisor_bus as a hosted system: its graph, its state at a glance, its Run page.

The graph: the supervisor hub, the human node, and only the enabled workers, each
declaring where it may go. The Run page shows the message bus, the outstanding requests
with their time left, the dead letters and the supervisor's decisions where a plan run
shows its steps.

Over 400 lines: the System contract's members for this system (graph, snapshot, panels,
lesson, texts), each short; the contract is what ties them.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import asdict, dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from langchain_core.messages import HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from graph.kernel.conversation import first_turn
from graph.kernel.design import Design
from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.kernel.system import (
    Ability,
    ApprovalView,
    Block,
    Lesson,
    Panel,
    RunFacts,
    System,
    cell,
)
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.prompts import PromptError
from graph.supervisor_bus import agents, offline_rules, prompts
from graph.supervisor_bus.agents import AGENTS
from graph.supervisor_bus.bus import ANSWER_TYPES, Outbox, answer_to, inbox, messages, preview
from graph.supervisor_bus.deps import make_deps, max_rounds
from graph.supervisor_bus.human import human_node
from graph.supervisor_bus.settings_model import BusSettings
from graph.supervisor_bus.state import STATE_TYPES, BusState, consumed_field
from graph.supervisor_bus.supervisor import supervisor_ask, supervisor_node
from graph.supervisor_bus.teaching import blackboard_vs_bus
from graph.supervisor_bus.workers import worker_node

log = logging.getLogger(__name__)

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


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 90 else text[:90] + " …"


class SupervisorBus(System):
    name = "supervisor_bus"
    title = "Supervisor + message bus"
    summary = (
        "Agents exchange typed messages on an append-only bus; a supervisor reads its "
        "inbox and routes, requests that time out go to a human, tools follow each role."
    )
    intro = (
        "The **supervisor** reads the typed messages addressed to it on the bus and "
        "decides which agent gets the next request; every agent answers on the bus, and "
        "a request not answered in time goes to a human."
    )
    always_on = "The supervisor and the human node are always on."
    offline_rules: ClassVar[ModuleType] = offline_rules
    # its researcher reads the bundled documents (no database tool): questions about events
    examples = (
        "What caused the dot-com crash?",
        "What happened to Apple when it launched the iPhone?",
        "Why did Google go public in 2004?",
    )
    entry = "supervisor"
    agents = AGENTS
    hubs = frozenset({"supervisor"})
    router = "supervisor"
    settings_model = BusSettings
    count_labels = {"steps": "Requests", "messages": "Bus messages"}
    abilities = (
        Ability(
            "write or save a report",
            r"\b(write|save|create|produce) (me )?(a |the )?(report|draft)\b",
            ("writer",),
        ),
    )
    state_types = STATE_TYPES
    # The registry and every inbox, so a replay from a stale checkpoint shows which
    # messages it will handle again.
    timeline_fields = (
        "current_step",
        "outstanding",
        "escalated",
        "dead_letters",
        "completed_agents",
        *(consumed_field(o) for o in INBOX_OWNERS),
        "final_answer",
    )
    field_labels = {"current_step": "Round"}
    tuned_prompts = {"supervisor": "supervisor_bus/supervisor"}
    policy_words = {
        "always": "always ask",
        "never": "never ask",
        "planner": "ask when the supervisor flags the request",
    }
    rejected = "reject the request (it is dropped)"
    approvals_note = (
        "A request to an agent set to *always ask* waits for a person before it "
        "is sent: approve it, edit its task, or decline it. A request that times "
        "out always asks a human (see the request timeout): retry it, reassign it "
        "to another agent, or drop it."
    )
    graph_legend = (
        "Dashed: a route the node may choose. Every worker answers back to the "
        "supervisor; the human node answers escalated requests and approvals."
    )
    lesson = "Teaching: why a shared blackboard breaks from three agents — and the bus does not"
    working = "The supervisor is reading the question…"
    answer_pending = "The final answer appears here when the supervisor finishes the run."

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
            **first_turn(question, design, self.entry),
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
        rows = []
        for m in bus:
            if m.type != "request" or m.from_ != "supervisor" or m.to not in AGENTS:
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
        consumed = {owner: set(state.get(consumed_field(owner)) or []) for owner in INBOX_OWNERS}
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
                    "consumed_by": [o for o in INBOX_OWNERS if m.id in consumed[o]],
                    "time_to_answer_s": round(answer.sent_at - m.sent_at, 3) if answer else None,
                }
            )
        return {
            "system": self.name,
            "rows": [r.as_dict() for r in self.step_rows(state)],
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

    def counts(self, snapshot: dict) -> dict[str, int]:
        return {
            "steps": len(snapshot.get("rows") or []),
            "messages": len(snapshot.get("bus") or []),
        }

    def facts(self, snapshot: dict, counts: dict[str, int]) -> list[str]:
        return [
            f"{counts.get('steps', 0)} request(s) to agents",
            f"{len(snapshot.get('bus') or [])} message(s) on the bus",
        ]

    def panels(self, snapshot: dict, facts: RunFacts) -> list[Panel]:
        now = time.time()
        bus = [
            {
                "Id": m["id"],
                "From": m["from"],
                "To": m["to"],
                "Type": m["type"],
                "Payload": cell(m["payload"]),
                "Consumed by": ", ".join(m.get("consumed_by") or []) or "—",
                "Time to answer": ""
                if m.get("time_to_answer_s") is None
                else f"{m['time_to_answer_s']:.2f} s",
            }
            for m in snapshot.get("bus") or []
        ]
        outstanding = []
        for o in snapshot.get("outstanding") or []:
            # counted down from sent_at while the run goes; as it was when it stopped
            left = (
                max(0.0, o["sent_at"] + o["timeout_s"] - now)
                if facts.live
                else o.get("time_left_s", 0.0)
            )
            outstanding.append(
                {
                    "Request": o["message_id"],
                    "To": o["to"],
                    "Timeout": f"{o['timeout_s']:g} s",
                    "Time left": f"{left:.1f} s",
                }
            )
        dead = [
            {
                "Request": d.get("message_id"),
                "To": d.get("to"),
                "Task": cell(d.get("task", "")),
                "Why": d.get("reason", ""),
                "Resolution": d.get("resolution", ""),
            }
            for d in snapshot.get("dead_letters") or []
        ]
        decisions = [
            {
                "Round": d.get("round"),
                "Next": d.get("next_agent", d.get("next", "")),
                "Task": cell(d.get("task", "")),
                "Reason": cell(d.get("reason", "")),
                "Request": d.get("request_id") or "",
            }
            for d in snapshot.get("decisions") or []
        ]
        return [
            Panel(
                "bus",
                "Message bus",
                bus,
                lead_columns=("Id", "From", "To", "Type"),
                caption="Every message on the append-only bus, in order. *Consumed by*: the "
                "inboxes that have handled it (each at most once, even after a "
                "replay); *time to answer*: from a request to its result or error.",
                empty=self.working
                if facts.live
                else (
                    f"No message on the bus yet: the run is paused before {facts.paused_next}."
                    if facts.paused_next
                    else "This run has no messages on its bus."
                ),
            ),
            Panel(
                "outstanding",
                "Outstanding requests",
                outstanding,
                empty="None: every request sent has been answered or escalated.",
            ),
            Panel("dead", "Dead letters", dead, empty="None: no request timed out."),
            Panel(
                "decisions",
                "Supervisor's decisions",
                decisions,
                caption="Each decision is also a `status` message on the bus: the last one "
                "says where the run stands."
                if decisions
                else "",
                empty="No decision yet.",
            ),
        ]

    def run_lesson(self) -> Lesson:
        """The same three-agent task on a flat shared state and on the bus, side by side."""
        result = blackboard_vs_bus()
        board, bus = result.blackboard, result.bus
        lost = {(x["step"], x["key"]): x for x in board.lost_writes}
        writes = []
        for w in board.writes:
            gone = lost.get((w["step"], w["key"]))
            writes.append(
                {
                    "Step": w["step"],
                    "Agent": w["agent"],
                    "Key": w["key"],
                    "Lost": f"LOST: overwritten by {gone['overwritten_by']} at step "
                    f"{gone['overwritten_at_step']}"
                    if gone
                    else "kept",
                    "Value": _short(w["value"]),
                }
            )
        left = [
            Block(
                "markdown",
                f"{board.coordination}\n\n**"
                f"{' and '.join(board.parallel_agents)} write in one "
                "parallel step:**",
            ),
            Block("error", f"`{board.parallel_error_type}`: {board.parallel_error}")
            if board.parallel_error_type
            else Block("success", "No error."),
            Block("markdown", "**One agent at a time: no error, but writes are lost silently.**"),
            Block("table", writes),
            Block("markdown", f"**Answer:** {board.answer}"),
        ]
        if not board.findings_reached_answer:
            left.append(Block("warning", "The researcher's findings never reached the answer."))
        right = [
            Block(
                "markdown",
                f"{bus.coordination}\n\n**"
                f"{' and '.join(bus.parallel_agents)} write in one parallel "
                "step:**",
            ),
            Block("error", f"`{bus.parallel_error_type}`: {bus.parallel_error}")
            if bus.parallel_error_type
            else Block("success", "No error: both messages were appended to the bus."),
            Block(
                "markdown",
                f"**{len(bus.writes)} message(s) written, {len(bus.lost_writes)} lost.**",
            ),
            Block(
                "table",
                [
                    {
                        "Id": m["id"],
                        "From": m["from"],
                        "To": m["to"],
                        "Type": m["type"],
                        "Payload": _short(m["payload"]),
                    }
                    for m in bus.bus
                ],
            ),
            Block("markdown", f"**Answer:** {bus.answer}"),
        ]
        if bus.findings_reached_answer:
            right.append(Block("success", "The researcher's findings reached the answer."))
        return Lesson(
            self.lesson,
            "The same task runs twice with no model: once on one flat "
            "state without reducers, once on the message bus. Nothing is stored as a "
            "run.",
            f"**Task.** {result.task}  \n**Question.** {result.question}",
            [("Shared blackboard", left), ("Message bus", right)],
            result.lessons,
        )

    def approval_view(self, item: dict) -> ApprovalView:
        kind = item.get("kind") or "approval"
        about = f" · request {item['message_id']}" if item.get("message_id") else ""
        what = {
            "approval": "approval before the supervisor sends the request",
            "escalation": "escalation: the request timed out",
        }.get(kind, kind)
        return ApprovalView(
            f"**Round {item.get('step')} · {item.get('agent')}{about}** · {what}",
            note="Retry or Approve: send it to the same agent again. Approve edited query with "
            "another agent's name (e.g. `researcher`) in the box: reassign it. Skip or "
            "Reject: drop it (a dead letter)."
            if kind == "escalation"
            else "",
            help={
                "approve": "Send the request to the agent (for a timed-out request: retry it).",
                "edit": "Reassign: put another enabled agent's name (e.g. researcher) in the "
                "query box to send the request to it; any other text retries with "
                "that task.",
                "reject": "Drop the request: it stays a dead letter and the supervisor goes on.",
                "skip": "Drop the request: it stays a dead letter and the supervisor goes on.",
                "retry": "Send the same request to the same agent again.",
            },
            placeholder="e.g. why drop this request",
            query_label="Request the agent will get (edit it, or name another agent, then "
            "Approve edited query)",
        )

    def limits(self, design: Design) -> str:
        timeout = design.settings_of(BusSettings).bus_timeout_s
        return f"supervisor + message bus, requests time out after {timeout:g} s"

    def design_warnings(self, enabled: list[str]) -> list[str]:
        return agents.design_warnings(enabled)

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
        enabled = [a for a in design.enabled_agents if a in AGENTS]
        return NodeAsk(
            node,
            "supervisor_bus/supervisor",
            "planner",
            lambda p: supervisor_ask(view, p, pending, max_rounds(enabled), at, enabled),
        )

    def preview_prompt(
        self, name: str, text: str, state: dict | None = None, design: Design | None = None
    ) -> str:
        try:
            return prompts.preview_prompt(name, text, state)
        except PromptError:
            raise
        except Exception as exc:  # another system's state: the sample instead
            log.debug("preview of %s on the given state failed, sample shown: %r", name, exc)
            return prompts.preview_prompt(name, text, None)


SYSTEM = SupervisorBus()
