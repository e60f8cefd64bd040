"""The model calls a live run is waiting on, in words: queued behind other calls at the
server, sent and waiting for the first token, or being written (tokens so far, rate).

Read from the engine's registry of calls in progress (``graph.models.call_progress``) at
each refresh of the run's panel: a slow reply is shown as progress, not mistaken for a
hung run. Calls of runs executing in this app process only (worker threads, the
default); runs in worker processes or on a LangGraph Server are not seen here.
"""

from __future__ import annotations

import time

import streamlit as st

from graph.models.call_progress import CALLS, SENT, WAITING, CallProgress


def call_line(call: CallProgress, now: float | None = None) -> str:
    """One call in progress, in words."""
    now = now if now is not None else time.monotonic()
    what = f"a {call.kind} call" if call.kind else "a model call"
    took = f"{call.seconds(now):.0f} s"
    if call.state == WAITING:
        ahead = f"{call.ahead} call{'s' if call.ahead != 1 else ''} ahead"
        return f"Waiting for the model server: {ahead} ({what}, {took})."
    if call.state == SENT:
        return f"The model server has {what}: waiting for its first token ({took})."
    rate = call.tokens_per_s
    speed = f", {rate:.1f} tokens/s" if rate is not None else ""
    return f"The model is writing {what}: {call.tokens} tokens so far{speed} ({took})."


def show(run_id: str) -> None:
    """The run's calls in progress, one line each (nothing when there are none)."""
    now = time.monotonic()
    for call in CALLS.for_run(run_id):
        st.caption(f":material/hourglass_top: {call_line(call, now)}")
