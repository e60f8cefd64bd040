"""How the pages present a supervisor_bus run: the message bus, the outstanding requests
with their time left, the dead letters and the supervisor's decisions where a plan run
shows its steps; its approval cards; and its lesson, a shared blackboard beside the bus."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from graph.supervisor_bus.settings_model import BusSettings
from graph.supervisor_bus.teaching import blackboard_vs_bus
from ui.system_view import SystemView
from ui.view_models import ApprovalView, Block, Lesson, Panel, RunFacts, cell

if TYPE_CHECKING:
    from graph.kernel.design import Design


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= 90 else text[:90] + " …"


class BusView(SystemView):
    count_labels = {"steps": "Requests", "messages": "Bus messages"}
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
    examples = (
        "What caused the dot-com crash?",
        "What happened to Apple when it launched the iPhone?",
        "Why did Google go public in 2004?",
    )
    field_labels = {"current_step": "Round"}
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

    def limits(self, design: Design) -> str:
        timeout = design.settings_of(BusSettings).bus_timeout_s
        return f"supervisor + message bus, requests time out after {timeout:g} s"

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
