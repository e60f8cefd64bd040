"""supervisor_bus: a supervisor routing typed messages on an append-only bus.

Agents exchange typed messages (id, from, to, type, payload) on one channel; each agent
keeps its inbox's consumed ids and handles a message once; a supervisor reads its inbox
and routes; requests not answered in time go to a human (``docs/systems/supervisor_bus.md``).
The package exports ``SYSTEM``, the hosted system (``system.py``); the teaching scenario
(shared blackboard vs. bus) is ``graph.supervisor_bus.teaching.blackboard_vs_bus``.
"""

from graph.supervisor_bus.system import SYSTEM

__all__ = ["SYSTEM"]
