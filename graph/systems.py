"""The hosted systems: one entry per system, each a package with the same small surface.

Every system package (``graph/plan_execute``, ...) offers ``build_graph(design, ...)``,
``initial_state(question, design)``, ``snapshot(state)`` and ``step_rows(state)``, and
its agent catalog module offers ``AGENTS`` and ``design_warnings(enabled)``. The app
and the run service reach a system only through here.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from types import ModuleType


@dataclass(frozen=True)
class SystemInfo:
    name: str
    title: str
    summary: str
    package: str  # the package with build_graph, initial_state, snapshot, step_rows
    catalog: str  # the module with AGENTS and design_warnings

    def module(self) -> ModuleType:
        return import_module(self.package)

    def agents(self) -> dict:
        return import_module(self.catalog).AGENTS

    def design_warnings(self, enabled: list[str]) -> list[str]:
        return import_module(self.catalog).design_warnings(enabled)


SYSTEMS: dict[str, SystemInfo] = {
    "plan_execute": SystemInfo(
        "plan_execute", "Planner / Executor",
        "A Planner writes numbered steps; an Executor routes each step to one agent and "
        "asks for a new plan when a step fails (seed 000).",
        "graph.plan_execute", "graph.plan_execute.agents"),
}


def get_system(name: str) -> SystemInfo:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; known: {', '.join(SYSTEMS)}") from None
