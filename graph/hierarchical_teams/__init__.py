"""hierarchical_teams (seeds 002, 004): a lead supervisor over teams of workers.

The lead supervisor turns one multi-intent request into a structured plan of
subtasks, one team each, and dispatches them; each team is a subgraph with its own
supervisor and workers that sees only its own subtask. The human can edit the request
mid-run (``edit_request``): the lead replans, keeping finished work and cancelling
stale subtasks explicitly.

The surface every hosted system offers: ``build_graph``, ``initial_state``,
``snapshot`` and ``step_rows``.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.hierarchical_teams.agents import AGENTS, TEAMS, enabled_teams
from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.lead import fold_results, lead_supervisor_node
from graph.hierarchical_teams.state import TeamsState
from graph.hierarchical_teams.teams import build_team
from graph.conversation import first_turn, wire
from graph.models.chat import make_chat_model
from graph.plan_execute import side_effect_ledger
from graph.prompts import PromptSet
from graph.settings import Settings, get_settings

if TYPE_CHECKING:
    from graph.design import Design

SYSTEM = "hierarchical_teams"
LEAD = "lead_supervisor"
ENTRY = LEAD  # where a conversation turn starts
TIMELINE_FIELDS = ("request", "request_revision", "subtasks_planned", "subtasks",
                   "current_subtask_id", "current_instruction", "team_results", "final_answer")


def build_graph(design: Design | None = None, *, settings: Settings | None = None,
                checkpointer=None, planner_model=None, worker_model=None) -> CompiledStateGraph:
    """Compile the top graph: the lead supervisor, and one subgraph node per team that is
    on (``planner_model`` is the lead's model, ``worker_model`` the teams')."""
    from graph.design import Design

    design = design or Design(system=SYSTEM)
    settings = settings or get_settings()
    enabled = [a for a in AGENTS if a in design.enabled_agents]
    teams = enabled_teams(enabled)
    prompts = PromptSet(design.prompts)
    deps = Deps(settings=settings,
                lead_model=planner_model or make_chat_model("planner", settings, prompts=prompts),
                worker_model=worker_model or make_chat_model("worker", settings, prompts=prompts),
                prompts=prompts, ledger=side_effect_ledger(settings.home),
                enabled=enabled, teams=teams, nodes=frozenset({LEAD, *teams}),
                max_dispatches=max(8, 4 * len(AGENTS)),
                approvals={a: design.approval_policy(a) for a in enabled})
    builder = StateGraph(TeamsState)
    builder.add_node(LEAD, partial(lead_supervisor_node, deps=deps), destinations=(*teams, END))
    for team in teams:
        builder.add_node(team, build_team(team, deps))
        builder.add_edge(team, LEAD)
    builder.add_edge(START, LEAD)
    wire(builder, design, system=SYSTEM, entry=ENTRY, model=deps.lead_model,
         prompts=deps.prompts, settings=deps.settings)
    from graph.runs import memory_checkpointer  # graph.runs imports the systems

    return builder.compile(checkpointer=checkpointer if checkpointer is not None
                           else memory_checkpointer(), name=SYSTEM)


def initial_state(question: str, design: Design) -> dict:
    from langchain_core.messages import HumanMessage

    request_id = "r-" + uuid.uuid4().hex[:8]
    return {"messages": [HumanMessage(content=question, name="user", id=request_id)],
            "request": question, "request_id": request_id, "request_revision": 0,
            "user_query": question, "session_id": uuid.uuid4().hex,
            "enabled_agents": list(design.enabled_agents), "subtasks": [],
            "subtasks_planned": False, "next_subtask_number": 1, "current_step": 0,
            "team_results": {}, **first_turn(question, design)}


def new_turn(state: dict, text: str, design: Design) -> dict:
    """A follow-up message is a new request with a plan of its own: the earlier turn's
    subtasks are finished (its answer is kept on its turn, its plans in ``plans``), ids
    go on counting, so no subtask id is ever reused in a run."""
    return {"request": text, "request_id": "r-" + uuid.uuid4().hex[:8],
            "request_revision": 0, "user_query": text, "subtasks": [],
            "subtasks_planned": False, "current_step": 0, "final_answer": None,
            "outcome": None, "outcome_reason": None}


def edit_request(state: dict, text: str) -> dict:
    """The state update for a request the human edited mid-run: the new text under a new
    message id, one revision more, and a plan to revise (the lead supervisor replans on
    its next entry, keeping finished work)."""
    from langchain_core.messages import HumanMessage

    text = (text or "").strip()
    if not text:
        raise ValueError("The edited request is empty.")
    if text == (state.get("request") or "").strip():
        raise ValueError("The request is unchanged: edit its text first.")
    revision = int(state.get("request_revision") or 0) + 1
    request_id = "r-" + uuid.uuid4().hex[:8]
    return {"request": text, "request_id": request_id, "request_revision": revision,
            "subtasks_planned": False, "outcome": None, "outcome_reason": None,
            "final_answer": None,
            "edits": [{"revision": revision, "request_id": request_id, "text": text,
                       "previous": state.get("request") or "", "at": time.time()}],
            "messages": [HumanMessage(content=text, name="user", id=request_id,
                                      response_metadata={"agent": "user", "step": None})]}


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


def subtasks_now(state: dict) -> list[dict]:
    """The subtasks with the teams' outcomes applied (a team hands back before the lead
    supervisor folds its outcome in)."""
    return fold_results(state)


def step_rows(state: dict, durations: dict | None = None) -> list[SubtaskRow]:
    revisions = {e["request_id"]: e["revision"] for e in state.get("edits") or []}
    now = time.time()
    rows = []
    for s in subtasks_now(state):
        start, end = s.get("started_at"), s.get("ended_at")
        duration = round((end or now) - start, 2) if start else None
        rows.append(SubtaskRow(s["id"], s["team"], s["instruction"], s["status"],
                               list(s.get("depends_on") or []), s.get("result") or "",
                               s.get("reason") or "", revisions.get(s.get("request_id"), 0),
                               duration))
    return rows


def snapshot(state: dict, now: float | None = None) -> dict:
    """What the Run page shows of a state, small and JSON-safe: the subtask table, the
    plans, the lead's dispatches, the teams' inner steps, approvals and the answer."""
    return {
        "system": SYSTEM,
        "rows": [r.as_dict() for r in step_rows(state)],
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
