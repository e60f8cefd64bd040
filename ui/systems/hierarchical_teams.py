"""How the pages present a hierarchical_teams run: the live subtask table, every plan the
lead made (kept / cancelled / added), its dispatches, each team's inner steps and
messages, and the approvals given; the subtask plan a fork edits as a table."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from graph.hierarchical_teams.agents import AGENTS, enabled_teams
from graph.hierarchical_teams.fork import COLUMNS, plan_rows
from ui.system_view import SystemView
from ui.view_models import ApprovalView, ForkTable, Panel, RunFacts, cell

if TYPE_CHECKING:
    from graph.kernel.design import Design


def _short(text: object, limit: int = 400) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _when(at: float | None) -> str:
    return datetime.fromtimestamp(at).strftime("%H:%M:%S") if at else ""


def _plan_title(plan: dict, number: int) -> str:
    if plan.get("kind") == "initial":
        return f"Plan {number} — first plan (request revision {plan.get('revision', 0)})"
    if plan.get("kind") == "fork":
        return f"Plan {number} — edited by hand for this fork"
    return f"Plan {number} — replan after the request was edited (revision {plan.get('revision')})"


def _plan_changes(plan: dict) -> str:
    """Kept / cancelled / added, in one line."""
    parts = []
    if plan.get("kind") != "initial":
        parts.append("kept " + (", ".join(plan.get("kept") or []) or "none"))
        if plan.get("changed"):
            parts.append("changed " + ", ".join(plan["changed"]))
        cancelled = plan.get("cancelled") or []
        parts.append(
            "cancelled " + ("; ".join(f"{c['id']} ({c['reason']})" for c in cancelled) or "none")
        )
    parts.append("added " + (", ".join(plan.get("added") or []) or "none"))
    return " · ".join(parts)


def _team_activity(events: list[dict]) -> dict[str, dict[str, list]]:
    """Each team's inner steps and messages, from the updates its subgraph streamed (so
    they show while the team works, and a team stopped by an edit keeps what it did)."""
    teams: dict[str, dict[str, list]] = {}
    for event in events:
        ns = event.get("namespace") or ""
        if event.get("kind") != "update" or not ns:
            continue
        team = ns.split(":", 1)[0]
        raw = event.get("data")
        data = raw if isinstance(raw, dict) else {}
        found = teams.setdefault(team, {"steps": [], "messages": []})
        found["steps"] += [s for s in data.get("team_steps") or [] if isinstance(s, dict)]
        found["messages"] += [m for m in data.get("messages") or [] if isinstance(m, dict)]
    return teams


class TeamsView(SystemView):
    count_labels = {"steps": "Subtasks", "replans": "Replans"}
    summary = (
        "A lead supervisor splits a multi-intent request into subtasks, one team each; "
        "every team is a subgraph with its own supervisor and workers that sees only its "
        "subtask, side-effecting calls wait for a human, and an edited request is "
        "replanned."
    )
    intro = (
        "The **lead supervisor** splits one request with several intents into subtasks "
        "and gives each to one team; a team (a subgraph drawn as a box) has its own "
        "supervisor and workers and sees only its subtask. Calls to the API ask a human "
        "first; you can edit the request while the run goes."
    )
    always_on = (
        "The lead supervisor and each team's supervisor are always on; a team is on "
        "when at least one of its workers is."
    )
    examples = (
        "Check that the API is healthy and find reliable news sites about what moves the "
        "stock market",
        "Find reliable news sites about semiconductor tariffs, then send their URLs to the API",
        "Check that the API is healthy, find reliable news sites about interest rates and "
        "send their URLs to the API",
    )
    field_labels = {"subtasks": "Subtask plan"}
    policy_words = {"always": "always ask", "never": "never ask", "planner": "ask before each call"}
    rejected = "reject the call (it is not sent; its subtask fails)"
    approvals_note = (
        "Only calls with side effects (request_team's HTTP calls) ever ask: "
        '"always" and "ask before each call" both ask before each call, '
        '"never" sends it at once. The other workers change nothing.'
    )
    graph_legend = (
        "Dashed: a route the node may choose. Each box is a team: a subgraph with "
        "its own supervisor and workers; its call_api gate asks a human before an "
        "HTTP call with side effects."
    )
    working = "The lead supervisor is splitting the request into subtasks…"
    answer_pending = (
        "The final answer appears here when the lead supervisor has no subtask "
        "left: every subtask's result, in plan order."
    )
    edited = (
        "the lead supervisor replans, keeping finished subtasks and cancelling the ones "
        "the new text no longer asks for."
    )

    def facts(self, snapshot: dict, counts: dict[str, int]) -> list[str]:
        subtasks = snapshot.get("rows") or []
        return [
            f"{len(subtasks)} subtask(s)",
            f"{sum(1 for r in subtasks if r['status'] == 'done')} done",
            f"{len(snapshot.get('plans') or [])} plan(s)",
            f"request revision {snapshot.get('request_revision') or 0}",
        ]

    def panels(self, snapshot: dict, facts: RunFacts) -> list[Panel]:
        subtasks = []
        for r in snapshot.get("rows") or []:
            outcome = r.get("result") or ""
            if r.get("reason") and r["status"] != "done":
                outcome = f"{r['reason']} {outcome}".strip()
            subtasks.append(
                {
                    "Id": r["id"],
                    "Team": r["team"],
                    "Instruction": cell(r["instruction"]),
                    "Status": r["status"],
                    "Depends on": ", ".join(r.get("depends_on") or []) or "—",
                    "Result": cell(_short(outcome)),
                    "Time": "" if r.get("duration_s") is None else f"{r['duration_s']:.1f} s",
                }
            )
        edits = snapshot.get("edits") or []
        caption = (
            "One row per subtask of the lead supervisor's plan, live. Status: pending → "
            "delegated (its team works on it) → done / failed / cancelled; a team sees "
            "only its own instruction and the results of what it depends on."
        )
        if edits:
            caption = (
                "Request edits: "
                + " · ".join(
                    f"revision {e['revision']} at {_when(e['at'])}: “{_short(e['text'], 160)}”"
                    for e in edits
                )
                + ".  \n"
                + caption
            )
        plans = snapshot.get("plans") or []
        plan_items = [
            {
                "label": _plan_title(plan, n),
                "text": f"For the request: “{plan.get('request') or ''}”  \n{_plan_changes(plan)}",
                "rows": [
                    {
                        "Id": s["id"],
                        "Team": s["team"],
                        "Instruction": cell(s["instruction"]),
                        "Status when planned": s["status"],
                        "Depends on": ", ".join(s.get("depends_on") or []) or "—",
                    }
                    for s in plan.get("subtasks") or []
                ],
                "open": n == len(plans) and n > 1,
            }
            for n, plan in enumerate(plans, 1)
        ]
        dispatches = [
            {
                "Dispatch": r.get("step"),
                "Subtask": r.get("subtask_id"),
                "Team": r.get("team") or "—",
                "Chosen by": {"direct": "the only one that could run", "lead": "routing call"}.get(
                    r.get("by"), r.get("by")
                ),
                "Reason": cell(r.get("reason") or ""),
            }
            for r in snapshot.get("routing") or []
        ]
        activity = _team_activity(facts.updates)
        names = [t for t in snapshot.get("teams") or [] if t in activity] or list(activity)
        team_items = [
            {
                "label": f"{team} — {len(activity[team]['steps'])} step(s), "
                f"{len(activity[team]['messages'])} message(s)",
                "rows": [
                    {
                        "Time": _when(s.get("at")),
                        "Subtask": s.get("subtask_id"),
                        "Node": s.get("node"),
                        "What": s.get("kind"),
                        "Detail": cell(_short(s.get("text"), 300)),
                    }
                    for s in activity[team]["steps"]
                ],
                "messages": activity[team]["messages"],
                "open": team == snapshot.get("current_team") and facts.live,
            }
            for team in names
        ]
        approvals = [
            {
                "Subtask": a.get("subtask_id"),
                "Worker": a.get("agent"),
                "Call": cell(a.get("query", "")),
                "Decision": a.get("decision"),
                "By": a.get("by"),
                "Reason": cell(a.get("reason") or ""),
            }
            for a in snapshot.get("approvals") or []
        ]
        return [
            Panel(
                "subtasks",
                "Subtasks",
                subtasks,
                caption=caption,
                status_column="Status",
                lead_columns=("Id", "Team", "Status"),
                empty=self.working
                if facts.live
                else (
                    f"No subtasks yet: the run is paused before {facts.paused_next}."
                    if facts.paused_next
                    else "This run has no subtasks."
                ),
            ),
            Panel("plans", "Plans", items=plan_items, empty="No plan yet."),
            Panel("dispatches", "Lead supervisor's dispatches", dispatches),
            Panel("teams", "Inside the teams", items=team_items, empty="No team has started yet."),
            Panel("approvals", "Approvals given", approvals),
        ]

    def limits(self, design: Design) -> str:
        return (
            "a lead supervisor over teams; calls to the API wait for a human unless a "
            "worker is set to never ask"
        )

    def approval_view(self, item: dict) -> ApprovalView:
        if not item.get("call"):
            return super().approval_view(item)
        return ApprovalView(
            f"**Subtask {item.get('subtask_id')} · {item.get('team')} · {item.get('agent')}** · "
            "approval before the HTTP call is sent",
            code=item.get("query") or "",
            note="Approve sends exactly this call. To change it, edit the query as METHOD URL "
            "[JSON body] and press Approve edited query (it must stay on the allowlisted "
            "API). Reject or Skip: nothing is sent and the subtask fails with your reason.",
            help={
                "reject": "Do not send the call: the subtask fails with your reason.",
                "skip": "Do not send the call: the subtask fails.",
            },
            placeholder="e.g. why not send this call",
            query_label="The HTTP call to send (edit it as METHOD URL [JSON body], then "
            "Approve edited query)",
        )

    def fork_table(self, field: str, values: dict, design: Design) -> ForkTable | None:
        if field != "subtasks":
            return None
        return ForkTable(
            columns=list(COLUMNS),
            rows=plan_rows(values),
            choices={
                "team": enabled_teams([a for a in AGENTS if a in design.enabled_agents]),
                "status": ["pending", "cancelled", "delegated", "done", "failed"],
            },
            locked=("id",),
            note=(
                "Edit an instruction, a team, what a subtask depends on (ids, comma "
                "separated), or set a subtask pending or cancelled; add a row for a new "
                "subtask (its id is given: the next s<number>); a deleted row is "
                "cancelled. Done subtasks keep their results and are not run again; a "
                "delegated one (its team had not finished) is dispatched again. The new "
                "run starts at the lead supervisor, which dispatches from this plan."
            ),
        )

    def agent_caption(self, name: str) -> str:
        spec = AGENTS[name]
        return f"{spec.description} Tools: {', '.join(spec.tools)}."
