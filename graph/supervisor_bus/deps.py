"""What the nodes of supervisor_bus need besides the state, built once per compiled graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from graph.prompts import PromptSet
from graph.settings import Settings
from graph.tools.knowledge import KnowledgeBase
from graph.tools.reports import SideEffectLedger


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
