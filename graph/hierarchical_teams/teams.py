"""The teams: each a compiled subgraph with its own supervisor (``team_supervisor``),
its enabled workers (``workers``) and, for a team with side-effecting workers, the
``call_api`` gate (``http_gate``).

A team's input is its subtask only (``TeamInput``: id, instruction, the results it
depends on); every prompt its models receive is built from that and from its
workers' reports, never from the request or another subtask. Its output is its
outcome in ``team_results`` and its inner steps (``TeamOutput``).
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph.hierarchical_teams.agents import AGENTS, team_workers
from graph.hierarchical_teams.deps import Deps
from graph.hierarchical_teams.http_gate import call_api_node
from graph.hierarchical_teams.state import TeamInput, TeamOutput, TeamState
from graph.hierarchical_teams.team_supervisor import team_supervisor_node
from graph.hierarchical_teams.workers import worker_node


def build_team(team: str, deps: Deps) -> CompiledStateGraph:
    """A team's compiled subgraph: its supervisor, its enabled workers, and (for a team
    with side-effecting workers) the ``call_api`` gate."""
    workers = team_workers(team, deps.enabled)
    gated = any(AGENTS[w].side_effects for w in workers)
    builder = StateGraph(TeamState, input_schema=TeamInput, output_schema=TeamOutput)
    builder.add_node(
        "supervisor",
        partial(team_supervisor_node, deps=deps, team=team),
        destinations=(*workers, END),
    )
    for w in workers:
        builder.add_node(
            w,
            partial(worker_node, deps=deps, worker=w),
            destinations=("call_api", "supervisor") if AGENTS[w].side_effects else ("supervisor",),
        )
    if gated:
        builder.add_node(
            "call_api", partial(call_api_node, deps=deps), destinations=("supervisor",)
        )
    builder.add_edge(START, "supervisor")
    return builder.compile(name=team)
