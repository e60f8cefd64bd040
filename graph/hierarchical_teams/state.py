"""The shared memory of hierarchical_teams (docs/systems/hierarchical_teams.md), every key declared.

One writer per field where possible: the lead supervisor writes the plan
(``subtasks``, ``plans``) and what it dispatches (``current_*``); each team writes
only its own outcome, into ``team_results`` keyed by the subtask id, and its inner
steps; an edit of the request (``edit_request``) writes ``request*`` and clears
``subtasks_planned``. Subtasks are plain dicts, so checkpoints hold no custom types:

    {id, team, instruction, status, depends_on, request_id, result, reason,
     started_at, ended_at}

status: pending → delegated → done / failed / cancelled.

A team is a subgraph with its own state (``TeamState``): its input is only the
subtask's id, instruction and the results it depends on (``TeamInput``), never the
request or the other subtasks, and it hands back only its outcome (``TeamOutput``).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Optional

from langgraph.graph import MessagesState
from typing_extensions import TypedDict

from graph.kernel.conversation import ConversationState
from graph.kernel.reducers import merge_dicts

STATUSES = ("pending", "delegated", "done", "failed", "cancelled")
ENDED = ("done", "failed", "cancelled")


class TeamsState(MessagesState, ConversationState):
    # The human's request: its current text, the id of the message it is (a new id per
    # edit) and how many times it was edited. Written by initial_state / edit_request.
    request: str
    request_id: str
    request_revision: int
    edits: Annotated[list[dict[str, Any]], operator.add]  # every edit: revision, id, text, at
    session_id: str  # set once: the run's own id (copied by forks), scoping side effects

    # The lead supervisor's fields.
    subtasks: list[dict[str, Any]]
    subtasks_planned: bool
    plans: Annotated[list[dict[str, Any]], operator.add]  # every plan object, append-only
    next_subtask_number: int  # ids are s1, s2, ... in the order subtasks are created
    routing: Annotated[list[dict[str, Any]], operator.add]  # every dispatch decision
    current_subtask_id: Optional[str]
    current_team: Optional[str]
    current_instruction: Optional[str]
    current_inputs: list[dict[str, Any]]  # results of the subtasks it depends on
    current_call_scope: Optional[str]  # the session id: HTTP calls are keyed under it
    current_step: int  # dispatches so far
    final_answer: Optional[str]
    outcome: Optional[str]  # "done" or "failed" (a blocked run fails, saying it is blocked)
    outcome_reason: Optional[str]

    # The teams' fields: each writes its own subtask's entry and appends its steps.
    team_results: Annotated[dict[str, dict[str, Any]], merge_dicts]
    team_steps: Annotated[list[dict[str, Any]], operator.add]
    approvals: Annotated[list[dict[str, Any]], operator.add]

    notices: Annotated[list[str], operator.add]  # engine notes (repairs, guards that fired)

    # Set once by initial_state.
    user_query: Optional[str]  # the request as first asked
    enabled_agents: Optional[list[str]]


class TeamInput(TypedDict):
    """All a team receives: its subtask, and the results of what it depends on."""

    current_subtask_id: str
    current_team: str
    current_instruction: str
    current_inputs: list[dict[str, Any]]
    current_call_scope: str
    current_step: int


class TeamOutput(MessagesState):
    """All a team hands back: its outcome and what happened inside it."""

    team_results: Annotated[dict[str, dict[str, Any]], merge_dicts]
    team_steps: Annotated[list[dict[str, Any]], operator.add]
    approvals: Annotated[list[dict[str, Any]], operator.add]
    notices: Annotated[list[str], operator.add]


class TeamState(TeamOutput, TeamInput):
    """A team's working state: its input, its workers' reports, the call waiting for
    approval, and how many routing rounds its supervisor took."""

    reports: Annotated[list[dict[str, Any]], operator.add]  # {worker, task, text, ok, ...}
    worker_task: Optional[str]  # what the team supervisor asked the worker to do
    proposed_call: Optional[dict[str, Any]]  # {worker, method, url, body}: awaiting the gate
    team_round: int
