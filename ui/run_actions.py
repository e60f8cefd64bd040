"""What the Run page's controls do: fill in an example question, start a run, pick the
run to watch.

Kept out of the page file on purpose: Streamlit keeps a session's callbacks while the
session lives, even for a while after its tab closed, and a function defined in a page
keeps that page's whole namespace (the listed runs) alive with it.
"""

from __future__ import annotations

import streamlit as st

from graph.prompts import PromptError
from ui import services


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
    st.session_state["run:selected"] = st.session_state["run:last"] = run_id
    # Held until the page has drawn "Run to watch" with it: a rerun that cuts this one
    # short carries the browser's old choice of run, which would win over the new run.
    st.session_state["run:started"] = run_id
    st.query_params["run"] = run_id


def select() -> None:
    st.session_state["run:last"] = st.session_state["run:selected"]
    st.query_params["run"] = st.session_state["run:selected"]


def pace_label(seconds: float) -> str:
    return "as fast as possible" if not seconds else f"{seconds:g} s per node"
