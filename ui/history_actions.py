"""What the History page's controls do: open a run, clear the filter, import a run, delete
one, fork or replay one, and the export files it offers (the run, its trace).

Kept out of the page file on purpose: Streamlit keeps a session's callbacks (and each
``format_func``) while the session lives, even for a while after its tab closed, and a
function defined in a page keeps that page's whole namespace alive with it: the listed
runs, the opened run's checkpoints. These functions read what they need from the
process-wide services when they are called.
"""

from __future__ import annotations

import json

import streamlit as st

from graph.kernel.design import Design
from graph.service.import_checks import ImportProblem, load_json
from graph.service.otlp import otlp_json
from graph.service.run_spans import stored_trace
from ui import access, moved_tabs, services, widgets
from ui import history_view as hv
from ui.roles import Refused
from ui.run_actions import pace_label

FLASH = "history:flash"
OPENED = "history:opened"  # the opened run's id; None once the user unselected its row
FORKED = "history:forked"  # (new run id, confirmation): shown while that run is open
TAB = "history:tab"  # the opened run's tabs (ui.moved_tabs: a fork moves them to "Run")


def flash(kind: str, text: str) -> None:
    widgets.say(FLASH, kind, text)


def open_run(run_id: str | None) -> None:
    st.session_state[OPENED] = run_id
    if run_id:
        st.query_params["run"] = run_id
    else:
        st.query_params.pop("run", None)


def clear_filter() -> None:
    # dropped, not set to None: a select set to None shows "Choose an option"
    st.session_state.pop("history:status", None)
    st.session_state["history:text"] = ""


def import_run() -> None:
    upload = st.session_state.get("history:import")
    if upload is None:
        return
    try:  # ImportProblem names what is wrong; nothing of a refused file is stored
        access.require("run")
        run_id, notes = services.store().import_run_noting(load_json(upload.getvalue()))
    except (ImportProblem, Refused) as exc:
        flash("error", f"{upload.name} cannot be imported: {exc}")
        return
    flash(
        "success",
        " ".join(
            [f"Imported {upload.name} as run {hv.short_id(run_id)}; it is listed below.", *notes]
        ),
    )
    clear_filter()
    open_run(run_id)


def delete(run_id: str) -> None:
    """Forget the run (its events and checkpoints), whatever its record holds."""
    try:
        access.require("run")
        services.service().delete(run_id)
    except ValueError as exc:  # still in progress
        flash("error", str(exc))
        return
    flash("success", f"Deleted run {hv.short_id(run_id)}.")
    open_run(None)


def _pace_of(run_id: str) -> str:
    """A new run's pace in words, as its stored design says."""
    record = services.store().run(run_id)
    return pace_label(record.design["pace_s"]) if record else "unknown"


def replay(run_id: str) -> None:
    """A new run answered from ``run_id``'s recorded model calls, at the chosen pace."""
    try:
        access.require("run")
        new_id = services.service().replay(
            run_id,
            pace_s=st.session_state.get("history:replay-pace", 0.0),
            step_mode=st.session_state.get("history:replay-step-mode", False),
        )
    except ValueError as exc:
        flash("error", str(exc))
        return
    pace = _pace_of(new_id)
    st.session_state[FORKED] = (
        new_id,
        f"Started run {hv.short_id(new_id)}: a replay of {hv.short_id(run_id)}, every model "
        f"call answered from its recording (no model server), at a pace of {pace}. "
        "It is open below.",
    )
    clear_filter()
    open_run(new_id)
    moved_tabs.move_to(TAB, "Run")


def fork(run_id: str, checkpoint_id: str, change: str, design: Design) -> None:
    system = services.system_of(design)
    view = services.view_of_design(design)
    changes = {}
    if change != "nothing":
        text = st.session_state.get(f"history:change:{change}:{checkpoint_id}", "")
        if not text.strip():
            flash("error", f"The {view.field_label(change).lower()} is empty.")
            return
        try:
            changes[change] = system.forks.check_fork_change(change, text, design)
        except ValueError as exc:
            flash("error", str(exc))
            return
    try:
        access.require("run")
        new_id = services.service().fork(
            run_id,
            checkpoint_id,
            changes,
            step_mode=st.session_state.get("history:fork-step-mode", False),
            pace_s=st.session_state.get("history:fork-pace"),
        )
    except (ValueError, KeyError) as exc:
        flash("error", str(exc))
        return
    what = (
        "unchanged (run on from the checkpoint, the model asked again)"
        if change == "nothing"
        else f"with your {view.field_label(change).lower()}"
    )
    pace = _pace_of(new_id)
    st.session_state[FORKED] = (
        new_id,
        f"Started run {hv.short_id(new_id)}: a fork of {hv.short_id(run_id)}, "
        f"{what}, at a pace of {pace}. "
        "It is open below.",
    )
    clear_filter()
    open_run(new_id)
    moved_tabs.move_to(TAB, "Run")  # its steps, not the parent's fork form


def export_file(run_id: str) -> str:
    """The run's export as the file the Export tab offers."""
    return json.dumps(services.store().export_run(run_id), ensure_ascii=False, indent=1)


def trace_file(run_id: str, content: bool) -> str:
    """The run's trace as the OTLP/JSON file the Export tab offers: the spans an OTLP
    backend is sent as the run ends, message contents only when ``content``."""
    thread = services.service().thread_of(run_id)
    trace = stored_trace(services.store(), run_id, thread_id=thread, content=content)
    return json.dumps(otlp_json(trace), ensure_ascii=False, indent=1)
