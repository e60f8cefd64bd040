"""What the History page shows, computed without Streamlit: the runs table, a run's
checkpoint timeline and its diffs in words, which checkpoints can be forked, and a
plan typed by hand checked before a fork runs it.
"""

from __future__ import annotations

import time
from datetime import datetime

from graph.kernel.system import System, get_system, systems
from graph.service.store import RunRecord
from ui.run_times import ago, format_duration, idle_spans
from ui.system_view import SystemView
from ui.views import view_of

NONE = "—"


def short_id(run_id: str | None) -> str:
    return run_id[:8] if run_id else ""


def clip(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def agents_label(design: dict) -> str:
    enabled = (design or {}).get("enabled_agents") or []
    system = systems().get((design or {}).get("system") or "")
    if system is not None and list(enabled) == list(system.agents):
        return f"all {len(system.agents)} agents"
    return ", ".join(enabled) or "no agents"


def prompts_label(versions: dict, labels: dict[int, str]) -> str:
    """Which stored prompt versions a run used; the rest were the shipped defaults."""
    if not versions:
        return "shipped defaults"
    return ", ".join(
        f"{name.rsplit('/', 1)[-1]}: {labels.get(vid, f'#{vid}')}"
        for name, vid in sorted(versions.items())
    )


# The runs table's columns on screen and their widths (px): 770 px in all, so it fits
# the page at 1280 px with the sidebar open (the grid adds a few px of its own). The
# whole question is shown above the opened run.
LISTED_COLUMNS = {
    "Started": 135,
    "Question": 150,
    "System": 120,
    "Status": 65,
    "Counts": 135,
    "Duration": 60,
    "Origin": 105,
}

COLUMN_HELP = {
    "Counts": "What the run's system counts of it: steps and replans of a plan, requests "
    "and messages of a bus, subtasks of teams.",
    "Duration": "Time at work: waits for a person, step-mode pauses and the pace's holds "
    "are left out.",
}


def origin_label(record: RunRecord, place: dict | None = None) -> str:
    """Where a run came from: "fork of 1a2b3c4d", "replay of …", or its experiment's
    variant ("short plans in two questions"); empty for a run asked on the Run page."""
    if place:
        return f"{place['variant']} in {place['experiment']}"
    if not record.parent_run:
        return ""
    model = (record.design or {}).get("model") or {}
    return f"{'replay' if model.get('replay_of') else 'fork'} of {short_id(record.parent_run)}"


def counts_label(record: RunRecord) -> str:
    """A run's counts in its system's words ("Steps 3 · Replans 1"); a count its system
    gives no label (or a system no longer hosted) by its own name."""
    named = view_of(record.system).count_labels if record.system in systems() else {}
    return " · ".join(f"{named.get(k, k.capitalize())} {v}" for k, v in record.counts.items())


def system_title(name: str) -> str:
    try:
        return get_system(name).title
    except ValueError:  # a run of a system this app no longer hosts
        return name


def work_seconds(record: RunRecord, idle_events: list[dict], now: float) -> float | None:
    """The run's time at work: its wall time less the waits for a person, the step-mode
    pauses and the pace holds within it (``Store.idle_events``)."""
    wall = record.duration_s
    if wall is None or record.started_at is None:
        return wall
    start, end = record.started_at, record.started_at + wall
    idle = sum(
        max(0.0, min(end, b) - max(start, a)) for a, b, _ in idle_spans(idle_events, now=now)
    )
    return max(0.0, wall - idle)


def history_rows(
    runs: list[RunRecord],
    labels: dict[int, str],
    places: dict[str, dict] | None = None,
    idle: dict[str, list[dict]] | None = None,
) -> list[dict]:
    now = time.time()
    return [
        {
            "Run": short_id(r.id),
            "Question": r.question,
            "System": system_title(r.system),
            "Status": r.status,
            "Origin": origin_label(r, (places or {}).get(r.id)),
            "Counts": counts_label(r),
            "Duration": format_duration(work_seconds(r, (idle or {}).get(r.id, []), now)),
            "Agents": agents_label(r.design),
            "Prompts": prompts_label(r.prompt_versions, labels),
            "Started": human_time(r.created_at),
        }
        for r in runs
    ]


def human_time(ts: float, now: float | None = None) -> str:
    """A moment as a person reads it: "05:28:41, 2 min ago" (the date first when it is
    not today), never an epoch number."""
    if not ts or ts <= 0:  # a record that holds no time (see Store._run_record)
        return "unknown time"
    now = time.time() if now is None else now
    when = datetime.fromtimestamp(ts)
    same_day = when.date() == datetime.fromtimestamp(now).date()
    clock = when.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S")
    return f"{clock}, {ago(now - ts)} ago"


def _is_moment(key, value) -> bool:
    """A field holding a time: ``…_at`` with a number of seconds since 1970."""
    return (
        str(key).endswith("_at")
        and isinstance(value, (int, float))
        and not isinstance(value, bool)
        and value > 1e9
    )


def _words(value, now: float | None = None) -> str:
    """Nested data as words: "key value, key value", inner maps in parentheses, times
    as human times; JSON is for the raw view only."""
    if isinstance(value, dict):
        parts = []
        for key, inner in value.items():
            if _is_moment(key, inner):
                shown = human_time(inner, now)
            elif isinstance(inner, (dict, list)):
                shown = f"({_words(inner, now)})" if inner else NONE
            else:
                shown = NONE if inner is None else str(inner)
            parts.append(f"{key} {shown}")
        return ", ".join(parts)
    if isinstance(value, list):
        return "; ".join(_words(v, now) if isinstance(v, (dict, list)) else str(v) for v in value)
    return str(value)


def show_value(value) -> str:
    """A state value in one readable line."""
    if value is None or value == {} or value == []:
        return NONE
    if isinstance(value, dict) and "agent" in value and "action" in value:  # a plan step
        text = f"{value['agent']}: {value['action']}"
        return text + (" [asks approval]" if value.get("approval") else "")
    if isinstance(value, dict) and "kind" in value and "step" in value:  # a human request
        return f"{value['kind']} of step {value['step']} ({value.get('agent')})"
    if isinstance(value, (dict, list)):
        return _words(value)
    return str(value)


def _plan_summary(plan: dict | None) -> str:
    if not plan:
        return NONE
    agents = [plan[k].get("agent", "?") for k in sorted(plan, key=int)]
    return f"{len(agents)} step(s): {' → '.join(agents)}"


def _per_step(value: dict | None) -> str:
    if not value:
        return NONE
    return ", ".join(f"{k}: {v}" for k, v in sorted(value.items(), key=lambda kv: int(kv[0])))


def name_fork_origin(timeline: list[dict], parent_run: str | None) -> list[dict]:
    """A fork's first checkpoint is the state copied from its parent, not an input."""
    if not parent_run or not timeline:
        return timeline
    return [{**timeline[0], "node": f"fork of {short_id(parent_run)}"}, *timeline[1:]]


def _cell(value) -> str:
    """One timeline cell in short form: a plan as its agents, a per-step map as
    step: value pairs, a flag as yes / no, anything else as one clipped line."""
    if (
        isinstance(value, dict)
        and value
        and all(isinstance(v, dict) and "agent" in v for v in value.values())
    ):  # a plan
        return _plan_summary(value)
    if isinstance(value, dict) and value and all(str(k).isdigit() for k in value):
        if all(isinstance(v, (int, str)) and len(str(v)) < 20 for v in value.values()):
            return _per_step(value)
        return "steps " + ", ".join(sorted(value, key=int))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return NONE
    return clip(show_value(value))


def timeline_rows(timeline: list[dict], system: SystemView) -> list[dict]:
    """One row per checkpoint: the node that produced it, what runs next, which of the
    system's state fields changed, their values at that point, and the last message."""
    rows = []
    for point in timeline:
        row = {
            "#": point["index"],
            "After": point["node"],
            "Next": ", ".join(point["next"]) or "(end)",
            "Changed": ", ".join(system.field_label(f) for f in point["diff"])
            or ("(first)" if not point["index"] else NONE),
        }
        for name, value in point["fields"].items():
            row[system.field_label(name)] = _cell(value)
        row["Last message"] = clip(point["messages"][-1], 120) if point["messages"] else NONE
        rows.append(row)
    return rows


def changed_columns(point: dict, system: SystemView) -> list[str]:
    """The timeline columns to highlight for a checkpoint: the fields that changed."""
    return [system.field_label(f) for f in point["diff"]]


DIFF_CLIP = 120  # characters of a before/after cell; the full text is one click away


def diff_changes(diff: dict, label=str) -> list[dict]:
    """A checkpoint's diff in words, one row per changed value, in full: a map (plan,
    step_status, ...) gives one row per key that changed, anything else one row.
    ``label`` names a field as the page does (the system's field label)."""
    rows = []
    for name, change in diff.items():
        before, after = change.get("before"), change.get("after")
        if (
            isinstance(before, (dict, type(None)))
            and isinstance(after, (dict, type(None)))
            and (before or after)
            and name != "human_request"
        ):
            before, after = before or {}, after or {}
            for key in sorted(set(before) | set(after), key=lambda k: (len(str(k)), str(k))):
                if before.get(key) != after.get(key):
                    rows.append(_change(label(name), str(key), before.get(key), after.get(key)))
        else:
            rows.append(_change(label(name), "", before, after))
    return rows


def _change(field: str, key: str, before, after) -> dict:
    return {"Field": field, "Key": key, "Before": _words_of(before), "After": _words_of(after)}


def _words_of(value) -> str:
    """A before/after value as words: a flag as yes / no, nested data via ``show_value``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return " ".join(show_value(value).split())


def diff_rows(diff: dict, label=str, limit: int = DIFF_CLIP) -> list[dict]:
    """The diff as the page's before/after table: each value clipped to ``limit``
    characters (``long_changes`` holds the full text of the clipped ones)."""
    return [
        {**row, "Before": clip(row["Before"], limit), "After": clip(row["After"], limit)}
        for row in diff_changes(diff, label)
    ]


def long_changes(diff: dict, label=str, limit: int = DIFF_CLIP) -> list[dict]:
    """The changes whose before or after the table clips: shown in full on demand."""
    return [
        row
        for row in diff_changes(diff, label)
        if len(row["Before"]) > limit or len(row["After"]) > limit
    ]


def forkable(timeline: list[dict]) -> list[dict]:
    """Checkpoints a run can go on from: not the input, not the end (a fork's first
    checkpoint is neither: the state it was forked with)."""
    return [
        p
        for i, p in enumerate(timeline)
        if not p["input"] and p["next"] and (i == 0 or timeline[i - 1]["next"])
    ]


def checkpoint_label(point: dict) -> str:
    step = point["fields"].get("current_step")
    upcoming = f"next: {', '.join(point['next'])}" if point["next"] else "the end"
    label = f"#{point['index']} after {point['node']} · {upcoming}"
    return label + (f" · step {step}" if step else "")


def editable_fields(point: dict, system: System) -> list[str]:
    """The state fields a fork may change at this checkpoint (those the system has)."""
    return [f for f in system.forks.fork_fields if f in point["fields"]]
