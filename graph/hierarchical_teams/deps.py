"""What the nodes of hierarchical_teams need besides the state, built once per compiled graph."""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from graph.kernel.built_once import BuiltOnce
from graph.kernel.ledger import SideEffectLedger
from graph.prompts import PromptSet
from graph.settings import Settings


@dataclass
class Deps:
    settings: Settings
    lead_model: BaseChatModel  # the lead supervisor
    worker_model: BaseChatModel  # team supervisors and workers
    prompts: PromptSet
    ledger: SideEffectLedger  # HTTP calls already made, keyed by run and subtask
    enabled: list[str]  # enabled workers
    teams: list[str]  # teams that are on
    nodes: frozenset[str]  # the top graph's nodes: every goto is checked against it
    max_dispatches: int  # lead dispatches beyond one per subtask before it stops as stuck
    approvals: dict[str, str] = field(default_factory=dict)  # worker -> always/never/planner
    built: BuiltOnce = field(default_factory=BuiltOnce)  # workers' tools (they hold no run data)
