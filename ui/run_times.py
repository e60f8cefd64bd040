"""A run's time in words, without Streamlit: how long each step worked, the run's idle
spans (a pace's hold, a wait for a human, a pause in step mode) and how long ago
something happened. The Run and History pages and the Approvals inbox use them.
"""

from __future__ import annotations

from typing import Sequence

ENDED_STEP = ("done", "skipped", "failed")

IDLE_WORDS = {
    "waiting": "waited {} for a decision",
    "paused": "paused {} in step mode",
    "paced": "held {} by the pace",
    "between": "idle {} between messages",
}


def idle_spans(events: list[dict], now: float | None = None) -> list[tuple[float, float, str]]:
    """Spans in which the run did no work, with why: each hold of the pace, and each gap
    from an "end" event (waiting for a human, paused in step mode, a finished turn) to
    the run's next event; a run still waiting or paused is idle up to ``now``."""
    spans: list[tuple[float, float, str]] = []
    since: tuple[float, str] | None = None
    holds: dict[float, int] = {}  # a hold's start -> its place in ``spans``
    for event in events:  # in the order they were logged
        data = event.get("data") or {}
        if since is not None:
            spans.append((since[0], event["ts"], since[1]))
            since = None
        if event["kind"] == "end":
            status = data.get("status") if isinstance(data, dict) else None
            since = (event["ts"], status if status in ("waiting", "paused") else "between")
        elif event["kind"] == "custom" and isinstance(data, dict):
            # a hold as it starts ("pacing", what it will be, up to now) and as it ends
            # ("paced", what it was): the work time never counts a hold, even mid-hold
            for word in ("pacing", "paced"):
                if isinstance(held := data.get(word), dict):
                    end = held["from"] + held["seconds"]
                    if word == "pacing" and now is not None:
                        end = min(end, now)
                    span = (held["from"], end, "paced")
                    if held["from"] in holds:
                        spans[holds[held["from"]]] = span
                    else:
                        holds[held["from"]] = len(spans)
                        spans.append(span)
    if since is not None and since[1] != "between" and now is not None:
        spans.append((since[0], now, since[1]))
    return spans


def _idle_within(spans: list[tuple[float, float, str]], start: float, end: float) -> float:
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b, _ in spans)


def work_time(
    events: list[dict], end_ts: float | None, spans: list[tuple[float, float, str]]
) -> float | None:
    """Seconds of work: from the first event to ``end_ts`` (or the last event), less
    every idle span."""
    if not events:
        return None
    start, end = events[0]["ts"], end_ts if end_ts is not None else events[-1]["ts"]
    return max(0.0, end - start - _idle_within(spans, start, end))


def idle_words(spans: list[tuple[float, float, str]]) -> list[str]:
    """The idle time in words, by why ("waited 21.0 s for a decision")."""
    totals: dict[str, float] = {}
    for a, b, why in spans:
        totals[why] = totals.get(why, 0.0) + max(0.0, b - a)
    return [
        IDLE_WORDS[why].format(format_duration(seconds))
        for why, seconds in totals.items()
        if seconds >= 0.05
    ]


def step_durations(
    state_events: list[dict],
    end_ts: float | None,
    idle: Sequence[tuple[float, float, str]] = (),
) -> dict[int, float]:
    """Seconds of work each step has taken: from the first state where it runs to the
    first where it has ended (done, skipped, failed), less the run's idle spans (a pause,
    a wait for a human); a step still going counts up to ``end_ts``."""
    started: dict[int, float] = {}
    ended: dict[int, float] = {}
    for event in state_events:
        for row in (event.get("data") or {}).get("rows") or []:
            if "step" not in row:  # another system's rows (hierarchical_teams: subtasks)
                continue
            step, status = row["step"], row["status"]
            if status in ("pending", "waiting"):  # not started: nothing runs while a human decides
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
            durations[step] = max(0.0, end - start - _idle_within(list(idle), start, end))
    return durations


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def ago(seconds: float) -> str:
    """How long ago, in the largest unit that fits: "5 s", "2 min", "1 h 05 min", "2 d"."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86_400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86_400} d"
