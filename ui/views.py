"""Which view presents which system: the shipped systems' views, one line each, and
``register_view`` for a system defined elsewhere (a test's fourth system registers its
view beside its ``SYSTEM``). A system with no registered view is shown by the generic
``SystemView``."""

from __future__ import annotations

from graph.kernel.system import get_system
from ui.system_view import SystemView
from ui.systems.hierarchical_teams import TeamsView
from ui.systems.plan_execute import PlanView
from ui.systems.supervisor_bus import BusView
from ui.view_models import Panel, RunFacts

_VIEWS: dict[str, type[SystemView]] = {
    "plan_execute": PlanView,
    "supervisor_bus": BusView,
    "hierarchical_teams": TeamsView,
}


def register_view(name: str, view: type[SystemView]) -> None:
    """Present system ``name`` with ``view`` from now on."""
    _VIEWS[name] = view


def unregister_view(name: str) -> None:
    _VIEWS.pop(name, None)


def panels_of(run: dict) -> list[Panel]:
    """A compared run's panels (``graph.service.side_by_side``), as its
    system shows a finished run."""
    return view_of(run["system"]).panels(run["snapshot"], RunFacts())


def view_of(name: str) -> SystemView:
    """The view of the registered system ``name`` (ValueError: no such system)."""
    system = get_system(name)
    return _VIEWS.get(name, SystemView)(system)
