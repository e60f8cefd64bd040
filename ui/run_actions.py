"""What the Run page's controls do: fill in an example question, start a run, pick the
run to watch.

Kept out of the page file on purpose: Streamlit keeps a session's callbacks while the
session lives, even for a while after its tab closed, and a function defined in a page
keeps that page's whole namespace (the listed runs) alive with it.
"""

from __future__ import annotations

import logging

import streamlit as st

from graph.prompts import PromptError
from ui import access, services

log = logging.getLogger(__name__)


def use_example(question: str) -> None:
    st.session_state["run:question"] = question


def start() -> None:
    try:
        access.require("run")
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
    ``said`` above it while it is watched."""
    st.session_state[WATCHING] = run_id
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


# The run the page shows is kept in the session, not in the "Run to watch" widget: the
# browser sends back the widget values and address it had when it sent a rerun, and a
# rerun sent before it had drawn a new run (a live refresh, a status change) carried the
# old run. When the widget's value was the truth, Streamlit took that old value for a
# change of the user's, and the page fell back to the earlier run (seen in CI under load,
# the new run then waiting for a decision out of sight). Now the widget has one key per
# run it shows (``selector_key``): a value sent for an earlier widget is not this one's.
WATCHING = "run:watching"
SAID = "run:said"  # (run id, what starting it from another page said)


SELECTOR = "run:watch:"


def selector_key(run_id: str) -> str:
    return f"{SELECTOR}{run_id}"


def watched_run(runs: list[str], asked: str | None, arrived: bool) -> str:
    """The run to show among ``runs`` (newest first): the address's (``asked``) on a
    visit, else the one this session watches, else the address's, else the newest."""
    kept = st.session_state.get(WATCHING)
    if asked in runs and (arrived or kept not in runs):
        choice = asked
    elif kept in runs:
        choice = kept
    else:
        choice = runs[0]
    st.session_state[WATCHING] = choice
    return choice


def select(key: str) -> None:
    """The user chose another run in the widget ``key``.

    Not when the widget sends the run it was drawn for: that is a browser that had not yet
    drawn the run shown since (a run just started) sending an earlier widget's value
    again. Streamlit keeps a widget's callback after the widget is gone and takes a value
    sent for it as a change, so the page went back to the run shown before Run was
    pressed (seen twice in whole suites under load: the new run then out of sight)."""
    chosen = st.session_state[key]
    if not is_choice(key, chosen):
        log.info("a stale value of the run selector %s ignored", key)
        return
    st.session_state[WATCHING] = chosen
    st.query_params["run"] = chosen


def is_choice(key: str, chosen: str) -> bool:
    """Whether the selector ``key`` sending ``chosen`` is a person's choice: another run
    than the one it was drawn for."""
    return chosen != key.removeprefix(SELECTOR)


def pace_choices(*also: float) -> list[float]:
    """The paces a page offers (seconds a node), with ``also`` (a design's or a run's own)."""
    return sorted({0.0, 0.5, 1.0, 2.0, *also})


def pace_label(seconds: float) -> str:
    return "as fast as possible" if not seconds else f"{seconds:g} s per node"
