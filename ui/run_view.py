"""What the Run page shows of a run, computed from the store without Streamlit.

Kept free of ``st.*`` so the benchmark can time exactly the work the page does on each
refresh, and so the rules (how long a step took, which node runs now) are testable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from graph.render import taken_edges
from graph.store import RunRecord, Store

POLL_S = 0.5  # how often the Run page rereads the store while a run is live

ENDED_STEP = ("done", "skipped", "failed")
TABLE_COLUMNS = ("Step", "Agent", "Action", "Status", "Replans", "Duration")


@dataclass
class RunView:
    record: RunRecord
    rows: list[dict]  # the step table, one dict per step, keys TABLE_COLUMNS
    snapshot: dict
    nodes_run: list[str]
    taken: list[tuple[str, str]]
    latest_seq: int
    durations: dict[int, float] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.record.is_live

    @property
    def plan_history(self) -> list[dict]:
        return self.snapshot.get("plan_history") or []


def step_durations(state_events: list[dict], end_ts: float | None) -> dict[int, float]:
    """Seconds each step has taken: from the first state where it runs to the first where
    it has ended (done, skipped, failed); a step still going counts up to ``end_ts``."""
    started: dict[int, float] = {}
    ended: dict[int, float] = {}
    for event in state_events:
        for row in (event.get("data") or {}).get("rows") or []:
            step, status = row["step"], row["status"]
            if status == "pending":
                continue
            started.setdefault(step, event["ts"])
            if status in ENDED_STEP:
                ended.setdefault(step, event["ts"])
            else:
                ended.pop(step, None)  # replanned and running again
    durations = {}
    for step, start in started.items():
        end = ended.get(step, end_ts)
        if end is not None:
            durations[step] = max(0.0, end - start)
    return durations


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def table_rows(snapshot: dict | None, durations: dict[int, float]) -> list[dict]:
    rows = []
    for row in (snapshot or {}).get("rows") or []:
        rows.append({"Step": row["step"], "Agent": row["agent"], "Action": row["action"],
                     "Status": row["status"], "Replans": row["replans"],
                     "Duration": format_duration(durations.get(row["step"]))})
    return rows


def load_run_view(store: Store, run_id: str, now: float | None = None) -> RunView | None:
    """Everything the run's live part of the page needs, in a handful of store reads."""
    record = store.run(run_id)
    if record is None:
        return None
    snapshot = store.snapshot(run_id) or {}
    end_ts = record.finished_at if not record.is_live else (now or time.time())
    if not record.is_live and end_ts is None:
        end_ts = record.started_at
    durations = step_durations(store.events(run_id, kinds=("state",)), end_ts)
    nodes = store.nodes_run(run_id)
    return RunView(record=record, rows=table_rows(snapshot, durations), snapshot=snapshot,
                   nodes_run=nodes, taken=taken_edges(nodes), latest_seq=store.latest_seq(run_id),
                   durations=durations)


def next_nodes(compiled, run_id: str) -> tuple[str, ...]:
    """The nodes the run's latest checkpoint will run next: the one running now."""
    try:
        return tuple(compiled.get_state({"configurable": {"thread_id": run_id}}).next)
    except Exception:  # no checkpoint yet, or a checkpoint this build cannot read
        return ()


def run_label(record: RunRecord) -> str:
    when = datetime.fromtimestamp(record.created_at).strftime("%H:%M:%S")
    question = record.question if len(record.question) <= 70 else record.question[:69] + "…"
    return f"{when} · {question}"  # the status is shown beside the run, always fresh


def plan_history_rows(version: dict) -> list[dict]:
    return [{"Step": int(key), "Agent": block.get("agent", "?"), "Action": block.get("action", "")}
            for key, block in sorted((version.get("plan") or {}).items(), key=lambda kv: int(kv[0]))]


def message_filters(messages: list[dict]) -> tuple[list[int], list[str]]:
    """The steps and agents the run's messages belong to, for the filter boxes."""
    steps = sorted({m["step"] for m in messages if isinstance(m.get("step"), int)})
    agents = sorted({m["agent"] for m in messages if m.get("agent")})
    return steps, agents


def filter_messages(messages: list[dict], step: int | None, agent: str | None) -> list[dict]:
    return [m for m in messages
            if (step is None or m.get("step") == step) and (agent is None or m.get("agent") == agent)]


def message_title(message: dict) -> str:
    """Who sent a message to whom, and what it is, in one line."""
    kind, name, agent = message.get("type"), message.get("name"), message.get("agent")
    if kind == "human":
        title = {"user": "user · question",
                 "agent_query": f"executor → {agent} · the step's request",
                 "synthesizer_prompt": "prompt sent to the synthesizer"}.get(
                     name, f"{name or 'human'} · request")
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
