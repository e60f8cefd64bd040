"""What a design sets for plan_execute: its replan cap and what happens at it. The Design
page draws these fields (title, help, bounds) as they are declared here."""

from __future__ import annotations

from pydantic import Field

from graph.kernel.system import SystemSettings
from graph.settings import get_settings


def _default_max_replans() -> int:
    return get_settings().max_replans  # STEPWISE_MAX_REPLANS


class PlanSettings(SystemSettings):
    max_replans: int = Field(
        default_factory=_default_max_replans,
        ge=0,
        le=20,
        title="Max replans per step",
        description="How many times the Executor may send one step back to the Planner "
        "before moving on (the step is then marked skipped).",
        json_schema_extra={"step": 1},
    )
    escalate_at_cap: bool = Field(
        True,
        title="Ask a human when a step reaches its replan cap",
        description="Off: the step is skipped and the run moves on.",
        json_schema_extra={"section": "approvals"},
    )
