"""hierarchical_teams as a hosted system: its graph, its state at a glance, its forks and
the requests its nodes send (its Run page is ``ui/systems/hierarchical_teams.py``).

The top graph: the lead supervisor, and one subgraph node per team that is on (a team is
on when at least one of its workers is).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from langchain_core.messages import HumanMessage
from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph

from graph.hierarchical_teams import agents, offline_rules, prompts
from graph.hierarchical_teams.agents import AGENTS, TEAMS, enabled_teams, team_workers
from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.fork import edited_plan, parse_rows
from graph.hierarchical_teams.lead import lead_supervisor_node
from graph.hierarchical_teams.lead_asks import (
    Replan,
    RoutingDecision,
    SubtaskPlan,
    first_ask,
    fold_results,
)
from graph.hierarchical_teams.state import TeamsState
from graph.hierarchical_teams.team_supervisor import team_ask
from graph.hierarchical_teams.teams import build_team
from graph.hierarchical_teams.workers import worker_ask, worker_tools
from graph.kernel.conversation import first_turn
from graph.kernel.design import Design
from graph.kernel.ledger import side_effect_ledger
from graph.kernel.node_asks import NodeAsk, NotTryable
from graph.kernel.system import System
from graph.kernel.system_parts import Ability, Forks, Prompts, Shape, preview_or_sample
from graph.kernel.wiring import SystemGraph, compile_graph
from graph.models.chat import role_models
from graph.models.structured import JsonAsk
from graph.prompts import PromptSet
from graph.settings import get_settings

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


def _teams_on(design: Design) -> list[str]:
    return enabled_teams([a for a in AGENTS if a in design.enabled_agents])


class TeamsShape(Shape):
    def node_style(self, node: str) -> dict[str, str]:
        if node.rsplit(":", 1)[-1] == "supervisor" or node in self.hubs:
            return {"fillcolor": "#fff3c4"}
        if node.rsplit(":", 1)[-1] == "call_api":  # where a human approves a side effect
            return {"fillcolor": "#fde0dc", "shape": "hexagon"}
        return {}

    def design_warnings(self, enabled: list[str]) -> list[str]:
        return agents.design_warnings(enabled)


class TeamsForks(Forks):
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
        update = edited_plan(values, changes["subtasks"], _teams_on(design))
        return {**rest, **update}, LEAD


class TeamsPrompts(Prompts):
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
        return preview_or_sample(prompts.preview_prompt, name, text, state)


class HierarchicalTeams(System):
    name = "hierarchical_teams"
    title = "Hierarchical teams"
    offline_rules: ClassVar[ModuleType] = offline_rules
    agents = AGENTS
    shape = TeamsShape(
        LEAD,
        hubs=frozenset({LEAD}),
        router=LEAD,
        teams={t.name: t.description for t in TEAMS.values()},
        abilities=(
            Ability(
                "check an API",
                r"\bapi\b.*\b(health|healthy|status|up)\b|\bhealth ?check",
                ("health_checker",),
            ),
            Ability(
                "find news sites", r"\bnews (sites?|urls?|search)", ("searcher", "url_builder")
            ),
        ),
    )
    # A fork edits the subtask plan (a table on the History page); inside a team the
    # timeline shows which subtask it works on, the worker's task and reports.
    forks = TeamsForks(
        timeline_fields=(
            "request",
            "request_revision",
            "subtasks_planned",
            "subtasks",
            "current_subtask_id",
            "current_instruction",
            "team_results",
            "final_answer",
        ),
        fork_fields=("subtasks",),
        inner_fields=(
            "current_subtask_id",
            "current_instruction",
            "worker_task",
            "team_round",
            "proposed_call",
            "reports",
            "team_results",
        ),
        edit_goto=LEAD,
    )
    prompts = TeamsPrompts(
        "hierarchical_teams",
        tuned={
            "lead": "hierarchical_teams/plan",
            "team supervisor": "hierarchical_teams/team_supervisor",
        },
        forked={
            "lead replan": "hierarchical_teams/replan",
            "lead routing": "hierarchical_teams/route",
            **{name: f"hierarchical_teams/{name}" for name in AGENTS},
        },
        nodes=frozenset(AGENTS) | {LEAD},
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
            **first_turn(question, design, self.shape.entry),
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
        rows = [r.as_dict() for r in self.step_rows(state)]
        plans = list(state.get("plans") or [])
        return {
            "system": self.name,
            "rows": rows,
            "counts": {"steps": len(rows), "replans": max(0, len(plans) - 1)},
            "request": state.get("request"),
            "request_id": state.get("request_id"),
            "request_revision": state.get("request_revision") or 0,
            "edits": list(state.get("edits") or []),
            "plans": plans,
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


def _checked(found: JsonAsk | str) -> JsonAsk:
    """A request the state was found to send (``node_ask`` checked it): built again with
    the texts tried."""
    if isinstance(found, str):
        raise NotTryable(found)
    return found


SYSTEM = HierarchicalTeams()
