"""The approval gate every system uses: the run pauses at ``interrupt()`` (persisted by the
checkpointer, so it survives a restart) until a person, or the design's timeout, decides.

A decision is ``approve``, ``edit`` (approve with another query), ``reject`` (with a
reason), ``skip``, or ``retry`` (an escalation). A resume value that is not a decision
never crashes the run and is never taken for one: the node asks again.

An experiment may decide its runs' approvals itself, so none waits for a person: the run
is given the side-effecting agents under ``AUTOMATIC`` in its LangGraph config, and the
gate answers at once (read-only steps approved; side-effecting ones, and escalations,
skipped), recording who decided and why like any decision.
"""

from __future__ import annotations

from langgraph.config import get_config
from langgraph.types import Command, interrupt
from pydantic import BaseModel, Field, ValidationError

DECISIONS = ("approve", "edit", "reject", "skip", "retry")


class HumanDecision(BaseModel):
    decision: str = Field(pattern="^(" + "|".join(DECISIONS) + ")$")
    query: str = ""
    reason: str = ""
    # "human" (single-user, the CLI), a signed-in person's e-mail, "timeout" when the
    # default was applied, or "experiment"
    by: str = "human"


# Config key (``configurable``) naming the side-effecting agents when an experiment
# decides its runs' approvals; absent, a person (or the design's timeout) decides.
AUTOMATIC = "stepwise_automatic_approvals"
NOT_PERFORMED = "not performed (experiment decides automatically)"
APPROVED = "read-only step approved (experiment decides automatically)"
MOVED_ON = "moved on without a person (experiment decides automatically)"


def decided_by_words(by: str) -> str:
    """Who decided, at the start of the line a run records for a decision."""
    if by == "timeout":
        return "The approval timed out; applied the default"
    if by == "experiment":
        return "The experiment decided automatically"
    return "Human" if by in ("human", "") else by  # a signed-in person: their e-mail


def automatic_decision(request: dict) -> HumanDecision | None:
    """The experiment's own answer to ``request``, or None when a person decides."""
    try:
        side_effecting = (get_config().get("configurable") or {}).get(AUTOMATIC)
    except RuntimeError:  # not inside a run
        return None
    if side_effecting is None:
        return None
    if request.get("kind") == "escalation":
        return HumanDecision(decision="skip", reason=MOVED_ON, by="experiment")
    if request.get("agent") in side_effecting:
        return HumanDecision(decision="skip", reason=NOT_PERFORMED, by="experiment")
    return HumanDecision(decision="approve", reason=APPROVED, by="experiment")


def ask_human(request: dict, node: str) -> HumanDecision | Command:
    """Pause with ``request`` (what the Approvals page lists) until a decision comes in.
    A malformed answer returns a Command that runs ``node`` (the asking node) again, so
    the same question is asked anew, with a notice. A run whose experiment decides
    its approvals gets the experiment's answer without pausing."""
    if (decided := automatic_decision(request)) is not None:
        return decided
    answer = interrupt(request)
    try:
        return HumanDecision.model_validate(answer)
    except ValidationError:
        return Command(
            update={"notices": [f"Unusable decision {answer!r}; asking again."]}, goto=node
        )
