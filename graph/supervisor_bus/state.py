"""The shared memory of the supervisor_bus system (docs/systems/supervisor_bus.md), every key declared.

Agents coordinate through one append-only channel of typed messages, ``bus``; no
agent reads another agent's output field or writes into it. Every field below has
exactly one writer (named in its comment), except the two reducer channels every
agent appends to: ``bus`` (``operator.add``) and ``completed_agents`` (``operator.or_``),
so two agents writing in one parallel step merge instead of raising.

The bus is called ``bus`` and not ``messages`` because ``messages`` already means,
across Stepwise, the model conversations (prompts, replies, tool calls) the Run page
shows per step; those stay in ``messages`` here too.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, Literal, Optional

from langgraph.graph import MessagesState
from pydantic import BaseModel, ConfigDict, Field

from graph.kernel.conversation import ConversationState
from graph.kernel.reducers import merge_dicts

MessageType = Literal["request", "result", "error", "status"]


class Message(BaseModel):
    """One typed message on the bus (the source design's ``Message``), plus two envelope fields:
    when it was sent, and which request it answers (so the supervisor can match answers
    to its registry of outstanding requests without reading payloads)."""

    model_config = ConfigDict(frozen=True)

    id: str
    from_: str
    to: str
    type: MessageType
    payload: dict[str, Any] = Field(default_factory=dict)
    sent_at: float = Field(default_factory=time.time)
    in_reply_to: Optional[str] = None


# The custom types in this state, for the checkpoint serializer's allowlist.
STATE_TYPES = ((__name__, "Message"),)


# Each agent's inbox bookkeeping: the ids it has consumed, written by that agent only.
# (``planner``: the teaching bus's, graph/supervisor_bus/teaching.py.)
OWN_INBOXES = frozenset({"supervisor", "human", "researcher", "writer", "reviewer", "planner"})
# The user agents of a design are not known when the state is declared (an undeclared key
# would be dropped): they share one field. A message has one addressee, so the ids in it
# still say which agent consumed what.
USER_AGENTS_CONSUMED = "user_agents_consumed"


def consumed_field(agent: str) -> str:
    return f"{agent}_consumed" if agent in OWN_INBOXES else USER_AGENTS_CONSUMED


class BusState(MessagesState, ConversationState):
    """The source design's AgentState (docs/systems/supervisor_bus.md) and SupervisorState, plus what the Run page shows."""

    # The source design's fields.
    bus: Annotated[list[Message], operator.add]  # every agent appends; nobody rewrites
    session_id: str  # set once by initial_state; message ids are derived from it
    completed_agents: Annotated[set[str], operator.or_]  # a worker adds itself on a result

    # The supervisor's fields.
    outstanding: dict[str, float]  # request id -> sent_at: requests waiting for an answer
    escalated: Annotated[set[str], operator.or_]  # request ids handed to a human, ever
    dead_letters: Annotated[dict[str, dict[str, Any]], merge_dicts]  # request id -> record
    decisions: Annotated[list[dict[str, Any]], operator.add]  # every routing decision
    current_step: int  # the supervisor's round: one per decision
    final_answer: Optional[str]
    outcome: Optional[str]  # "done" or "failed"
    outcome_reason: Optional[str]
    notices: Annotated[list[str], operator.add]  # engine notes (repairs, guards that fired)

    # Inboxes: consumed message ids, one field per agent, each written by its agent only.
    supervisor_consumed: Annotated[list[str], operator.add]
    human_consumed: Annotated[list[str], operator.add]
    researcher_consumed: Annotated[list[str], operator.add]
    writer_consumed: Annotated[list[str], operator.add]
    reviewer_consumed: Annotated[list[str], operator.add]
    user_agents_consumed: Annotated[list[str], operator.add]  # every user agent's (above)

    # The human node's field: every decision a person (or the timeout) took.
    approvals: Annotated[list[dict[str, Any]], operator.add]

    # Set once by initial_state.
    user_query: Optional[str]
    enabled_agents: Optional[list[str]]
    timeout_s: float  # how long a request may wait for its answer
    # Where on the bus the current conversation turn began (a follow-up message starts a
    # turn): who answered and what the answer is are read from there on.
    turn_start: int
