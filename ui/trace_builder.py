"""A run's trace (``ui.trace_view``) built from its stored events, without Streamlit, so
the grouping and the figures are testable. The figures come from what the engine logged
as each call ended (``llm_call`` events name their reply message's id, ``tool_call``
events their tool call's id); a message with no recorded figure (a run logged before
calls named their message, an HTTP call a node made itself) has none: the page says
"—", never a guess.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from ui.trace_view import Trace, TraceItem, TraceNode, TraceStep, counted

FOLLOW_UP_NOTE = "Follow-up message"  # the run service's note on a follow-up's redirect
GENERIC_NODES = ("", "model", "tools", "supervisor")  # inner nodes named after their agent


def _namespace_agent(namespace: str, node: str) -> str:
    """The agent a sub-graph's event belongs to: its own node name, unless that node is
    the sub-graph's generic one (a ReAct agent's "model", a team's "supervisor")."""
    if node not in GENERIC_NODES:
        return node
    return namespace.split("/")[0].split(":")[0]


def _fingerprint(message: dict) -> tuple:
    return (message.get("type"), message.get("name"), message.get("content"))


def _title(message: dict, kind: str) -> str:
    name, agent = message.get("name"), message.get("agent")
    if kind == "decision":
        return "approval timeout · default decision" if name == "timeout" else "human · decision"
    if kind == "model":
        title = f"model call · {name or agent or 'model'}"
        calls = message.get("tool_calls") or []
        return title + (f" · asks for {counted(len(calls), 'tool call')}" if calls else "")
    if kind == "tool":
        return f"tool call · {name or 'tool'}"
    return {
        "user": "the user's question",
        "agent_query": f"what {agent} was asked",
        "request": f"what {agent} was asked",
        "team_supervisor": f"what {agent} was asked by its team",
        "synthesizer_prompt": f"the prompt sent to {agent}",
    }.get(str(name), f"{name or message.get('type') or 'message'} · input")


def _kind(message: dict) -> str:
    if message.get("agent") == "human":
        return "decision"
    return {"ai": "model", "tool": "tool"}.get(str(message.get("type")), "input")


def _new_item(
    message: dict, kind: str, position: int, call: dict | None, asked: dict | None, timing
) -> TraceItem:
    """The item of one message: ``call`` the model call recorded for a reply, ``asked`` the
    tool call a tool's result answers and ``timing`` its recorded run (None if none)."""
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
        if call is not None:
            item.title += answered_tag(call)
            item.tokens_in, item.tokens_out = call["input_tokens"], call["output_tokens"]
            item.latency_ms = round(call["latency_s"] * 1000, 2)
            item.raw["recorded call"] = call
        elif isinstance(usage := message.get("usage"), dict):
            item.tokens_in = int(usage.get("input_tokens") or 0)
            item.tokens_out = int(usage.get("output_tokens") or 0)
        if item.tokens_in is not None:
            item.tokens = item.tokens_in + (item.tokens_out or 0)
    elif kind == "tool":
        if asked is not None:  # the call the reply asked for: its arguments
            item.tool_calls = [{"name": asked.get("name"), "args": asked.get("args")}]
        if timing is not None:
            item.latency_ms = round(timing["latency_s"] * 1000, 2)
            item.raw["recorded run"] = timing
    return item


def answered_tag(call: dict) -> str:
    """A replay's or fork's call said as answered from the recording or by the model."""
    if "replayed" not in call:
        return ""
    if call["replayed"]:
        return " · replayed (from the recording, no request)"
    return " · live (asked the model)"


def _unkept_call(record: dict, seq: int, namespace: str) -> TraceItem:
    """A model call whose reply the state did not keep (a repaired structured output, a
    retried reply): its figures still count."""
    return TraceItem(
        kind="model",
        title=f"model call · {record.get('node') or 'model'} · reply not kept"
        + answered_tag(record),
        text="",
        key=f"call-{seq}",
        latency_ms=round(record["latency_s"] * 1000, 2),
        tokens=record["input_tokens"] + record["output_tokens"],
        tokens_in=record["input_tokens"],
        tokens_out=record["output_tokens"],
        raw={"recorded call": record, "namespace": namespace},
    )


class TraceBuilder:
    """A run's trace kept up to date while the run goes on: ``add`` the events logged
    since the last call (in seq order, any kinds), then ``trace()``.

    Each event is read once, as it arrives. The top-level nodes' messages only ever grow
    at the end, so their layout (steps, nodes, items) is kept and only new ones are laid
    out; what can reach back into it lays it out again from the start (a follow-up's
    turn, a model call or a tool run recorded for a message already laid out, which
    then gets its figures). What a new event changes further on is done again at each
    ``trace()``: the messages a sub-graph logged that never reached the top level (a
    top-level update drops an inner copy logged earlier) and the calls whose reply no
    message holds. Items are reused for every message whose recorded figures have not
    changed, and an event that changes nothing (a state, a pause) gives the same trace
    back. A live Run page's refresh at 10,000 messages then costs what its new events
    bring, not a pass over all of them (27 ms a refresh on 2 cores), and makes no new
    objects to set off a full garbage collection. Stored events are never changed, so
    neither are the messages the items are kept by."""

    def __init__(self) -> None:
        self._starts: list[int] = []  # seqs at which a follow-up started a new turn
        self._calls: dict[str, tuple] = {}  # reply id -> (record, seq, step, namespace)
        self._tools: dict[str, dict] = {}  # tool call id -> its recorded run
        self._unnamed: list[tuple] = []  # calls that name no reply (older runs)
        self._named = False  # whether the run's calls name their replies at all
        # A message as an update logged it: (message, seq, event step, agent, id, print).
        self._top: list[tuple] = []  # top-level nodes' messages, the first of each id
        self._top_ids: set[str] = set()
        self._top_prints: set[tuple] = set()
        self._inner: list[tuple] = []  # every message a sub-graph logged
        self._items: dict[int, tuple] = {}  # id(message) -> (message, inputs, item)
        self._unkept: dict[int, tuple] = {}  # id(record) -> (record, seq, namespace, item)
        self._top_tool_ids: set[str] = set()  # the tool call ids top-level results answer
        self._laid = _Layout()  # the layout of the first ``count`` top-level messages
        self._last: Trace | None = None  # the trace as of the last event that changed it

    def add(self, events: Iterable[dict]) -> TraceBuilder:
        for event in events:
            data = event.get("data")
            if not isinstance(data, dict):
                continue
            if event["kind"] == "custom":
                self._add_custom(event, data)
            elif event["kind"] == "update" and data.get("messages"):
                self._add_update(event, data)
                self._last = None
        return self

    def _add_custom(self, event: dict, data: dict) -> None:
        if data.get("kind") == "redirect" and str(data.get("note") or "").startswith(
            FOLLOW_UP_NOTE
        ):
            self._starts.append(event["seq"])
            self._laid, self._last = _Layout(), None  # turns are counted from the start
        if isinstance(call := data.get("llm_call"), dict):
            self._named = self._named or "message_id" in call
            found = (call, event["seq"], event.get("step"), event.get("namespace") or "")
            if call.get("message_id"):
                if call["message_id"] in self._top_ids:  # a laid-out reply gets its figures
                    self._laid = _Layout()
                self._calls[call["message_id"]] = found
            else:
                self._unnamed.append(found)
            self._last = None
        elif isinstance(timing := data.get("tool_call"), dict) and timing.get("tool_call_id"):
            if timing["tool_call_id"] in self._top_tool_ids:
                self._laid = _Layout()
            self._tools[timing["tool_call_id"]] = timing
            self._last = None

    def _add_update(self, event: dict, data: dict) -> None:
        namespace = event.get("namespace") or ""
        agent = _namespace_agent(namespace, event.get("node") or "") if namespace else ""
        for message in data.get("messages") or []:
            if not isinstance(message, dict):
                continue
            mid = message.get("id") or None
            said = (message, event["seq"], event.get("step"), agent, mid, _fingerprint(message))
            if namespace:
                self._inner.append(said)
                continue
            if mid:
                if mid in self._top_ids:
                    continue
                self._top_ids.add(mid)
            self._top_prints.add(said[5])
            if message.get("tool_call_id"):
                self._top_tool_ids.add(message["tool_call_id"])
            self._top.append(said)

    def _inner_kept(self) -> list[tuple]:
        """The messages a sub-graph logged that never reached the top level (a team
        waiting for a decision, a run stopped inside a sub-agent), each once: they come
        after the top-level nodes' messages (which carry the step and agent)."""
        kept: list[tuple] = []
        ids, prints = set(), set()
        for said in self._inner:
            mid, fingerprint = said[4], said[5]
            if mid in self._top_ids or mid in ids:
                continue
            if fingerprint in self._top_prints or fingerprint in prints:
                continue
            if mid:
                ids.add(mid)
            prints.add(fingerprint)
            kept.append(said)
        return kept

    def _item(self, message: dict, position: int, mid: str | None, asked: dict) -> TraceItem:
        kind = _kind(message)
        call = self._calls.get(mid) if kind == "model" and mid else None
        call_id = (message.get("tool_call_id") or "") if kind == "tool" else ""
        inputs = (
            None if mid else position,  # an item without an id is keyed by its position
            call[0] if call else None,
            asked.get(call_id) if call_id else None,
            self._tools.get(call_id) if call_id else None,
        )
        known = self._items.get(id(message))
        if (
            known is not None
            and known[0] is message
            and known[1][0] == inputs[0]
            and all(a is b for a, b in zip(known[1][1:], inputs[1:]))
        ):
            return known[2]
        item = _new_item(message, kind, position, *inputs[1:])
        self._items[id(message)] = (message, inputs, item)
        return item

    def _unkept_item(self, record: dict, seq: int, namespace: str) -> TraceItem:
        known = self._unkept.get(id(record))
        if known is not None and known[0] is record and known[1:3] == (seq, namespace):
            return known[3]
        item = _unkept_call(record, seq, namespace)
        self._unkept[id(record)] = (record, seq, namespace, item)
        return item

    def trace(self) -> Trace:
        """Steps in the order they first appear, each agent's consecutive messages one
        node; the calls whose reply no message holds at the end of their step."""
        if self._last is not None:
            return self._last
        laid, starts = self._laid, self._starts
        for position in range(laid.count, len(self._top)):
            self._lay(laid.steps, laid.asked, position, self._top[position])
        laid.count = len(self._top)
        # The kept layout is copied before what is done again is added: a trace given out
        # is never changed.
        steps = {
            where: [TraceNode(n.agent, list(n.items)) for n in nodes]
            for where, nodes in laid.steps.items()
        }
        asked = dict(laid.asked)
        inner_ids = set()
        touched = set()  # steps with messages or calls beyond the kept layout
        for position, said in enumerate(self._inner_kept(), start=laid.count):
            touched.add(self._lay(steps, asked, position, said))
            inner_ids.add(said[4])
        if self._named:  # calls that name a reply the messages lack; an older run's name none
            unkept = [
                c
                for mid, c in self._calls.items()
                if mid not in self._top_ids and mid not in inner_ids
            ] + self._unnamed
            for record, seq, step, namespace in sorted(unkept, key=lambda c: c[1]):
                node = record.get("node") or ""
                agent = _namespace_agent(namespace, node) if namespace else node
                where = _place(
                    steps,
                    1 + bisect_left(starts, seq),
                    step,
                    agent or "model",
                    self._unkept_item(record, seq, namespace),
                )
                touched.add(where)
        turns = max((turn for turn, _ in steps), default=1)
        self._last = Trace(
            [self._step(where, nodes, turns, touched) for where, nodes in steps.items()]
        )
        return self._last

    def _step(self, where: tuple, nodes: list[TraceNode], turns: int, touched: set) -> TraceStep:
        """The step as the last trace gave it when nothing in it changed since (so its
        label, made once, is not made again at each refresh: at 10,000 messages the labels
        were a pass over them all), else a new one."""
        laid = self._laid
        if where in touched:
            return TraceStep(where[0], where[1], nodes, turns)
        # The kept layout's nodes only grow at the end until it is laid out anew: the same
        # nodes holding as many items hold the same items.
        mark = (turns, tuple((id(n), len(n.items)) for n in laid.steps.get(where, ())))
        shown = laid.shown.get(where)
        if shown is not None and shown[0] == mark:
            return shown[1]
        made = TraceStep(where[0], where[1], nodes, turns)
        laid.shown[where] = (mark, made)
        return made

    def _lay(self, steps: dict, asked: dict, position: int, said: tuple) -> tuple[int, int]:
        """Lays one message out in ``steps``, after noting the tool calls it asks for."""
        message, seq, step, agent, mid, _ = said
        for c in message.get("tool_calls") or []:
            if isinstance(c, dict) and c.get("id"):
                asked[c["id"]] = c
        tagged = message.get("step")
        return _place(
            steps,
            1 + bisect_left(self._starts, seq),  # the turn: follow-ups started before it
            tagged if tagged is not None else step,
            message.get("agent") or agent or message.get("name") or "—",
            self._item(message, position, mid, asked),
        )


class _Layout:
    """Top-level messages laid out: (turn, step) -> its nodes, and the tool calls asked."""

    def __init__(self) -> None:
        self.count = 0
        self.steps: dict[tuple[int, int], list[TraceNode]] = {}
        self.asked: dict[str, dict] = {}  # tool call id -> the call a reply asked for
        self.shown: dict[tuple, tuple] = {}  # (turn, step) -> (its mark, the step given out)


def _place(
    steps: dict, turn: int, step: int | None, agent: str, item: TraceItem
) -> tuple[int, int]:
    """Puts ``item`` at the end of its step (a new node when another agent spoke last);
    gives the step's key."""
    if not (isinstance(step, int) and step > 0):
        step = 0
    nodes = steps.setdefault((turn, step), [])
    if not nodes or nodes[-1].agent != agent:
        nodes.append(TraceNode(agent))
    nodes[-1].items.append(item)
    return (turn, step)


def build_trace(events: list[dict]) -> Trace:
    """The run's trace from its stored "update" and "custom" events (any order; other
    kinds are passed over)."""
    return TraceBuilder().add(sorted(events, key=lambda e: e["seq"])).trace()
