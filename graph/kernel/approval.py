"""The approval gate every system uses: the run pauses at ``interrupt()`` (persisted by the
checkpointer, so it survives a restart) until a person, or the design's timeout, decides.

A decision is ``approve``, ``edit`` (approve with another query), ``reject`` (with a
reason), ``skip``, or ``retry`` (an escalation). A resume value that is not a decision
never crashes the run and is never taken for one: the node asks again.
"""

from __future__ import annotations

from langgraph.types import Command, interrupt
from pydantic import BaseModel, Field

DECISIONS = ("approve", "edit", "reject", "skip", "retry")


class HumanDecision(BaseModel):
    decision: str = Field(pattern="^(" + "|".join(DECISIONS) + ")$")
    query: str = ""
    reason: str = ""
    by: str = "human"  # "human", or "timeout" when the default was applied


def ask_human(request: dict, node: str) -> HumanDecision | Command:
    """Pause with ``request`` (what the Approvals page lists) until a decision comes in.
    A malformed answer returns a Command that runs ``node`` (the asking node) again, so
    the same question is asked anew, with a notice."""
    answer = interrupt(request)
    try:
        return HumanDecision.model_validate(answer)
    except Exception:
        return Command(
            update={"notices": [f"Unusable decision {answer!r}; asking again."]}, goto=node
        )
