"""hierarchical_teams: a lead supervisor over teams of workers.

The lead supervisor turns one multi-intent request into a structured plan of subtasks,
one team each, and dispatches them; each team is a subgraph with its own supervisor and
workers that sees only its own subtask. The human can edit the request mid-run: the lead
replans, keeping finished work and cancelling stale subtasks explicitly
(``docs/systems/hierarchical_teams.md``). The package exports ``SYSTEM`` (``system.py``).
"""

from graph.hierarchical_teams.system import SYSTEM

__all__ = ["SYSTEM"]
