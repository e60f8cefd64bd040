"""The System contract: what the engine, the run service and the store ask of a hosted
system — a dozen members: its name, title, agents, settings and offline rules; its graph,
the state a run starts from, a follow-up turn, a state at a glance (``snapshot``); and
three parts (``graph.kernel.system_parts``): its ``shape`` (entry, hubs, teams,
abilities, drawing), its ``forks`` (timeline and what a fork may change) and its
``prompts``. What the pages show of a system is its view (``ui/system_view.py``).

A hosted system (``graph/plan_execute``, ``graph/supervisor_bus``,
``graph/hierarchical_teams``, or a fourth) is one package exporting one ``SYSTEM``, an
instance of a ``System`` subclass. ``graph.registry`` names the systems, one line each,
in the order the app lists them, and registers them here; the kernel never imports a
system, not even by name. The service layer imports the registry (so the app and the
command line have every system), and a system defined elsewhere (a test's) is added with
``register``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from graph.kernel.system_parts import Forks, Prompts, Shape
from graph.models.scripted import rules as scripted_rules

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import Checkpointer

    from graph.kernel.design import Design
    from graph.settings import Settings


@dataclass(frozen=True)
class AgentSpec:
    """One agent of a system's catalog: what the Design page lists and the guardrail reads.
    A system's own catalog may extend it (routing, examples...)."""

    name: str
    description: str  # what it can do
    tools: tuple[str, ...] = ()
    side_effects: bool = False  # its tools change something outside the run: it asks first
    planned: bool = True  # False: never given work of its own (it runs inside a chain)
    team: str | None = None  # the team it belongs to, in a system with teams


class SystemSettings(BaseModel):
    """What a design sets for one system, checked by the system's own model (its
    ``settings_model``, a subclass; this empty one for a system with none). The Design page
    draws each field from the model's JSON schema: ``title`` is the label,
    ``description`` the help, the bounds (``ge``, ``le``, ``gt``) are the widget's, and
    ``json_schema_extra`` may add ``step`` (a number's step) and ``section``
    ("approvals": shown with the approval settings; else with the run settings). A
    misspelt name is refused, not dropped."""

    model_config = ConfigDict(extra="forbid")


class System(ABC):
    """A hosted multi-agent system. Subclasses fill the class attributes and the methods."""

    name: ClassVar[str]
    title: ClassVar[str]
    agents: ClassVar[Mapping[str, AgentSpec]]
    settings_model: ClassVar[type[SystemSettings]] = SystemSettings  # what a design sets for it
    # How the offline scripted model plays this system (``graph.models.scripted.rules``):
    # a module with ``answer(prompt)`` and its tool tables; None: nothing of its own.
    offline_rules: ClassVar[Any] = None
    shape: ClassVar[Shape]  # its entry, hubs, teams, abilities, state classes, drawing
    forks: ClassVar[Forks] = Forks()  # its timeline, and what a fork may change
    prompts: ClassVar[Prompts]  # which prompts it tunes, tries and previews

    @abstractmethod
    def build_graph(
        self,
        design: Design | None = None,
        *,
        settings: Settings | None = None,
        checkpointer: Checkpointer = None,
        planner_model: BaseChatModel | None = None,
        worker_model: BaseChatModel | None = None,
    ) -> CompiledStateGraph:
        """The compiled graph of a design (this system's default one when None): only
        enabled agents become nodes."""

    @abstractmethod
    def initial_state(self, question: str, design: Design) -> dict:
        """The state a run of ``question`` starts from."""

    @abstractmethod
    def new_turn(self, state: dict, text: str, design: Design) -> dict:
        """The state update that starts a follow-up message as a new turn, same thread."""

    @abstractmethod
    def snapshot(self, state: dict) -> dict:
        """What the pages and the store keep of a state: small and JSON-safe (no messages:
        those are stored with the updates that added them). Carries ``rows`` (the run's
        table, one dict per unit of work) and ``counts`` (the figures the runs list keeps, as
        its view labels them; ``steps``, and ``replans`` where it replans, are what eval
        checks read; without them, the rows are counted)."""


# --------------------------------------------------------------------------- registration

_SYSTEMS: dict[str, System] = {}


def register(system: System) -> System:
    """Host ``system``: ``graph.registry`` registers the shipped ones, in the order the app
    lists them (the run service imports it, so the app and the command line have them);
    a system registered later comes after them. Its offline rules are played from now on."""
    _SYSTEMS[system.name] = system
    if system.offline_rules is not None:
        scripted_rules.add(system.offline_rules)
    return system


def unregister(name: str) -> None:
    system = _SYSTEMS.pop(name, None)
    if system is not None and system.offline_rules is not None:
        scripted_rules.remove(system.offline_rules)


def systems() -> dict[str, System]:
    """Every hosted system, in the order the app lists them."""
    if not _SYSTEMS:
        raise LookupError(
            "No system is registered: import graph.registry first (graph.service does)."
        )
    return dict(_SYSTEMS)


def get_system(name: str) -> System:
    known = systems()
    try:
        return known[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; known: {', '.join(known)}") from None


def default_system() -> str:
    return next(iter(systems()))


def coordination_by_size(agents: int, here: str | None = None) -> str:
    """Which coordination a team of ``agents`` working agents calls for, as one sentence
    (the source design's own heuristics, docs/systems/supervisor_bus.md for choosing a
    pattern by size, not rules); with ``here`` (the system the design uses), a second
    saying how that system stands to it, so the advice never reads as about another one."""
    return _by_size(agents) + _how_here_fits(agents, here)


def _how_here_fits(agents: int, here: str | None) -> str:
    if here == "supervisor_bus":
        if 3 <= agents <= 5:
            return " This system is that pattern."
        if agents >= 6:
            return " Here one supervisor routes every step, the bottleneck that warns of."
    if here == "hierarchical_teams":
        if agents >= 6:
            return " This system is that pattern."
        return (
            " The teams here add a layer of team supervisors (model calls of their own), "
            "which pays off from about six agents."
        )
    if here == "plan_execute" and agents >= 2:
        return (
            " Here the Planner writes the steps and the Executor routes each, so the "
            "coordination is theirs, not the agents'."
        )
    return ""


def _by_size(agents: int) -> str:
    if agents <= 1:
        return (
            f"{agents} agent{'' if agents == 1 else 's'}: nothing to coordinate; a single "
            "agent with a clear state schema is enough."
        )
    if agents == 2:
        return (
            "2 agents: a direct handoff is enough: the first writes its output to a named "
            "field with a clear reducer and a conditional edge hands over to the second; "
            "a supervisor would add a model call per step for little."
        )
    if agents <= 5:
        return (
            f"{agents} agents: a supervisor with a message bus fits: agents exchange typed "
            "messages on an append-only channel, each tracks its inbox, and the "
            "supervisor's routing decisions are recorded where you can inspect them."
        )
    return (
        f"{agents} agents: consider hierarchical teams: a top supervisor delegates to "
        "team supervisors, each over a few specialised agents, so no single supervisor "
        "becomes the routing bottleneck."
    )
