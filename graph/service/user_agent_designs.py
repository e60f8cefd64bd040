"""A design and the agents defined on the Design page: a design carries the definitions of
the user agents it ticks (so it is exported, imported and run whole); the store's library
is where they are defined, edited and deleted. These keep the two in step and say what
changed."""

from __future__ import annotations

from graph.agents.user_agents import UserAgent
from graph.kernel.design import Design, takes_user_agents
from graph.service.repositories.user_agents import UserAgentError, UserAgents


def deleted_words(name: str) -> str:
    return (
        f"This design used the agent “{name}”, which was deleted: it is no longer ticked "
        "(define it again with New agent to use it)."
    )


def with_library(
    design: Design, library: list[UserAgent], ticked: list[str] | None = None
) -> tuple[Design, list[str]]:
    """``design`` with the library's current definitions of the user agents it ticks
    (``ticked``: those ticked now, else the design's own); a ticked agent the library no
    longer has is unticked, and a sentence says so."""
    known = {a.name: a for a in library}
    mine = {a.name for a in design.user_agents}
    wanted = list(design.enabled_agents if ticked is None else ticked)
    notes = [deleted_words(n) for n in wanted if n in mine and n not in known]
    if not takes_user_agents(design.system):
        chosen: list[UserAgent] = []
    else:
        chosen = [known[n] for n in wanted if n in known]
    names = {a.name for a in chosen}
    enabled = [n for n in wanted if n in names or (n not in mine and n not in known)]
    fresh = Design.model_validate(
        {
            **design.model_dump(mode="json"),
            "user_agents": [a.model_dump(mode="json") for a in chosen],
            "enabled_agents": enabled,
            "approvals": {k: v for k, v in design.approvals.items() if k not in mine - names},
        }
    )
    return fresh, notes


def keep_imported_agents(design: Design, library: UserAgents, by: str = "") -> list[str]:
    """Add to the library the user agents an imported design defines; one already there
    under that name with another definition is kept as it is, and a sentence says so."""
    notes = []
    for agent in design.user_agents:
        there = library.get(agent.name)
        if there is None:
            try:
                library.add(agent, by)
            except UserAgentError as exc:
                notes.append(f"The agent “{agent.name}” was not added: {exc}")
                continue
            notes.append(f"The agent “{agent.name}” was added to your agents.")
        elif there != agent:
            notes.append(
                f"You already have an agent named “{agent.name}” with another definition: "
                "yours was kept, and the design uses it."
            )
    return notes
