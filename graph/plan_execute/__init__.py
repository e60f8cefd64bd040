"""plan_execute: Planner → Executor → sub-agents, with a capped replan loop.

A Planner writes a numbered plan of one-agent steps; an Executor decides for each step
whether to replan, which agent runs next and the standalone query it gets; ReAct
sub-agents do the work with their own tools only (``docs/systems/plan_execute.md``).
The package exports ``SYSTEM``, the hosted system (``system.py``).
"""

from graph.plan_execute.system import SYSTEM

__all__ = ["SYSTEM"]
