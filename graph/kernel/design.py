"""A design: which hosted system, which agents are on, the run settings and prompt overrides.

The Design page edits one, the store keeps it, a run records the one it ran with.
"""

from __future__ import annotations

from typing import Literal, Mapping

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from graph.errors import StepwiseError
from graph.kernel.hooks import HookRule
from graph.kernel.system import AgentSpec, default_system, get_system, systems
from graph.models.choice import ModelChoice
from graph.settings import get_settings

ApprovalPolicy = Literal["always", "never", "planner"]


class DesignError(StepwiseError, ValueError):
    """A design that cannot be built; the message names what is wrong."""


def _default_max_replans() -> int:
    return get_settings().max_replans


def _default_recursion_limit() -> int:
    return get_settings().recursion_limit


def _default_bus_timeout() -> float:
    return get_settings().bus_timeout_s


def _all_agents(data: dict) -> list[str]:
    return list(get_system(data.get("system") or default_system()).agents)


class Design(BaseModel):
    system: str = Field(default_factory=default_system)  # the first hosted system
    enabled_agents: list[str] = Field(default_factory=_all_agents)  # default: every agent
    max_replans: int = Field(default_factory=_default_max_replans, ge=0, le=20)
    recursion_limit: int = Field(default_factory=_default_recursion_limit, ge=5, le=10_000)
    prompts: dict[str, str] = Field(default_factory=dict)  # prompt name -> overriding text
    # Human approval, per agent: "always" ask, "never" ask, or ask when the "planner"
    # flags the step. Agents missing here get their default (see approval_policy).
    approvals: dict[str, ApprovalPolicy] = Field(default_factory=dict)
    # Seconds each node's result stays on screen before the next node starts (0: as fast
    # as possible): a class can follow a run on a fast model. Pauses count as waiting,
    # not work.
    pace_s: float = Field(0.0, ge=0, le=10)
    escalate_at_cap: bool = True  # a step at its replan cap asks a human instead of moving on
    approval_timeout_s: float = Field(600.0, ge=0)  # 0: wait for ever
    # Who answers the approval gate: a person ("human", the Design page's way), or the
    # experiment running this design ("experiment": read-only steps approved,
    # side-effecting ones not performed, nothing waits). Set by experiments only.
    approvals_by: Literal["human", "experiment"] = "human"
    # The model its runs use instead of the configured one (an experiment's model variant);
    # None: the model settings in use. An endpoint and a model name, never a key.
    model: ModelChoice | None = None
    timeout_action: Literal["reject", "skip"] = "reject"
    # A message bus's request timeout: how long a request may wait for its answer before it
    # is escalated (a system's ``settings`` say which of these fields it reads).
    bus_timeout_s: float = Field(default_factory=_default_bus_timeout, gt=0, le=86_400)
    # For any system (docs/systems/conversations.md): every new user message goes to the guardrail agent first
    # (patterns and scope; plus a model classifier with its own prompt when switched on).
    guardrail: bool = False
    guardrail_classifier: bool = False
    hooks: list[HookRule] = Field(default_factory=list)  # before_run / after / fallback rules

    def approval_policy(self, agent: str) -> ApprovalPolicy:
        """Side-effecting agents always ask unless the design says otherwise."""
        if agent in self.approvals:
            return self.approvals[agent]
        spec = get_system(self.system).agents.get(agent)
        return "always" if spec is not None and spec.side_effects else "planner"

    @field_validator("system")
    @classmethod
    def _known_system(cls, value: str) -> str:
        get_system(value)  # ValueError naming the known systems
        return value

    @field_validator("enabled_agents")
    @classmethod
    def _known_agents(cls, value: list[str], info: ValidationInfo) -> list[str]:
        catalog = _catalog(info)
        if unknown := [a for a in value if a not in catalog]:
            raise ValueError(f"unknown agent(s): {', '.join(unknown)}; known: {', '.join(catalog)}")
        return [a for a in catalog if a in value]  # catalog order, no duplicates

    @field_validator("approvals")
    @classmethod
    def _known_approval_agents(cls, value: dict, info: ValidationInfo) -> dict:
        if unknown := [a for a in value if a not in _catalog(info)]:
            raise ValueError(f"approval policy for unknown agent(s): {', '.join(unknown)}")
        return value


def _catalog(info: ValidationInfo) -> Mapping[str, AgentSpec]:
    """The agent catalog of the design's system (the first system's if it was invalid)."""
    name = info.data.get("system") or default_system()
    return get_system(name if name in systems() else default_system()).agents


DESIGN_FORMAT = "stepwise-design"


def export_design(design: Design) -> dict:
    """A design as a JSON-ready document: agents, settings, prompt texts (no keys exist
    in a design, so none can leak)."""
    return {"format": DESIGN_FORMAT, "version": 1, "design": design.model_dump(mode="json")}


def import_design(data: dict) -> Design:
    """The design in an exported document; DesignError says what is wrong with it."""
    if not isinstance(data, dict) or data.get("format") != DESIGN_FORMAT:
        raise DesignError(f'Not a Stepwise design file (its "format" is not {DESIGN_FORMAT!r}).')
    from graph.prompts import PromptError, PromptSet

    try:
        design = Design.model_validate(data.get("design") or {})
        PromptSet(design.prompts)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "design"
        raise DesignError(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None
    except PromptError as exc:
        raise DesignError(str(exc)) from None
    return design
