"""What the Run page's controls do: fill in an example question, start a run, pick the
run to watch.

Kept out of the page file on purpose: Streamlit keeps a session's callbacks while the
session lives, even for a while after its tab closed, and a function defined in a page
keeps that page's whole namespace (the listed runs) alive with it.
"""

from __future__ import annotations

import logging
import time

import streamlit as st

from graph.prompts import PromptError
from ui import services

log = logging.getLogger(__name__)


def use_example(question: str) -> None:
    st.session_state["run:question"] = question


def start() -> None:
    try:
        design = services.run_design()
        pace = st.session_state.get("run:pace", design.pace_s)
        run_id = services.service().start(
            st.session_state.get("run:question", ""),
            design.model_copy(update={"pace_s": pace}),
            step_mode=st.session_state.get("run:step-mode", False),
        )
    except (ValueError, PromptError) as exc:
        st.session_state["run:error"] = str(exc)
        return
    log.info("run %s started from the Run page", run_id)
    watch(run_id)


def watch(run_id: str, said: str = "") -> None:
    """Show ``run_id`` on the Run page, just started (from there or another page), with
    ``said`` above it once."""
    st.session_state["run:selected"] = st.session_state["run:last"] = run_id
    st.session_state[STARTED] = (run_id, time.monotonic())
    st.query_params["run"] = run_id
    if said:
        st.session_state[SAID] = (run_id, said)


def said_of(run_id: str) -> str | None:
    """What ``watch`` said of ``run_id``: shown while that run is the one watched (a page
    that reruns on its own as the run goes would take a one-time message away)."""
    found = st.session_state.get(SAID)
    if found and found[0] == run_id:
        return found[1]
    st.session_state.pop(SAID, None)
    return None


# For a few seconds after Run, the page keeps the new run whatever the browser says: a
# rerun the browser sent before it had drawn the new run (a live refresh, a status change)
# carries its old choice of run and old address, and the page fell back to the earlier run
# (seen in CI under load, the new run then waiting for a decision out of sight).
STARTED = "run:started"
SAID = "run:said"  # (run id, what starting it from another page said)
HOLD_STARTED_S = 5.0


def just_started() -> str | None:
    """The run Run started, while the browser may still send its old choice; else None."""
    started = st.session_state.get(STARTED)
    if started and time.monotonic() - started[1] < HOLD_STARTED_S:
        return started[0]
    return None


def select() -> None:
    st.session_state["run:last"] = st.session_state["run:selected"]
    st.query_params["run"] = st.session_state["run:selected"]


def pace_choices(*also: float) -> list[float]:
    """The paces a page offers (seconds a node), with ``also`` (a design's or a run's own)."""
    return sorted({0.0, 0.5, 1.0, 2.0, *also})


def pace_label(seconds: float) -> str:
    return "as fast as possible" if not seconds else f"{seconds:g} s per node"
