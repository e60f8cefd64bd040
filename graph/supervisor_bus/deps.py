"""What the nodes of supervisor_bus need besides the state, built once per compiled graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from graph.agents.user_agents import UserAgent, define
from graph.kernel.built_once import BuiltOnce
from graph.kernel.design import Design
from graph.kernel.ledger import SideEffectLedger, side_effect_ledger
from graph.models.chat import role_models
from graph.prompts import PromptSet
from graph.settings import Settings, get_settings
from graph.supervisor_bus.agents import enabled_specs
from graph.supervisor_bus.settings_model import BusSettings
from graph.tools.knowledge import KnowledgeBase, default_knowledge_base


@dataclass
class Deps:
    settings: Settings
    supervisor_model: BaseChatModel
    worker_model: BaseChatModel
    prompts: PromptSet
    knowledge: KnowledgeBase
    ledger: SideEffectLedger  # side effects already carried out, keyed by message id
    drafts_dir: Path
    enabled: list[str]
    nodes: frozenset[str]  # the nodes of this compiled graph: every goto is checked against it
    timeout_s: float  # how long a request may wait for its answer
    max_rounds: int  # supervisor decisions before the run is stopped as stuck
    approvals: dict[str, str] = field(default_factory=dict)  # agent -> always/never/planner
    built: BuiltOnce = field(default_factory=BuiltOnce)  # tools holding no run data
    # The design's user agents by name: the enabled ones are workers of this graph.
    user_agents: dict[str, UserAgent] = field(default_factory=dict)


def max_rounds(enabled: list[str]) -> int:
    """Supervisor decisions before a run is stopped as stuck."""
    return 4 * len(enabled) + 4


def make_deps(
    design: Design,
    *,
    settings: Settings | None = None,
    planner_model: BaseChatModel | None = None,
    worker_model: BaseChatModel | None = None,
) -> Deps:
    """What the nodes of one compiled graph share: models, prompts, tools, limits."""
    settings = settings or get_settings()
    define(design.user_agents)  # the supervisor's prompt reads their descriptions by name
    enabled = [s.name for s in enabled_specs(design.enabled_agents)]
    prompts = PromptSet(design.prompts)
    supervisor, worker = role_models(settings, prompts, planner_model, worker_model)
    return Deps(
        settings=settings,
        supervisor_model=supervisor,
        worker_model=worker,
        prompts=prompts,
        knowledge=default_knowledge_base(),
        ledger=side_effect_ledger(settings),
        drafts_dir=settings.home / "drafts",
        enabled=enabled,
        nodes=frozenset({"supervisor", "human", *enabled}),
        timeout_s=design.settings_of(BusSettings).bus_timeout_s,
        max_rounds=max_rounds(enabled),
        approvals={a: design.approval_policy(a) for a in enabled},
        user_agents={a.name: a for a in design.user_agents},
    )
