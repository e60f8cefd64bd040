"""The agent catalog of supervisor_bus: one record per worker, with its tools by role.

The supervisor is the hub, always present, like the Planner and Executor of
plan_execute: the Design page ticks the workers. Tool access follows the role, not
what the model could do (docs/systems/supervisor_bus.md, tools by role): the researcher only reads, the writer only
writes, the supervisor only routes. ``ROLE_TOOLS`` is the allowlist the tool gate
enforces where tools execute.

A user agent (``graph.agents``, defined in the browser) ticked in a design is one more
worker: the supervisor reads its description like a built-in worker's, and its tools are
exactly the ones it was given (``spec_of`` finds either kind by name).
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.agents.user_agents import UserAgent, defined
from graph.kernel.system import AgentSpec as BaseAgentSpec
from graph.kernel.system import coordination_by_size


@dataclass(frozen=True, kw_only=True)
class AgentSpec(BaseAgentSpec):
    """A worker: what the supervisor reads of it (its ``tools`` are its allowlist)."""

    use_when: str
    limits: str
    output_format: str


AGENTS: dict[str, AgentSpec] = {
    spec.name: spec
    for spec in (
        AgentSpec(
            name="researcher",
            description="Searches the offline knowledge base and reads documents by id; "
            "reports findings with their source ids.",
            use_when="Facts are needed and nobody has researched the question yet.",
            limits="Read-only: cannot write or save anything.",
            output_format="Findings, each followed by its source id like [kb:doc-id].",
            tools=("search_knowledge_base", "fetch_document"),
        ),
        AgentSpec(
            name="writer",
            description="Formats the findings it receives into an answer and saves it as "
            "a draft file.",
            use_when="Findings have arrived and no draft has been written yet.",
            limits="Write-only: cannot search; uses only the findings it is sent. Saving "
            "a draft is a side effect, done at most once per request.",
            output_format="The formatted answer, and where the draft was saved.",
            tools=("format_output", "write_draft"),
            side_effects=True,
        ),
        AgentSpec(
            name="reviewer",
            description="Checks that every source cited in the material it receives "
            "exists in the knowledge base.",
            use_when="A draft (or findings) exists and has not been checked yet.",
            limits="Read-only: checks citations, changes nothing.",
            output_format="How many cited sources exist, and which do not.",
            tools=("check_citations",),
        ),
    )
}

AGENT_NAMES: tuple[str, ...] = tuple(AGENTS)

# Who may call which tool. The supervisor's only tool is its routing decision.
ROLE_TOOLS: dict[str, tuple[str, ...]] = {
    "supervisor": ("route",),
    **{name: spec.tools for name, spec in AGENTS.items()},
}


def user_spec(agent: UserAgent) -> AgentSpec:
    """A user agent as the supervisor reads it: a worker whose tools are its own."""
    tools = ", ".join(agent.tool_names) or "none"
    return AgentSpec(
        name=agent.name,
        description=agent.description,
        use_when="The request asks for what its description says.",
        limits=f"Only its own tools ({tools}).",
        output_format="What its tools returned, in a few sentences.",
        tools=agent.tool_names,
    )


def spec_of(name: str) -> AgentSpec | None:
    """A built-in worker's record, or a defined user agent's (``graph.agents``)."""
    if name in AGENTS:
        return AGENTS[name]
    agent = defined(name)
    return user_spec(agent) if agent is not None else None


def is_worker(name: str) -> bool:
    """Whether ``name`` is a worker (built-in or user agent), not the user, the supervisor
    or a human."""
    return spec_of(name) is not None


def enabled_specs(enabled: list[str] | None) -> list[AgentSpec]:
    """The enabled workers, in catalog order, then the enabled user agents in the order
    given; ``None`` means all the built-in ones."""
    chosen = set(AGENT_NAMES if enabled is None else enabled)
    found = [spec for name, spec in AGENTS.items() if name in chosen]
    for name in enabled or ():
        if name not in AGENTS and (spec := spec_of(name)) is not None:
            found.append(spec)
    return found


def unknown_agents(names: list[str]) -> list[str]:
    return [n for n in names if spec_of(n) is None]


def format_agent_list(enabled: list[str] | None) -> str:
    """The agents the supervisor may route to, with their tools: what it reads."""
    lines = [
        f"- {s.name}: {s.description} Use when: {s.use_when} Tools: {', '.join(s.tools)}."
        for s in enabled_specs(enabled)
    ]
    return "\n".join(lines) or "- (no agent is enabled: answer FINISH)"


def coordination_advice(enabled: list[str]) -> str:
    """The source design's advice by team size (docs/systems/supervisor_bus.md) for this design: the enabled agents are the ones doing the
    work; the supervisor is the coordination whose worth is in question."""
    return coordination_by_size(len(enabled), "supervisor_bus")


def design_warnings(enabled: list[str]) -> list[str]:
    """Why a design may not work well. Advice only: the user may run it anyway."""
    on = set(enabled)
    warnings = []
    if unknown := unknown_agents(enabled):
        warnings.append(f"Unknown agents: {', '.join(unknown)}.")
    if not on:
        warnings.append("No agent enabled: the supervisor can only finish at once.")
    if "researcher" not in on and on and on <= set(AGENTS):
        warnings.append("No researcher: nobody finds facts, answers can only restate the question.")
    if "writer" not in on and "researcher" in on:
        warnings.append(
            "No writer: the answer is the researcher's findings as they are, and no draft is saved."
        )
    if not 3 <= len(on) <= 5:
        warnings.append(coordination_advice(enabled))
    return warnings
