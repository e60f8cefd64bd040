"""What the nodes need besides the state: models, prompt texts, tools and limits.

Built once per compiled graph and bound into each node, so nodes stay plain
functions of (state, deps) and tests can hand in their own models or data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from graph.kernel.built_once import BuiltOnce
from graph.kernel.ledger import SideEffectLedger
from graph.prompts import PromptSet
from graph.settings import Settings
from graph.tools.database import StockDatabase
from graph.tools.knowledge import KnowledgeBase


@dataclass
class Deps:
    settings: Settings
    planner_model: BaseChatModel  # Planner and Executor
    worker_model: BaseChatModel  # the sub-agents
    prompts: PromptSet
    knowledge: KnowledgeBase
    database: StockDatabase
    enabled: list[str]
    max_replans: int
    nodes: frozenset[str]  # the nodes of this compiled graph: every goto is checked against it
    approvals: dict[str, str] = field(default_factory=dict)  # agent -> always/never/planner
    escalate_at_cap: bool = False
    ledger: SideEffectLedger | None = None  # side effects already carried out (idempotency)
    # Sub-agents and tools that hold no run data, built on first use and kept for every
    # run of this graph (built per step, they were most of the engine's cost per step).
    built: BuiltOnce = field(default_factory=BuiltOnce)
