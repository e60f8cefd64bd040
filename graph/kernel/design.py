"""A design: which hosted system, which agents are on, the run settings and prompt overrides.

The Design page edits one, the store keeps it, a run records the one it ran with.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, TypeVar

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from graph.agents.user_agents import UserAgent, name_problem
from graph.errors import StepwiseError
from graph.kernel.hooks import HookRule
from graph.kernel.system import SystemSettings, default_system, get_system, systems
from graph.models.choice import ModelChoice
from graph.settings import get_settings

ApprovalPolicy = Literal["always", "never", "planner"]


class DesignError(StepwiseError, ValueError):
    """A design that cannot be built; the message names what is wrong."""


M = TypeVar("M", bound=SystemSettings)


def _default_recursion_limit() -> int:
    return get_settings().recursion_limit


def _all_agents(data: dict) -> list[str]:
    return list(get_system(data.get("system") or default_system()).agents)


class Design(BaseModel):
    system: str = Field(default_factory=default_system)  # the first hosted system
    # Agents defined in the browser that this design knows (ticked or not): their whole
    # definitions, so an exported design or one run from the command line brings them.
    user_agents: list[UserAgent] = Field(default_factory=list)
    enabled_agents: list[str] = Field(default_factory=_all_agents)  # default: every agent
    # Steps (plan steps, subtasks, bus rounds) one invocation may take: ``node_run_limit``.
    recursion_limit: int = Field(default_factory=_default_recursion_limit, ge=5, le=10_000)
    prompts: dict[str, str] = Field(default_factory=dict)  # prompt name -> overriding text
    # Human approval, per agent: "always" ask, "never" ask, or ask when the "planner"
    # flags the step. Agents missing here get their default (see approval_policy).
    approvals: dict[str, ApprovalPolicy] = Field(default_factory=dict)
    # Seconds each node's result stays on screen before the next node starts (0: as fast
    # as possible): a class can follow a run on a fast model. Pauses count as waiting,
    # not work.
    pace_s: float = Field(0.0, ge=0, le=10)
    approval_timeout_s: float = Field(600.0, ge=0)  # 0: wait for ever
    # Who answers the approval gate: a person ("human", the Design page's way), or the
    # experiment running this design ("experiment": read-only steps approved,
    # side-effecting ones not performed, nothing waits). Set by experiments only.
    approvals_by: Literal["human", "experiment"] = "human"
    # The model its runs use instead of the configured one (an experiment's model variant);
    # None: the model settings in use. An endpoint and a model name, never a key.
    model: ModelChoice | None = None
    timeout_action: Literal["reject", "skip"] = "reject"
    # Each system's own settings, by system name, as its ``settings_model`` checks them
    # (``settings_of``): {"plan_execute": {"max_replans": 3, ...}}. The design's system's
    # are filled in with their defaults; other systems' kept for switching back.
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict, validate_default=True)
    # For any system (docs/systems/conversations.md): every new user message goes to the guardrail agent first
    # (patterns and scope; plus a model classifier with its own prompt when switched on).
    guardrail: bool = False
    guardrail_classifier: bool = False
    hooks: list[HookRule] = Field(default_factory=list)  # before_run / after / fallback rules

    def settings_of(self, model: type[M]) -> M:
        """The settings ``model`` (a system's ``settings_model``) reads from this design:
        the design's system's, or else those of the system that model belongs to.
        DesignError names the system and the field of a bad value."""
        name = self.system
        if get_system(name).settings_model is not model:
            owners = [n for n, s in systems().items() if s.settings_model is model]
            if not owners:
                raise LookupError(f"{model.__name__} is no hosted system's settings model.")
            name = owners[0]
        return _checked(name, model, self.settings.get(name, {}))

    def approval_policy(self, agent: str) -> ApprovalPolicy:
        """Side-effecting agents always ask unless the design says otherwise."""
        if agent in self.approvals:
            return self.approvals[agent]
        spec = get_system(self.system).agents.get(agent)
        return "always" if spec is not None and spec.side_effects else "planner"

    @model_validator(mode="before")
    @classmethod
    def _old_fields(cls, data: Any) -> Any:
        """A design stored, exported or typed before systems owned their settings had
        them at the top (``max_replans``, ``escalate_at_cap``, ``bus_timeout_s``): each
        goes to the settings of every system whose model has that field, unless the
        design sets it there already."""
        given = data.get("settings") or {} if isinstance(data, dict) else None
        if not isinstance(given, dict) or not all(isinstance(v, dict) for v in given.values()):
            return data  # not a design: the fields' own checks say what is wrong
        old = {k: v for k, v in data.items() if k not in cls.model_fields}
        if not old:
            return data
        settings = {n: dict(v) for n, v in given.items()}
        moved = set()
        for name, system in systems().items():
            for key in old.keys() & system.settings_model.model_fields.keys():
                settings.setdefault(name, {}).setdefault(key, old[key])
                moved.add(key)
        return {k: v for k, v in data.items() if k not in moved} | {"settings": settings}

    @field_validator("system")
    @classmethod
    def _known_system(cls, value: str) -> str:
        get_system(value)  # ValueError naming the known systems
        return value

    @field_validator("user_agents")
    @classmethod
    def _user_agent_names(cls, value: list[UserAgent], info: ValidationInfo) -> list[UserAgent]:
        """Unique, and none named like a built-in agent or node of any system."""
        seen: list[str] = []
        for agent in value:
            if problem := name_problem(agent.name, seen, reserved_names()):
                raise ValueError(problem)
            seen.append(agent.name)
        if value and not takes_user_agents(info.data.get("system") or ""):
            those = ", ".join(takes_user_agents_list()) or "none"
            raise ValueError(
                f"{info.data.get('system')} does not take user agents; those that do: {those}."
            )
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

    @field_validator("settings")
    @classmethod
    def _checked_settings(cls, value: dict, info: ValidationInfo) -> dict:
        """Each hosted system's settings checked and completed by its model; a system not
        hosted here keeps what it had."""
        hosted = systems()
        found = dict(value)
        if info.data.get("system") in hosted:
            found.setdefault(info.data["system"], {})
        for name, data in found.items():
            if name in hosted:
                model = hosted[name].settings_model
                found[name] = _checked(name, model, data).model_dump(mode="json")
        return found


def node_run_limit(design: Design) -> int:
    """The recursion limit LangGraph is given for one invocation of ``design``'s graph:
    the design's ``recursion_limit`` counts steps (plan steps, subtasks, bus rounds), each
    worth its system's ``node_runs_per_step`` node runs. A plan of 60 steps fits the default
    60; a loop that keeps adding work still meets the limit and ends the run with a reason."""
    return design.recursion_limit * get_system(design.system).shape.node_runs_per_step


def limit_words(design: Design) -> str:
    """The limit as a run's reason names it: "60 steps: 180 node runs"."""
    return f"{design.recursion_limit} steps: {node_run_limit(design)} node runs"


def _checked(name: str, model: type[M], data: Any) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "settings"
        if first["type"] == "extra_forbidden":
            known = ", ".join(model.model_fields) or "none"
            raise DesignError(f"{name} has no setting {field!r} (its settings: {known}).") from None
        title = model.model_fields[field].title if field in model.model_fields else None
        shown = f"{field} ({title})" if title else field
        raise DesignError(f"{name} setting {shown}: {first['msg']}") from None


def _catalog(info: ValidationInfo) -> Mapping[str, Any]:
    """The agent catalog of the design's system (the first system's if it was invalid),
    then the design's user agents."""
    name = info.data.get("system") or default_system()
    own: Mapping[str, Any] = get_system(name if name in systems() else default_system()).agents
    return {**own, **{a.name: a for a in info.data.get("user_agents") or []}}


def takes_user_agents(system: str) -> bool:
    """Whether ``system``'s graph takes user agents as workers (README, "Your own agents")."""
    return system in systems() and get_system(system).shape.takes_user_agents


def takes_user_agents_list() -> list[str]:
    return [name for name, system in systems().items() if system.shape.takes_user_agents]


def reserved_names() -> set[str]:
    """Names a user agent cannot take: every system's agents, hubs and entry nodes."""
    found = {"human", "end", "planner", "executor", "supervisor", "__end__", "__start__"}
    found |= {"user", "all"}  # on a bus: who asks the question, where decisions are addressed
    for system in systems().values():
        found |= set(system.agents) | set(system.shape.hubs) | {system.shape.entry}
    return found


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
