"""A run's messages as a trace: turn → step → node (agent) → the model calls and tool
calls it made, each with the latency and tokens the event log recorded for it.

Built from the run's stored events without Streamlit, so the grouping and the figures
are testable. The figures come from what the engine logged as each call ended
(``llm_call`` events name their reply message's id, ``tool_call`` events their tool
call's id); a message with no recorded figure (a run logged before calls named their
message, an HTTP call a node made itself) has none: the page says "—", never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

FOLLOW_UP_NOTE = "Follow-up message"  # the run service's note on a follow-up's redirect
BEFORE_STEPS = "Before step 1"  # the label of messages tagged step 0 or no step
GENERIC_NODES = ("", "model", "tools", "supervisor")  # inner nodes named after their agent
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

    @property
    def label(self) -> str:
        """ "Step 2 · data_researcher · 2 model calls · 1 tool call · 3.1 ms · 840 tokens"."""
        where = f"Step {self.step}" if self.step else BEFORE_STEPS
        if self.turns_in_run > 1:
            where = f"Turn {self.turn} · {where}"
        agents = self.agents
        names = ", ".join(agents[:AGENTS_IN_LABEL])
        if len(agents) > AGENTS_IN_LABEL:
            names += f" +{len(agents) - AGENTS_IN_LABEL}"
        parts = [where, names, _count(self.model_calls, "model call")]
        if self.tool_calls:
            parts.append(_count(self.tool_calls, "tool call"))
        if self.model_calls or self.tool_calls:
            parts.append(format_ms(self.latency_ms))
            parts.append(format_tokens(self.tokens))
        return " · ".join(parts)


@dataclass
class Trace:
    steps: list[TraceStep]

    @property
    def items(self) -> list[TraceItem]:
        return [i for s in self.steps for i in s.items]

    @property
    def max_latency_ms(self) -> float:
        """The largest call's latency: each bar is drawn against it."""
        return max((i.latency_ms or 0.0 for i in self.items), default=0.0)

    @property
    def max_tokens(self) -> int:
        return max((i.tokens or 0 for i in self.items), default=0)

    def filters(self) -> tuple[list[int], list[str]]:
        """The steps and agents of the trace, for the filter boxes."""
        steps = sorted({s.step for s in self.steps if isinstance(s.step, int)})
        agents = sorted({n.agent for s in self.steps for n in s.nodes})
        return steps, agents


def _total(values) -> float | int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _count(n: int, word: str) -> str:
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


def _namespace_agent(namespace: str, node: str) -> str:
    """The agent a sub-graph's event belongs to: its own node name, unless that node is
    the sub-graph's generic one (a ReAct agent's "model", a team's "supervisor")."""
    if node not in GENERIC_NODES:
        return node
    return namespace.split("/")[0].split(":")[0]


def _turn_starts(events: list[dict]) -> list[int]:
    """The seqs at which a follow-up message started a new turn."""
    return [
        e["seq"]
        for e in events
        if e["kind"] == "custom"
        and isinstance(e.get("data"), dict)
        and e["data"].get("kind") == "redirect"
        and str(e["data"].get("note") or "").startswith(FOLLOW_UP_NOTE)
    ]


def _turn(seq: int, starts: list[int]) -> int:
    return 1 + sum(1 for s in starts if s < seq)


def _fingerprint(message: dict) -> tuple:
    return (message.get("type"), message.get("name"), message.get("content"))


def _messages(events: list[dict]) -> list[tuple[dict, int, int | None, str]]:
    """Every message once, with the seq it was logged at, the event's step and the agent
    its sub-graph names: first as the top-level nodes returned them (they carry the step
    and agent), then any a sub-graph logged that never reached the top level (a team
    waiting for a decision, a run stopped inside a sub-agent)."""
    top: list[tuple[dict, int, int | None, str]] = []
    inner: list[tuple[dict, int, int | None, str]] = []
    for event in events:
        data = event.get("data")
        if event["kind"] != "update" or not isinstance(data, dict):
            continue
        namespace = event.get("namespace") or ""
        agent = _namespace_agent(namespace, event.get("node") or "") if namespace else ""
        for message in data.get("messages") or []:
            if isinstance(message, dict):
                found = (message, event["seq"], event.get("step"), agent)
                (inner if namespace else top).append(found)
    kept, ids, prints = [], set(), set()
    for message, seq, step, agent in top:
        if message.get("id"):
            if message["id"] in ids:
                continue
            ids.add(message["id"])
        prints.add(_fingerprint(message))
        kept.append((message, seq, step, agent))
    for message, seq, step, agent in inner:
        if message.get("id") in ids or _fingerprint(message) in prints:
            continue
        if message.get("id"):
            ids.add(message["id"])
        prints.add(_fingerprint(message))
        kept.append((message, seq, step, agent))
    return kept


def _recorded(events: list[dict]) -> tuple[dict, dict, list, bool]:
    """The model calls by their reply's id, the tool runs by their call id, the calls
    whose reply is not among the messages (kept for the figures), and whether the
    run's calls name their replies at all (an older run's do not)."""
    calls: dict[str, tuple[dict, int, int | None, str]] = {}
    tools: dict[str, dict] = {}
    unnamed = []
    named = False
    for event in events:
        data = event.get("data")
        if event["kind"] != "custom" or not isinstance(data, dict):
            continue
        if isinstance(call := data.get("llm_call"), dict):
            named = named or "message_id" in call
            found = (call, event["seq"], event.get("step"), event.get("namespace") or "")
            if call.get("message_id"):
                calls[call["message_id"]] = found
            else:
                unnamed.append(found)
        elif isinstance(timing := data.get("tool_call"), dict) and timing.get("tool_call_id"):
            tools[timing["tool_call_id"]] = timing
    return calls, tools, unnamed, named


def _title(message: dict, kind: str) -> str:
    name, agent = message.get("name"), message.get("agent")
    if kind == "decision":
        return "approval timeout · default decision" if name == "timeout" else "human · decision"
    if kind == "model":
        title = f"model call · {name or agent or 'model'}"
        calls = message.get("tool_calls") or []
        return title + (f" · asks for {_count(len(calls), 'tool call')}" if calls else "")
    if kind == "tool":
        return f"tool call · {name or 'tool'}"
    return {
        "user": "the user's question",
        "agent_query": f"what {agent} was asked",
        "request": f"what {agent} was asked",
        "team_supervisor": f"what {agent} was asked by its team",
        "synthesizer_prompt": f"the prompt sent to {agent}",
    }.get(name, f"{name or message.get('type') or 'message'} · input")


def _kind(message: dict) -> str:
    if message.get("agent") == "human":
        return "decision"
    return {"ai": "model", "tool": "tool"}.get(message.get("type"), "input")


def _item(message: dict, position: int, calls: dict, tools: dict, asked: dict) -> TraceItem:
    kind = _kind(message)
    item = TraceItem(
        kind=kind,
        title=_title(message, kind),
        text=str(message.get("content") or ""),
        key=str(message.get("id") or f"at-{position}"),
        tool_calls=[
            {"name": c.get("name"), "args": c.get("args")}
            for c in message.get("tool_calls") or []
            if isinstance(c, dict)
        ],
        raw={"message": message},
    )
    if kind == "model":
        call = calls.get(message.get("id") or "")
        if call is not None:
            record = call[0]
            item.tokens_in, item.tokens_out = record["input_tokens"], record["output_tokens"]
            item.latency_ms = round(record["latency_s"] * 1000, 2)
            item.raw["recorded call"] = record
        elif isinstance(usage := message.get("usage"), dict):
            item.tokens_in = int(usage.get("input_tokens") or 0)
            item.tokens_out = int(usage.get("output_tokens") or 0)
        if item.tokens_in is not None:
            item.tokens = item.tokens_in + (item.tokens_out or 0)
    elif kind == "tool":
        call_id = message.get("tool_call_id") or ""
        if call_id in asked:  # the call the reply asked for: its arguments
            item.tool_calls = [asked[call_id]]
        if (timing := tools.get(call_id)) is not None:
            item.latency_ms = round(timing["latency_s"] * 1000, 2)
            item.raw["recorded run"] = timing
    return item


def _unkept_call(record: dict, seq: int, namespace: str) -> TraceItem:
    """A model call whose reply the state did not keep (a repaired structured output, a
    retried reply): its figures still count."""
    return TraceItem(
        kind="model",
        title=f"model call · {record.get('node') or 'model'} · reply not kept",
        text="",
        key=f"call-{seq}",
        latency_ms=round(record["latency_s"] * 1000, 2),
        tokens=record["input_tokens"] + record["output_tokens"],
        tokens_in=record["input_tokens"],
        tokens_out=record["output_tokens"],
        raw={"recorded call": record, "namespace": namespace},
    )


def build_trace(events: list[dict]) -> Trace:
    """The run's trace from its stored "update" and "custom" events (any order of kinds,
    in seq order): steps in the order they first appear, each agent's consecutive
    messages one node."""
    events = sorted(events, key=lambda e: e["seq"])
    starts = _turn_starts(events)
    calls, tools, unnamed, named = _recorded(events)
    steps: dict[tuple[int, int | None], TraceStep] = {}
    asked: dict[str, dict] = {}  # tool call id -> the call a reply asked for
    used: set[str] = set()

    def place(turn: int, step: int | None, agent: str, item: TraceItem) -> None:
        if not (isinstance(step, int) and step > 0):
            step = 0
        group = steps.setdefault((turn, step), TraceStep(turn, step))
        if not group.nodes or group.nodes[-1].agent != agent:
            group.nodes.append(TraceNode(agent))
        group.nodes[-1].items.append(item)

    for position, (message, seq, step, agent) in enumerate(_messages(events)):
        for c in message.get("tool_calls") or []:
            if isinstance(c, dict) and c.get("id"):
                asked[c["id"]] = {"name": c.get("name"), "args": c.get("args")}
        item = _item(message, position, calls, tools, asked)
        if message.get("id") in calls:
            used.add(message["id"])
        tagged = message.get("step")
        place(
            _turn(seq, starts),
            tagged if tagged is not None else step,
            message.get("agent") or agent or message.get("name") or "—",
            item,
        )
    if named:  # calls that name a reply the messages lack; an older run's name none
        unkept = [c for mid, c in calls.items() if mid not in used] + unnamed
        for record, seq, step, namespace in sorted(unkept, key=lambda c: c[1]):
            node = record.get("node") or ""
            agent = _namespace_agent(namespace, node) if namespace else node
            place(_turn(seq, starts), step, agent or "model", _unkept_call(record, seq, namespace))
    ordered = list(steps.values())
    turns = max((s.turn for s in ordered), default=1)
    for s in ordered:
        s.turns_in_run = turns
    return Trace(ordered)


def filter_trace(trace: Trace, step: int | None, agent: str | None) -> Trace:
    """The trace narrowed to one step and/or one agent (a step left empty is dropped)."""
    kept = []
    for s in trace.steps:
        if step is not None and s.step != step:
            continue
        nodes = [n for n in s.nodes if agent is None or n.agent == agent]
        if nodes:
            kept.append(replace(s, nodes=nodes))
    return Trace(kept)
