"""What the Run page shows of a run, computed from the store without Streamlit.

Kept free of ``st.*`` so the benchmark can time exactly the work the page does on each
refresh, and so the rules (how long a step took, which node runs now) are testable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from graph.kernel.accounting import Usage, format_cost, model_modes, usage_by_step
from graph.kernel.render import walked_edges
from graph.models.modes import describe_structured, describe_tools
from graph.service.store import LIVE_STATUSES, SETTLED_STATUSES, RunRecord, Store
from graph.settings import get_settings
from ui.run_times import format_duration, idle_spans, idle_words, step_durations, work_time
from ui.system_view import SystemView
from ui.view_models import Panel, RunFacts
from ui.views import view_of

POLL_S = 0.5  # how often the Run page rereads the store while a run is live
WATCH_S = 1.0  # how often a page looks for a decision taken elsewhere (another tab, a timeout)

ACCOUNTING_COLUMNS = ("LLM calls", "Tokens in", "Tokens out", "LLM time", "Cost")
ANSWERED = "Calls answered"  # a replay's or fork's step: replayed, live, or both
DECISION_WORDS = {
    "approve": "approved",
    "edit": "approved with an edited query",
    "reject": "rejected",
    "skip": "skipped",
    "retry": "retry asked",
}


@dataclass
class RunView:
    record: RunRecord
    system: SystemView  # how its system is presented (``.system``: the engine's side)
    snapshot: dict
    facts: RunFacts  # what the store knows beyond the state, for the system's panels
    panels: list[Panel]
    nodes_run: list[str]
    taken: list[tuple[str, str]]
    latest_seq: int
    usage: dict[int | None, Usage] = field(default_factory=dict)  # per step; 0: the first plan
    total: Usage = field(default_factory=Usage)
    modes: dict = field(default_factory=dict)  # how the model server was asked, and why
    notices: list[str] = field(default_factory=list)  # engine and model adapter notes
    refused: list[str] = field(default_factory=list)  # follow-ups the run could not take
    work_s: float | None = None  # time spent working: pauses and waits left out
    idle: list[str] = field(default_factory=list)  # those pauses and waits, in words

    @property
    def live(self) -> bool:
        return self.record.is_live

    @property
    def header(self) -> list[str]:
        """The run's figures in words, as its system counts them."""
        return self.system.facts(self.snapshot, self.snapshot.get("counts") or self.record.counts)


def run_mode(status: str) -> str:
    """What a page does about a run: poll it ("live"), watch for someone else's action
    ("waiting" for a human, "paused" in step mode), or nothing ("ended")."""
    if status in LIVE_STATUSES:
        return "live"
    return status if status in SETTLED_STATUSES else "ended"


def decision_records(update_events: list[dict]) -> list[dict]:
    """Every decision of the run, in order: the human node's ``approvals`` updates."""
    found = []
    for event in update_events:
        if event.get("node") == "human" and not event.get("namespace"):
            found += [
                r for r in (event.get("data") or {}).get("approvals") or [] if isinstance(r, dict)
            ]
    return found


def decision_label(record: dict) -> str:
    """A decision in a few words for the step table: what, by whom, why."""
    text = DECISION_WORDS.get(str(record.get("decision")), str(record.get("decision")))
    if record.get("kind") == "escalation":
        text = f"at the cap: {text}"
    if record.get("by") == "timeout":
        text = f"timed out, {text}"
    if record.get("decision") in ("reject", "retry") and record.get("reason"):
        text += f" ({record['reason']})"
    return text


def answered_cell(usage: Usage | None) -> str:
    """How a step's model calls were answered, in words, in a replay or a fork: "replayed"
    (from the recording), "live" (by the model), or both with their numbers."""
    if usage is None or not (usage.replayed or usage.live):
        return "–"
    if not usage.live:
        return "replayed"
    if not usage.replayed:
        return "live"
    return f"{usage.replayed} replayed, {usage.live} live"


def usage_cells(usage: Usage | None, answered: bool = False) -> dict:
    """A step's model-use cells; ``answered``: with the "Calls answered" cell (a run
    whose calls say whether they were replayed or live)."""
    cells = _usage_cells(usage)
    if answered:
        cells[ANSWERED] = answered_cell(usage)
    return cells


def _usage_cells(usage: Usage | None) -> dict:
    if usage is None or not usage.calls:
        return dict.fromkeys(ACCOUNTING_COLUMNS, "–")
    # text, like the "–" of a step without calls: one type per column
    return {
        "LLM calls": str(usage.calls),
        "Tokens in": f"{usage.input_tokens:,}",
        "Tokens out": f"{usage.output_tokens:,}",
        "LLM time": f"{usage.latency_s:.2f} s",
        "Cost": format_cost(usage.cost),
    }


def usage_summary(total: Usage, before: Usage | None, label: str | None = None) -> str:
    """The run's totals in one line; ``label`` names the calls made before step 1 (the
    first plan's), which belong to no step."""
    if not total.calls:
        return "No model call yet."
    cost = format_cost(total.cost)
    if total.cost is None:
        cost += f" (no price for {', '.join(sorted(total.unpriced))})"
    text = (
        f"**Run totals:** {total.calls} LLM call(s) · {total.input_tokens:,} tokens in · "
        f"{total.output_tokens:,} tokens out · {total.latency_s:.2f} s in the model · "
        f"cost {cost}"
    )
    if total.replayed or total.live:
        text += (
            f" · {total.replayed} replayed from the recording (no request), "
            f"{total.live} live (asked the model)"
        )
    if label and before is not None and before.calls:
        text += (
            f" — including {label}: {before.calls} "
            f"call(s), {before.input_tokens + before.output_tokens:,} tokens"
        )
    return text


def step_cells(
    durations: dict[int, float],
    decisions: list[dict],
    usage: dict[int | None, Usage],
    answered: bool = False,
) -> dict[int, dict[str, str]]:
    """Per step, the cells every step table carries: the human decisions, the time it
    took and its model use, in words (``answered``: whether its calls were replayed or
    live, for a replay or a fork)."""
    by_step: dict[Any, list[str]] = {}  # by the decision's step as recorded
    for record in decisions:
        by_step.setdefault(record.get("step"), []).append(decision_label(record))
    steps = {*durations, *by_step, *(k for k in usage if isinstance(k, int))}
    return {
        step: {
            "Decision": "; ".join(by_step.get(step, [])),
            "Duration": format_duration(durations.get(step)),
            **usage_cells(usage.get(step), answered),
        }
        for step in steps
    }


def paused_before(events: list[dict]) -> str:
    """The node a run paused in step mode runs next (from its last "end" event)."""
    for event in reversed(events):
        if event["kind"] == "end":
            upcoming = (event.get("data") or {}).get("next") or []
            return ", ".join(upcoming)
    return ""


def paused_rows(panels: list[Panel], upcoming: str) -> list[Panel]:
    """A run paused before a node does no work: a row its state calls "running" reads
    "paused — next: <node>", so the table agrees with the header."""
    if not upcoming:
        return panels
    for panel in panels:
        column = panel.status_column
        if column:
            panel.rows = [
                {**row, column: f"paused — next: {upcoming}"}
                if row.get(column) == "running"
                else row
                for row in panel.rows
            ]
    return panels


def guardrail_marks(snapshot: dict, guardrail: bool) -> dict[int, str] | None:
    """Per step, the guardrail's mark when the run has the guardrail on (or has flags): a
    step whose tool results carried instructions aimed at the agents is flagged."""
    flags = ((snapshot or {}).get("conversation") or {}).get("guardrail_flags") or []
    if not (guardrail or flags):
        return None
    counts: dict = {}
    for flag in flags:
        counts[flag.get("step")] = counts.get(flag.get("step"), 0) + 1
    return {step: "⚑ flagged" if n == 1 else f"⚑ flagged ×{n}" for step, n in counts.items()}


def load_run_view(
    store: Store,
    run_id: str,
    now: float | None = None,
    prices: dict | None = None,
    events: list[dict] | None = None,
    record: RunRecord | None = None,
) -> RunView | None:
    """Everything the run's live part of the page needs, in a handful of store reads.
    ``events``: the run's events when the caller has them (the page's ``EventFeed``, which
    reads only new ones), else they are read here. ``record``: the run as the page gives
    it (``services.run_record``), else as the store has it."""
    record = record or store.run(run_id)
    if record is None:
        return None
    system = view_of(record.system)
    snapshot = store.snapshot(run_id) or {}
    end_ts = record.finished_at if not record.is_live else (now or time.time())
    if not record.is_live and end_ts is None:
        end_ts = record.started_at
    kinds = ("state", "update", "custom", "end")
    timeline = (
        store.events(run_id, kinds=kinds)
        if events is None
        else [e for e in events if e["kind"] in kinds]
    )
    idle = idle_spans(timeline, now=now or time.time())
    events = [e for e in timeline if e["kind"] != "end"]
    durations = step_durations([e for e in events if e["kind"] == "state"], end_ts, idle)
    updates = [e for e in events if e["kind"] == "update"]
    top = [e for e in updates if not e["namespace"]]
    nodes = [e["node"] for e in top]
    custom = [e for e in events if e["kind"] == "custom"]
    usage, total = usage_by_step(custom, get_settings().prices if prices is None else prices)
    answered = bool(total.replayed or total.live)
    facts = RunFacts(
        live=record.is_live,
        cells=step_cells(durations, decision_records(top), usage, answered),
        blank={"Decision": "", "Duration": "", **usage_cells(None, answered)},
        flags=guardrail_marks(snapshot, bool((record.design or {}).get("guardrail"))),
        updates=updates,
        paused_next=paused_before(timeline) if record.status == "paused" else "",
    )
    return RunView(
        record=record,
        system=system,
        snapshot=snapshot,
        facts=facts,
        panels=paused_rows(system.panels(snapshot, facts), facts.paused_next),
        nodes_run=nodes,
        taken=walked_edges(
            [(e["namespace"], e["node"]) for e in updates], finished=record.status == "done"
        ),
        latest_seq=store.latest_seq(run_id),
        usage=usage,
        total=total,
        modes=model_modes(custom),
        notices=run_notices(snapshot, custom),
        refused=refused_sends(custom),
        work_s=work_time(timeline, end_ts, idle),
        idle=idle_words(idle),
    )


def refused_sends(custom_events: list[dict]) -> list[str]:
    """Follow-ups a live run could not take (the service logs them as it stops), from the
    run's custom events as the page's incremental feed read them."""
    found = []
    for event in custom_events:
        data = event.get("data") or {}
        if isinstance(data, dict) and data.get("kind") == "redirect_refused":
            note = (data.get("note") or "").removeprefix("Follow-up message: ")
            found.append(f"Not sent: “{note}”. {data.get('reason', '')}")
    return found


def run_notices(snapshot: dict, custom_events: list[dict]) -> list[str]:
    """What the engine noted in the run's state (repairs, guards that fired) and what the
    model adapter noted on its calls (a fallback, a repeated tool call), once each."""
    notes = list(snapshot.get("notices") or [])
    for event in custom_events:
        call = (
            (event.get("data") or {}).get("llm_call")
            if isinstance(event.get("data"), dict)
            else None
        )
        notes += (call or {}).get("notes") or []
    return list(dict.fromkeys(notes))


def modes_text(modes: dict) -> str:
    """How a run asked its model server, in words, with why it is not the strongest way:
    "Structured output: json_object with the schema — The server refused json_schema …"."""
    parts = []
    for kind, title, describe in (
        ("structured", "Structured output", describe_structured),
        ("tools", "Tool calling", describe_tools),
    ):
        used = (modes or {}).get(kind) or {}
        if used:
            parts.append(
                f"{title}: "
                + "; ".join(
                    describe(mode) + (f" — {why.split('; used ')[0].rstrip('.')}" if why else "")
                    for mode, why in used.items()
                )
            )
    return " · ".join(parts)


def run_label(record: RunRecord, place: dict | None = None) -> str:
    """The run in a list: when, its question, its short id, and for an experiment's run
    which variant and repeat (``place`` from ``Evals.experiment_places``): without it two
    variants' runs of one question read the same. The short id keeps two runs of one
    question started in the same second apart (a fork and its parent, say): a select box
    sends the label it shows, so two equal labels would choose the first of them."""
    when = (
        datetime.fromtimestamp(record.created_at).strftime("%H:%M:%S")
        if record.created_at > 0
        else "unknown time"  # a record that holds no time (see Store._run_record)
    )
    question = record.question if len(record.question) <= 70 else record.question[:69] + "…"
    label = (
        f"{when} · {question} · {record.id[:8]}"  # the status is shown beside the run, always fresh
    )
    if place:
        label += f" · {place['experiment']}: {place['variant']}"
        if place.get("repeats", 1) > 1:
            label += f", repeat {place['repeat'] + 1} of {place['repeats']}"
    return label


def message_title(message: dict) -> str:
    """Who sent a message to whom, and what it is, in one line."""
    kind, name, agent = message.get("type"), message.get("name"), message.get("agent")
    if agent == "human":  # a decision on a step, by a person or by the approval timeout
        title = "approval timeout · default decision" if name == "timeout" else "human · decision"
        return title + (f" (step {message['step']})" if message.get("step") is not None else "")
    if kind == "human":
        title = {
            "user": "user · question",
            "agent_query": f"{agent}'s request · what the agent was asked",
            "synthesizer_prompt": f"prompt sent to {agent}",
        }.get(str(name), f"{name or 'human'} · request")
    elif kind == "ai":
        title = f"{name or agent or 'model'} · model reply"
        if message.get("tool_calls"):
            title += ", calling a tool"
    elif kind == "tool":
        title = f"tool {name} · result"
    else:
        title = f"{name or kind} · {kind}"
    where = [f"step {message['step']}"] if message.get("step") is not None else []
    if agent:
        where.append(agent)
    return title + (f" ({', '.join(where)})" if where else "")
