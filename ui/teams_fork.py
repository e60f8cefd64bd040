"""The History page's view of what happened inside a run's teams (subgraphs), and a fork
that edits a field as a table (a teams run's subtask plan). The page calls ``inner_timeline``
in its timeline tab and ``table_editor`` in its fork tab, one line each; the rest is
computed without Streamlit (``inner_rows``, ``edit_summary``).

Checkpoints inside a team are shown, not forked: LangGraph forks a run from its top
graph, so a fork of a moment inside a team starts at the top-graph checkpoint before the
team started (its "Fork from"), and the team runs again from its start.
"""

from __future__ import annotations

import json
import logging

import pandas as pd
import streamlit as st

from graph.kernel.design import Design
from graph.kernel.inner_checkpoints import interleave
from ui import playground_view, services
from ui.history_view import clip
from ui.system_view import SystemView

log = logging.getLogger(__name__)

NONE = "—"
FORK_NOTE = (
    "A checkpoint inside a team or sub-agent is shown but cannot be forked (LangGraph "
    "forks a run from its top graph): to go on from there, fork from the top-graph "
    "checkpoint named in “Fork from”, the one before it started; it then runs again from "
    "its start."
)


def _what(point: dict) -> str:
    """What happened at a checkpoint, in a few words: the fields that changed, else the
    last message."""
    changed = ", ".join(point.get("diff") or {})
    if changed:
        return f"changed {changed}"
    return clip(point["messages"][-1], 100) if point.get("messages") else NONE


def inner_rows(merged: list[dict]) -> list[dict]:
    """One row per checkpoint, top graph and inside the teams, in order: inner ones
    labelled "inside search_team: searcher" and numbered under the top-graph checkpoint
    they ran from (#4.3), with the checkpoint a fork of that moment starts at."""
    by_id = {p["checkpoint_id"]: p for p in merged if not p["inside"]}
    rows = []
    for point in merged:
        inside = point["inside"]
        node = point["node"]
        if inside:
            where = f"↳ inside {inside}: {'its input' if node == 'input' else node}"
        else:
            where = f"top graph: {node}"
        subtask = (point.get("fields") or {}).get("current_subtask_id") or NONE
        origin = by_id.get(point["fork_from"])
        rows.append(
            {
                "#": point["position"],
                "Checkpoint": where,
                "Next": ", ".join(point["next"]) or "(end)",
                "Subtask": subtask,
                "What happened": _what(point),
                "Fork from": f"#{origin['index']}" if inside and origin else "",
            }
        )
    return rows


def inner_timeline(service, run_id: str, timeline: list[dict]) -> None:
    """Below the top graph's timeline: every checkpoint with those saved inside the
    run's teams placed after the one each ran from; nothing for a run without any."""
    if not timeline:
        return
    try:
        inner = service.inner_checkpoints(run_id)
    except Exception:  # a design this build cannot compile: the timeline above says so
        log.warning("no inner checkpoints for run %s", run_id, exc_info=True)
        return
    if not inner:
        return
    teams = sorted({p["inside"] for p in inner})
    record = service.store.run(run_id)
    # a system with teams saves checkpoints inside them; plan_execute inside its sub-agents
    has_teams = record is not None and bool(services.system_of(record.design).shape.teams)
    where, who = ("teams", "team") if has_teams else ("sub-agents", "sub-agent")
    st.markdown(f"**Inside the {where}** — {len(inner)} checkpoint(s) in {', '.join(teams)}")
    st.caption(
        f"The same timeline with the checkpoints each {who} saved while it worked, under "
        "the top-graph checkpoint that started it. " + FORK_NOTE
    )
    merged = interleave(timeline, inner)
    st.dataframe(
        pd.DataFrame(inner_rows(merged)),
        hide_index=True,
        key="history-inner-timeline",
        column_config={"Checkpoint": st.column_config.TextColumn(width=320)},
    )
    before = {p["checkpoint_id"]: p for p in merged if p["inside"] and p["next"]}
    if before:
        labels = {
            c: f"#{p['position']} before {p['inside']}:{p['next'][0]}" for c, p in before.items()
        }
        chosen = st.selectbox(
            f"A checkpoint inside a {who}, to try the node after it in the playground",
            list(before),
            key=f"history:inner-try:{run_id}",
            format_func=labels.__getitem__,
        )
        playground_view.checkpoint_button(
            run_id, before[chosen], key=f"history:inner-try-button:{run_id}"
        )


def edit_summary(update: dict) -> str:
    """What a checked subtask plan edit does, in one line."""
    plan = (update.get("plans") or [{}])[-1]
    done = [s["id"] for s in update.get("subtasks") or [] if s["status"] == "done"]
    pending = [s["id"] for s in update.get("subtasks") or [] if s["status"] == "pending"]
    parts = [
        f"kept done (not run again): {', '.join(done) or 'none'}",
        f"to run: {', '.join(pending) or 'none'}",
    ]
    if plan.get("changed"):
        parts.append(f"edited: {', '.join(plan['changed'])}")
    if plan.get("added"):
        parts.append(f"added: {', '.join(plan['added'])}")
    if plan.get("cancelled"):
        parts.append(f"cancelled: {', '.join(c['id'] for c in plan['cancelled'])}")
    return "; ".join(parts) + "."


def _nullable(frame: pd.DataFrame) -> pd.DataFrame:
    """Whole-number and yes/no columns as pandas' nullable kinds: a row a person adds
    starts blank, which an int64 or bool column cannot hold (pandas 3 warns and turns the
    column into objects; pandas 4 refuses the edit)."""
    kinds = {c: "Int64" for c in frame.select_dtypes("integer").columns}
    kinds |= {c: "boolean" for c in frame.select_dtypes("bool").columns}
    return frame.astype(kinds) if kinds else frame


def _records(frame: pd.DataFrame) -> list[dict]:
    """An edited table's rows as plain values (blank cells None)."""
    return json.loads(frame.to_json(orient="records"))


def table_editor(view: SystemView, point: dict, change: str, design: Design, key: str) -> bool:
    """The fork form's editor for a field the system edits as a table (a teams run's
    subtask plan): the rows at the checkpoint, edited in place, checked as they change,
    and kept as JSON under ``key`` where the page's fork button reads the change. False,
    drawing nothing, for a field typed as text."""
    system = view.system
    table = view.fork_table(change, point["fields"], design)
    if table is None:
        return False
    st.caption(table.note)
    frame = _nullable(pd.DataFrame(table.rows, columns=table.columns))
    config = {
        name: st.column_config.SelectboxColumn(name, options=options)
        for name, options in table.choices.items()
    }
    for name in table.locked:
        config[name] = st.column_config.TextColumn(name, disabled=True)
    if "instruction" in table.columns:
        config["instruction"] = st.column_config.TextColumn("instruction", width="large")
    edited = st.data_editor(
        frame,
        key=f"{key}:table",
        num_rows="dynamic",
        hide_index=True,
        column_config=config,
        width="stretch",
    )
    records = _records(edited)
    st.session_state[key] = json.dumps(records, ensure_ascii=False)
    try:
        update, goto = system.forks.fork_changes(
            point["fields"],
            {change: system.forks.check_fork_change(change, st.session_state[key], design)},
            design,
        )
    except ValueError as exc:
        st.error(str(exc))
    else:
        said = f": {edit_summary(update)}" if "subtasks" in update else "."
        st.caption(
            f"Going on from here, {goto or ', '.join(point['next'])} runs next with this "
            f"{view.field_label(change).lower()}{said}"
        )
    st.caption(FORK_NOTE)
    return True
