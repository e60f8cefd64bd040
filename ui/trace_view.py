"""A run's messages as a trace: turn → step → node (agent) → the model calls and tool
calls it made, each with the latency and tokens the event log recorded for it.

The trace's shape and its words, without Streamlit; ``ui.trace_builder`` builds it from
a run's stored events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TypeVar

BEFORE_STEPS = "Before step 1"  # the label of messages tagged step 0 or no step
AGENTS_IN_LABEL = 3


@dataclass
class TraceItem:
    """One message of the trace: a model call with its reply, a tool call with its
    result, or what an agent was given (a request, a decision: no call, no figures)."""

    kind: str  # "model", "tool", "input" or "decision"
    title: str
    text: str
    key: str  # unique in the run: the message id, or the position it was found at
    tool_calls: list[dict] = field(default_factory=list)  # {"name", "args"} a reply asks for
    latency_ms: float | None = None
    tokens: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    raw: dict = field(default_factory=dict)  # the stored message and the call's record

    @property
    def is_call(self) -> bool:
        return self.kind in ("model", "tool")


@dataclass
class TraceNode:
    """One stay of an agent within a step: its messages, in order."""

    agent: str
    items: list[TraceItem] = field(default_factory=list)


@dataclass
class TraceStep:
    turn: int
    step: int | None
    nodes: list[TraceNode] = field(default_factory=list)
    turns_in_run: int = 1  # more than 1: the label names the turn

    @property
    def key(self) -> str:
        return f"{self.turn}-{self.step if self.step is not None else 'none'}"

    @property
    def items(self) -> list[TraceItem]:
        return [i for n in self.nodes for i in n.items]

    @property
    def agents(self) -> list[str]:
        return list(dict.fromkeys(n.agent for n in self.nodes))

    @property
    def model_calls(self) -> int:
        return sum(1 for i in self.items if i.kind == "model")

    @property
    def tool_calls(self) -> int:
        return sum(1 for i in self.items if i.kind == "tool")

    @property
    def latency_ms(self) -> float | None:
        return _total(i.latency_ms for i in self.items)

    @property
    def tokens(self) -> int | None:
        return _total(i.tokens for i in self.items)

    @cached_property
    def label(self) -> str:
        """ "Step 2 · data_researcher · 2 model calls · 1 tool call · 3.1 ms · 840 tokens".

        Made once per step (a step is not changed once made: ``TraceBuilder`` gives a
        new one), in one pass over its items: a live page draws every step's label at
        each refresh."""
        where = f"Step {self.step}" if self.step else BEFORE_STEPS
        if self.turns_in_run > 1:
            where = f"Turn {self.turn} · {where}"
        agents = self.agents
        names = ", ".join(agents[:AGENTS_IN_LABEL])
        if len(agents) > AGENTS_IN_LABEL:
            names += f" +{len(agents) - AGENTS_IN_LABEL}"
        models = tools = 0
        latencies: list[float] = []
        tokens: list[int] = []
        for node in self.nodes:
            for item in node.items:
                if item.kind == "model":
                    models += 1
                elif item.kind == "tool":
                    tools += 1
                if item.latency_ms is not None:
                    latencies.append(item.latency_ms)
                if item.tokens is not None:
                    tokens.append(item.tokens)
        parts = [where, names, counted(models, "model call")]
        if tools:
            parts.append(counted(tools, "tool call"))
        if models or tools:
            parts.append(format_ms(sum(latencies) if latencies else None))
            parts.append(format_tokens(sum(tokens) if tokens else None))
        return " · ".join(parts)


@dataclass
class Trace:
    steps: list[TraceStep]

    @property
    def items(self) -> list[TraceItem]:
        return [i for s in self.steps for i in s.items]

    @cached_property
    def max_latency_ms(self) -> float:
        """The largest call's latency: each bar is drawn against it (found once: each
        item drawn asks, and a trace is not changed once made)."""
        return max((i.latency_ms or 0.0 for i in self.items), default=0.0)

    @cached_property
    def max_tokens(self) -> int:
        return max((i.tokens or 0 for i in self.items), default=0)

    def filters(self) -> tuple[list[int], list[str]]:
        """The steps and agents of the trace, for the filter boxes."""
        steps = sorted({s.step for s in self.steps if isinstance(s.step, int)})
        agents = sorted({n.agent for s in self.steps for n in s.nodes})
        return steps, agents


N = TypeVar("N", int, float)


def _total(values: Iterable[N | None]) -> N | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def counted(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def format_ms(ms: float | None) -> str:
    """A latency in words: "—" when none was recorded."""
    if ms is None:
        return "—"
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s"


def format_tokens(tokens: int | None) -> str:
    return "— tokens" if tokens is None else f"{tokens:,} tokens"


def bar_share(value: float | None, largest: float) -> float:
    """How much of a bar ``value`` fills against the run's ``largest`` (0 to 1); a value
    above zero always shows a sliver."""
    if not value or not largest:
        return 0.0
    return max(0.02, min(1.0, value / largest))


def filter_trace(trace: Trace, step: int | None, agent: str | None) -> Trace:
    """The trace narrowed to one step and/or one agent (a step left empty is dropped);
    the trace itself when neither is given."""
    if step is None and agent is None:
        return trace
    kept = []
    for s in trace.steps:
        if step is not None and s.step != step:
            continue
        nodes = [n for n in s.nodes if agent is None or n.agent == agent]
        if nodes:
            kept.append(replace(s, nodes=nodes))
    return Trace(kept)
