"""The agent catalog of plan_execute: one record per sub-agent.

The Planner and Executor prompts are built from this catalog and the enabled subset,
so adding an agent is one entry here plus its node in ``workers.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from graph.agents.user_agents import UserAgent, defined
from graph.kernel.system import AgentSpec as BaseAgentSpec

Routing = Literal["executor", "chain", "end"]


@dataclass(frozen=True, kw_only=True)
class AgentSpec(BaseAgentSpec):
    """A sub-agent: what the Planner and the Executor read of it, and where it goes next."""

    use_when: str
    limits: str
    output_format: str
    routing: Routing  # back to the executor, a fixed chain, or the end of the run
    chain_to: str | None = None  # the next agent of a fixed chain
    # A step's action for the example question of the prompts' example plan (a model sees
    # a concrete, valid plan, never a placeholder it could copy).
    example: str = ""

    @property
    def routing_label(self) -> str:
        if self.routing == "chain":
            return f"fixed chain → {self.chain_to}"
        return {"executor": "back to the executor", "end": "ends the run"}[self.routing]


AGENTS: dict[str, AgentSpec] = {
    spec.name: spec
    for spec in (
        AgentSpec(
            name="web_researcher",
            description="Searches documents (the offline knowledge base, or the web when "
            "configured) and reports passages with source ids.",
            use_when="The step needs background facts, news, explanations or events: "
            "anything found in text rather than in the price database.",
            limits="Cannot compute over numbers or query the price database.",
            output_format="Short findings, each followed by its source id like [kb:doc-id].",
            tools=("search_knowledge_base",),
            routing="executor",
            example="Search the documents for what happened when Apple launched the iPhone "
            "in 2007.",
        ),
        AgentSpec(
            name="data_researcher",
            description="Writes SQL over the local stock-price database (monthly prices of "
            "MSFT, AMZN, IBM, GOOG, AAPL, 2000-2010) and reports the rows.",
            use_when="The step needs prices, growth, averages, rankings or a price series "
            "for a chart.",
            limits="Read-only; knows only the tables in the database; rows are capped.",
            output_format="The SQL it ran, the resulting rows, and a one-line reading of them.",
            tools=("run_sql",),
            routing="executor",
            example="Find Apple's (AAPL) monthly closing prices in 2007 in the price database.",
        ),
        AgentSpec(
            name="chart_generator",
            description="Builds a Vega-Lite chart from data a previous step obtained.",
            use_when="The user asks for a chart, plot or visualisation, after the data "
            "has been fetched.",
            limits="Charts only data already in the run; never runs code.",
            output_format="A chart specification, kept with the run.",
            tools=("make_chart",),
            routing="chain",
            chain_to="chart_summarizer",
            example="Chart AAPL's monthly closing prices in 2007 from the data fetched earlier.",
        ),
        AgentSpec(
            name="chart_summarizer",
            description="Writes a caption for the chart, grounded in the chart's data.",
            use_when="Always right after chart_generator (fixed chain); never planned alone.",
            limits="Describes only the chart just made.",
            output_format="A two-sentence caption with figures taken from the chart.",
            tools=("describe_chart",),
            routing="executor",
            planned=False,
        ),
        AgentSpec(
            name="report_writer",
            description="Saves the findings so far as a Markdown report file in the "
            "reports folder.",
            use_when="The user asks to save, write or keep a report; after the research "
            "steps, before the synthesizer.",
            limits="Writes one file per step; changes nothing else; has a side effect, so "
            "a human approves it first.",
            output_format="Where the report was saved.",
            tools=("save_report",),
            routing="executor",
            side_effects=True,
            example="Save the findings so far as a report on Apple in 2007.",
        ),
        AgentSpec(
            name="synthesizer",
            description="Writes the final answer from everything gathered, citing sources "
            "and data.",
            use_when="The last step of every plan.",
            limits="Uses only what earlier steps found; does not search.",
            output_format="The final answer with citations like [kb:doc-id] and [sql:1].",
            tools=(),
            routing="end",
            example="Answer how Apple's stock did in 2007 from the findings, citing the sources.",
        ),
    )
}

AGENT_NAMES: tuple[str, ...] = tuple(AGENTS)


def user_spec(agent: UserAgent) -> AgentSpec:
    """A user agent as the Planner and the Executor read it: a ReAct worker that goes back
    to the executor."""
    tools = ", ".join(agent.tool_names) or "none"
    return AgentSpec(
        name=agent.name,
        description=agent.description,
        use_when="The step asks for what its description says.",
        limits=f"Only its own tools ({tools}).",
        output_format="What its tools returned, in a few sentences.",
        tools=agent.tool_names,
        routing="executor",
        example=f"Ask {agent.name} for what its description says, for the question.",
    )


def spec_of(name: str) -> AgentSpec | None:
    """A built-in agent's record, or a defined user agent's (``graph.agents``)."""
    if name in AGENTS:
        return AGENTS[name]
    agent = defined(name)
    return user_spec(agent) if agent is not None else None


def enabled_specs(enabled: list[str] | None) -> list[AgentSpec]:
    """The enabled agents, in catalog order, then the enabled user agents in the order
    given; ``None`` means all the built-in ones."""
    chosen = set(AGENT_NAMES if enabled is None else enabled)
    found = [spec for name, spec in AGENTS.items() if name in chosen]
    for name in enabled or ():
        if name not in AGENTS and (spec := spec_of(name)) is not None:
            found.append(spec)
    return found


def plannable(enabled: list[str] | None) -> list[str]:
    """Agents the Planner may assign to a step."""
    return [s.name for s in enabled_specs(enabled) if s.planned]


def unknown_agents(names: list[str]) -> list[str]:
    return [n for n in names if spec_of(n) is None]


def format_agent_list(enabled: list[str] | None) -> str:
    """The agent list the Planner reads: what each enabled agent does and when to use it."""
    lines = []
    for spec in enabled_specs(enabled):
        if spec.planned:
            effects = (
                " It has side effects: flag its steps for approval." if spec.side_effects else ""
            )
            lines.append(f"- {spec.name}: {spec.description} Use when: {spec.use_when}{effects}")
    return "\n".join(lines) or "- (no agent can be planned)"


def format_agent_guidelines(enabled: list[str] | None) -> str:
    """Per-agent limits, output and routing, for the Planner and the Executor."""
    lines = []
    for spec in enabled_specs(enabled):
        lines.append(
            f"- {spec.name}: limits: {spec.limits} Output: {spec.output_format} "
            f"After it: {spec.routing_label}."
        )
    return "\n".join(lines)


def design_warnings(enabled: list[str]) -> list[str]:
    """Why a design may not work well. Advice only: the user may run it anyway."""
    on = set(enabled)
    warnings = []
    if unknown := unknown_agents(enabled):
        warnings.append(f"Unknown agents: {', '.join(unknown)}.")
    if "synthesizer" not in on:
        warnings.append("No synthesizer: runs end without a final answer.")
    if "chart_summarizer" in on and "chart_generator" not in on:
        warnings.append("chart_summarizer is enabled without chart_generator: it will never run.")
    if "chart_generator" in on and "data_researcher" not in on:
        warnings.append("chart_generator without data_researcher: there is no data to chart.")
    if not on & {"web_researcher", "data_researcher"} and not on - set(AGENTS):
        warnings.append("No researcher enabled: answers can only restate the question.")
    return warnings
