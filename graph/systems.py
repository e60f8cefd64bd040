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
from typing import Any, Callable


@dataclass(frozen=True)
class SystemInfo:
    name: str
    title: str
    summary: str
    package: str  # the package with build_graph, initial_state, snapshot, step_rows
    catalog: str  # the module with AGENTS and design_warnings
    # What the pages say of it: the Design page's introduction and the line on who is
    # always on, the Run page's example questions and its one-line run limits.
    intro: str = ""
    always_on: str = ""
    examples: tuple[str, ...] = ()
    limits: Callable[[Any], str] = lambda design: ""
    rejected: str = "reject it"  # what a rejected approval leads to, in a few words

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
        "graph.plan_execute", "graph.plan_execute.agents",
        intro="The **Planner** turns a question into numbered steps; the **Executor** hands "
              "each step to one of the agents below and asks for a new plan when a step fails.",
        always_on="The Planner and the Executor are always on.",
        examples=(
            "Which stock in the database grew the most between 2005 and 2009? Chart the prices.",
            "What happened to Apple when it launched the iPhone, and how did its stock price "
            "change in 2007?",
            "How did Tesla's stock do in 2008?",
            "What caused the dot-com crash and how much did Amazon's price fall from 2000 to "
            "2001?"),
        limits=lambda design: f"at most {design.max_replans} replan(s) per step",
        rejected="reject the step (the Planner revises it)"),
    "supervisor_bus": SystemInfo(
        "supervisor_bus", "Supervisor + message bus",
        "Agents exchange typed messages on an append-only bus; a supervisor reads its inbox "
        "and routes, requests that time out go to a human, tools follow each role (seed 001).",
        "graph.supervisor_bus", "graph.supervisor_bus.agents",
        intro="The **supervisor** reads the typed messages addressed to it on the bus and "
              "decides which agent gets the next request; every agent answers on the bus, and "
              "a request not answered in time goes to a human.",
        always_on="The supervisor and the human node are always on.",
        # its researcher reads the bundled documents (no database tool): questions about
        # events in them
        examples=("What caused the dot-com crash?",
                  "What happened to Apple when it launched the iPhone?",
                  "Why did Google go public in 2004?"),
        limits=lambda design: ("supervisor + message bus, requests time out after "
                               f"{design.bus_timeout_s:g} s"),
        rejected="reject the request (it is dropped)"),
    "hierarchical_teams": SystemInfo(
        "hierarchical_teams", "Hierarchical teams",
        "A lead supervisor splits a multi-intent request into subtasks, one team each; every "
        "team is a subgraph with its own supervisor and workers that sees only its subtask, "
        "side-effecting calls wait for a human, and an edited request is replanned (seeds "
        "002, 004).",
        "graph.hierarchical_teams", "graph.hierarchical_teams.agents",
        intro="The **lead supervisor** splits one request with several intents into subtasks "
              "and gives each to one team; a team (a subgraph drawn as a box) has its own "
              "supervisor and workers and sees only its subtask. Calls to the API ask a human "
              "first; you can edit the request while the run goes.",
        always_on="The lead supervisor and each team's supervisor are always on; a team is on "
                  "when at least one of its workers is.",
        examples=(
            "Check that the API is healthy and find reliable news sites about what moves the "
            "stock market",
            "Find reliable news sites about semiconductor tariffs, then send their URLs to "
            "the API",
            "Check that the API is healthy, find reliable news sites about interest rates and "
            "send their URLs to the API"),
        limits=lambda design: ("a lead supervisor over teams; calls to the API wait for a "
                               "human unless a worker is set to never ask"),
        rejected="reject the call (it is not sent; its subtask fails)"),
}


def coordination_by_size(agents: int) -> str:
    """Which coordination a team of ``agents`` working agents calls for, as one sentence
    (seed 001, section 6; the seed's own heuristics, not rules)."""
    if agents <= 1:
        return (f"{agents} agent{'' if agents == 1 else 's'}: nothing to coordinate; a single "
                "agent with a clear state schema is enough.")
    if agents == 2:
        return ("2 agents: a direct handoff is enough: the first writes its output to a named "
                "field with a clear reducer and a conditional edge hands over to the second; "
                "a supervisor would add a model call per step for little.")
    if agents <= 5:
        return (f"{agents} agents: a supervisor with a message bus fits: agents exchange typed "
                "messages on an append-only channel, each tracks its inbox, and the "
                "supervisor's routing decisions are recorded where you can inspect them.")
    return (f"{agents} agents: consider hierarchical teams: a top supervisor delegates to "
            "team supervisors, each over a few specialised agents, so no single supervisor "
            "becomes the routing bottleneck.")


def get_system(name: str) -> SystemInfo:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; known: {', '.join(SYSTEMS)}") from None
