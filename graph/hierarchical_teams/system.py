"""hierarchical_teams as a hosted system: its graph, its state at a glance, its Run page.

The top graph: the lead supervisor, and one subgraph node per team that is on (a team is
on when at least one of its workers is). The Run page shows the live subtask table, every
plan the lead made (kept / cancelled / added), its dispatches, each team's inner steps
and messages, and the approvals given.

Over 400 lines: the System contract's members for this system (graph, snapshot, panels,
approvals, texts), each short; the contract is what ties them.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.messages import HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from graph.hierarchical_teams import agents, offline_rules, prompts
from graph.hierarchical_teams.agents import AGENTS, TEAMS, enabled_teams, team_workers
from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.fork import COLUMNS, edited_plan, parse_rows, plan_rows
from graph.hierarchical_teams.lead import lead_supervisor_node
from graph.hierarchical_teams.lead_asks import (
    Replan,
    RoutingDecision,
    SubtaskPlan,
    first_ask,
    fold_results,
)
from graph.hierarchical_teams.state import TeamsState
from graph.hierarchical_teams.teams import build_team, team_ask, worker_ask, worker_tools
from graph.kernel.conversation import first_turn
from graph.kernel.design import Design
from graph.kernel.ledger import side_effect_ledger
from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.kernel.system import Ability, ApprovalView, ForkTable, Panel, RunFacts, System, cell
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.models.chat import role_models
from graph.models.structured import JsonAsk
from graph.prompts import PromptError, PromptSet
from graph.settings import get_settings

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.types import Checkpointer

    from graph.settings import Settings

LEAD = "lead_supervisor"
MAX_DISPATCHES = max(8, 4 * len(AGENTS))


@dataclass
class SubtaskRow:
    """One subtask: the run table of this system."""

    id: str
    team: str
    instruction: str
    status: str  # pending / delegated / done / failed / cancelled
    depends_on: list[str]
    result: str
    reason: str
    revision: int  # the request revision it was planned under
    duration_s: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def _short(text: object, limit: int = 400) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _when(at: float | None) -> str:
    return datetime.fromtimestamp(at).strftime("%H:%M:%S") if at else ""


class HierarchicalTeams(System):
    name = "hierarchical_teams"
    title = "Hierarchical teams"
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
    offline_rules: ClassVar[ModuleType] = offline_rules
    examples = (
        "Check that the API is healthy and find reliable news sites about what moves the "
        "stock market",
        "Find reliable news sites about semiconductor tariffs, then send their URLs to the API",
        "Check that the API is healthy, find reliable news sites about interest rates and "
        "send their URLs to the API",
    )
    entry = LEAD
    agents = AGENTS
    teams = {t.name: t.description for t in TEAMS.values()}
    hubs = frozenset({LEAD})
    router = LEAD
    count_labels = {"steps": "Subtasks", "replans": "Replans"}
    abilities = (
        Ability(
            "check an API",
            r"\bapi\b.*\b(health|healthy|status|up)\b|\bhealth ?check",
            ("health_checker",),
        ),
        Ability("find news sites", r"\bnews (sites?|urls?|search)", ("searcher", "url_builder")),
    )
    timeline_fields = (
        "request",
        "request_revision",
        "subtasks_planned",
        "subtasks",
        "current_subtask_id",
        "current_instruction",
        "team_results",
        "final_answer",
    )
    # A fork edits the subtask plan (a table on the History page); inside a team the
    # timeline shows which subtask it works on, the worker's task and reports.
    fork_fields = ("subtasks",)
    field_labels = {"subtasks": "Subtask plan"}
    inner_fields = (
        "current_subtask_id",
        "current_instruction",
        "worker_task",
        "team_round",
        "proposed_call",
        "reports",
        "team_results",
    )
    policy_words = {"always": "always ask", "never": "never ask", "planner": "ask before each call"}
    tuned_prompts = {
        "lead": "hierarchical_teams/plan",
        "team supervisor": "hierarchical_teams/team_supervisor",
    }
    forked_prompts = {
        "lead replan": "hierarchical_teams/replan",
        "lead routing": "hierarchical_teams/route",
        **{name: f"hierarchical_teams/{name}" for name in AGENTS},
    }
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
    can_edit_request = True
    edit_goto = LEAD
    edited = (
        "the lead supervisor replans, keeping finished subtasks and cancelling the ones "
        "the new text no longer asks for."
    )

    def build_graph(
        self,
        design: Design | None = None,
        *,
        settings: Settings | None = None,
        checkpointer: Checkpointer = None,
        planner_model: BaseChatModel | None = None,
        worker_model: BaseChatModel | None = None,
    ) -> CompiledStateGraph:
        """``planner_model`` is the lead's model, ``worker_model`` the teams'."""
        design = design or Design(system=self.name)
        settings = settings or get_settings()
        enabled = [a for a in AGENTS if a in design.enabled_agents]
        teams = enabled_teams(enabled)
        texts = PromptSet(design.prompts)
        lead, worker = role_models(settings, texts, planner_model, worker_model)
        deps = Deps(
            settings=settings,
            lead_model=lead,
            worker_model=worker,
            prompts=texts,
            ledger=side_effect_ledger(settings),
            enabled=enabled,
            teams=teams,
            nodes=frozenset({LEAD, *teams}),
            max_dispatches=MAX_DISPATCHES,
            approvals={a: design.approval_policy(a) for a in enabled},
        )
        builder = SystemGraph(TeamsState)
        builder.add_node(LEAD, partial(lead_supervisor_node, deps=deps), destinations=(*teams, END))
        for team in teams:
            builder.add_node(team, build_team(team, deps))
            builder.add_edge(team, LEAD)
        return compile_graph(
            builder,
            design,
            system=self,
            checkpointer=checkpointer,
            model=deps.lead_model,
            prompts=deps.prompts,
            settings=deps.settings,
        )

    def initial_state(self, question: str, design: Design) -> dict:
        request_id = "r-" + uuid.uuid4().hex[:8]
        return {
            "messages": [HumanMessage(content=question, name="user", id=request_id)],
            "request": question,
            "request_id": request_id,
            "request_revision": 0,
            "user_query": question,
            "session_id": uuid.uuid4().hex,
            "enabled_agents": list(design.enabled_agents),
            "subtasks": [],
            "subtasks_planned": False,
            "next_subtask_number": 1,
            "current_step": 0,
            "team_results": {},
            **first_turn(question, design, self.entry),
        }

    def new_turn(self, state: dict, text: str, design: Design) -> dict:
        """A follow-up message is a new request with a plan of its own: the earlier turn's
        subtasks are finished (its answer is kept on its turn, its plans in ``plans``), ids
        go on counting, so no subtask id is ever reused in a run."""
        return {
            "request": text,
            "request_id": "r-" + uuid.uuid4().hex[:8],
            "request_revision": 0,
            "user_query": text,
            "subtasks": [],
            "subtasks_planned": False,
            "current_step": 0,
            "final_answer": None,
            "outcome": None,
            "outcome_reason": None,
        }

    def edit_request(self, state: dict, text: str) -> dict:
        """The state update for a request the human edited mid-run: the new text under a new
        message id, one revision more, and a plan to revise (the lead supervisor replans on
        its next entry, keeping finished work)."""
        text = (text or "").strip()
        if not text:
            raise ValueError("The edited request is empty.")
        if text == (state.get("request") or "").strip():
            raise ValueError("The request is unchanged: edit its text first.")
        revision = int(state.get("request_revision") or 0) + 1
        request_id = "r-" + uuid.uuid4().hex[:8]
        return {
            "request": text,
            "request_id": request_id,
            "request_revision": revision,
            "subtasks_planned": False,
            "outcome": None,
            "outcome_reason": None,
            "final_answer": None,
            "edits": [
                {
                    "revision": revision,
                    "request_id": request_id,
                    "text": text,
                    "previous": state.get("request") or "",
                    "at": time.time(),
                }
            ],
            "messages": [
                HumanMessage(
                    content=text,
                    name="user",
                    id=request_id,
                    response_metadata={"agent": "user", "step": None},
                )
            ],
        }

    def check_fork_change(self, field: str, text: str, design: Design) -> Any:
        """The subtask plan typed for a fork (JSON rows) in one shape; the state at the
        checkpoint checks the rest (``fork_changes``)."""
        if field != "subtasks":
            return super().check_fork_change(field, text, design)
        return parse_rows(super().check_fork_change(field, text, design))

    def fork_changes(self, values: dict, changes: dict, design: Design) -> tuple[dict, str | None]:
        """An edited subtask plan: checked against the state there and the design's
        teams, recorded as a plan of its own; the fork starts at the lead supervisor,
        which dispatches from it (done subtasks are never run again)."""
        if "subtasks" not in changes:
            return changes, None
        rest = {k: v for k, v in changes.items() if k != "subtasks"}
        update = edited_plan(values, changes["subtasks"], self._teams_on(design))
        return {**rest, **update}, LEAD

    def fork_table(self, field: str, values: dict, design: Design) -> ForkTable | None:
        if field != "subtasks":
            return None
        return ForkTable(
            columns=list(COLUMNS),
            rows=plan_rows(values),
            choices={
                "team": self._teams_on(design),
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

    def _teams_on(self, design: Design) -> list[str]:
        return enabled_teams([a for a in AGENTS if a in design.enabled_agents])

    def step_rows(self, state: dict) -> list[SubtaskRow]:
        revisions = {e["request_id"]: e["revision"] for e in state.get("edits") or []}
        now = time.time()
        rows = []
        for s in fold_results(state):
            start, end = s.get("started_at"), s.get("ended_at")
            duration = round((end or now) - start, 2) if start else None
            rows.append(
                SubtaskRow(
                    s["id"],
                    s["team"],
                    s["instruction"],
                    s["status"],
                    list(s.get("depends_on") or []),
                    s.get("result") or "",
                    s.get("reason") or "",
                    revisions.get(s.get("request_id"), 0),
                    duration,
                )
            )
        return rows

    def snapshot(self, state: dict, now: float | None = None) -> dict:
        """What the Run page shows of a state, small and JSON-safe: the subtask table, the
        plans, the lead's dispatches, the teams' inner steps, approvals and the answer."""
        return {
            "system": self.name,
            "rows": [r.as_dict() for r in self.step_rows(state)],
            "request": state.get("request"),
            "request_id": state.get("request_id"),
            "request_revision": state.get("request_revision") or 0,
            "edits": list(state.get("edits") or []),
            "plans": list(state.get("plans") or []),
            "routing": list(state.get("routing") or []),
            "team_steps": list(state.get("team_steps") or []),
            "current_subtask_id": state.get("current_subtask_id"),
            "current_team": state.get("current_team"),
            "current_step": state.get("current_step"),
            "approvals": list(state.get("approvals") or []),
            "notices": state.get("notices") or [],
            "user_query": state.get("user_query"),
            "final_answer": state.get("final_answer"),
            "outcome": state.get("outcome"),
            "outcome_reason": state.get("outcome_reason"),
            "teams": list(TEAMS),
        }

    def counts(self, snapshot: dict) -> dict[str, int]:
        return {
            "steps": len(snapshot.get("rows") or []),
            "replans": max(0, len(snapshot.get("plans") or []) - 1),
        }

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

    def limits(self, design: Design) -> str:
        return (
            "a lead supervisor over teams; calls to the API wait for a human unless a "
            "worker is set to never ask"
        )

    def design_warnings(self, enabled: list[str]) -> list[str]:
        return agents.design_warnings(enabled)

    def agent_caption(self, name: str) -> str:
        spec = AGENTS[name]
        return f"{spec.description} Tools: {', '.join(spec.tools)}."

    def fork_prompts(self, design: Design) -> dict[str, str]:
        """Only the enabled workers' prompts: another worker is not in the run's graph."""
        found = super().fork_prompts(design)
        return {
            role: p
            for role, p in found.items()
            if role not in AGENTS or role in design.enabled_agents
        }

    def node_ask(
        self, node: str, state: dict, design: Design, at: float, settings: Settings | None = None
    ) -> NodeAsk:
        """The lead supervisor's plan, replan or routing; inside a team (``node`` is
        "<team>:<inner node>"), its supervisor's routing or a worker's call."""
        enabled = [a for a in AGENTS if a in design.enabled_agents]
        teams = enabled_teams(enabled)
        if node == LEAD:
            found = first_ask(state, PromptSet(design.prompts), enabled, teams, MAX_DISPATCHES)
            if isinstance(found, str):
                raise NotTryable(found)
            names: dict[type, str] = {
                SubtaskPlan: "plan",
                Replan: "replan",
                RoutingDecision: "route",
            }
            name = names[found.schema]
            return NodeAsk(
                node,
                f"hierarchical_teams/{name}",
                "planner",
                lambda p: _checked(first_ask(state, p, enabled, teams, MAX_DISPATCHES)),
            )
        team, _, inner = node.partition(":")
        if team in teams and inner == "supervisor":
            if isinstance(why := team_ask(state, PromptSet(design.prompts), team, enabled), str):
                raise NotTryable(why)
            return NodeAsk(
                node,
                "hierarchical_teams/team_supervisor",
                "worker",
                lambda p: _checked(team_ask(state, p, team, enabled)),
            )
        if team in teams and inner in team_workers(team, enabled):
            settings = settings or get_settings()
            tools = worker_tools(inner, settings)
            return NodeAsk(
                node,
                f"hierarchical_teams/{inner}",
                "worker",
                lambda p: worker_ask(state, p, inner, settings, tools),
            )
        return super().node_ask(node, state, design, at, settings)

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

    def node_style(self, node: str) -> dict[str, str]:
        if node.rsplit(":", 1)[-1] == "supervisor" or node in self.hubs:
            return {"fillcolor": "#fff3c4"}
        if node.rsplit(":", 1)[-1] == "call_api":  # where a human approves a side effect
            return {"fillcolor": "#fde0dc", "shape": "hexagon"}
        return {}


def _checked(found: JsonAsk | str) -> JsonAsk:
    """A request the state was found to send (``node_ask`` checked it): built again with
    the texts tried."""
    if isinstance(found, str):
        raise NotTryable(found)
    return found


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


SYSTEM = HierarchicalTeams()
