"""The hosted systems, in the order the app lists them: one line each.

A fourth system is one package exporting a ``SYSTEM`` (a ``graph.kernel.system.System``)
and one line here; registering it also plays its rules on the offline scripted model
(``offline_rules`` in its package).
"""

from __future__ import annotations

from graph.hierarchical_teams import SYSTEM as HIERARCHICAL_TEAMS
from graph.kernel.system import register
from graph.plan_execute import SYSTEM as PLAN_EXECUTE
from graph.supervisor_bus import SYSTEM as SUPERVISOR_BUS

for _system in (PLAN_EXECUTE, SUPERVISOR_BUS, HIERARCHICAL_TEAMS):
    register(_system)
