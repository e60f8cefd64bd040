"""A design: which hosted system, which agents are on, the run settings and prompt overrides.

The Design page edits one, the store keeps it, a run records the one it ran with.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from graph.plan_execute.agents import AGENT_NAMES, unknown_agents
from graph.settings import get_settings


class DesignError(ValueError):
    """A design that cannot be built; the message names what is wrong."""


def _default_max_replans() -> int:
    return get_settings().max_replans


def _default_recursion_limit() -> int:
    return get_settings().recursion_limit


class Design(BaseModel):
    system: Literal["plan_execute"] = "plan_execute"
    enabled_agents: list[str] = Field(default_factory=lambda: list(AGENT_NAMES))
    max_replans: int = Field(default_factory=_default_max_replans, ge=0, le=20)
    recursion_limit: int = Field(default_factory=_default_recursion_limit, ge=5, le=10_000)
    prompts: dict[str, str] = Field(default_factory=dict)  # prompt name -> overriding text

    @field_validator("enabled_agents")
    @classmethod
    def _known_agents(cls, value: list[str]) -> list[str]:
        if unknown := unknown_agents(value):
            raise ValueError(f"unknown agent(s): {', '.join(unknown)}; "
                             f"known: {', '.join(AGENT_NAMES)}")
        return [a for a in AGENT_NAMES if a in value]  # catalog order, no duplicates
