"""What the Run page shows of a hierarchical_teams run: the request and its edits (with
the control to edit it while the run goes), the live subtask table, every plan the lead
supervisor made (kept / cancelled / added), its dispatches, each team's inner steps and
messages, and the approvals given.

The row builders are plain functions (testable without a page); ``show`` and
``edit_control`` lay them out.
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from ui import services, widgets
from ui.bus_view import plain

SYSTEM = "hierarchical_teams"
SUBTASK_COLUMNS = ("Id", "Team", "Instruction", "Status", "Depends on", "Result", "Time")
STATUS_STYLE = {"pending": ":gray[pending]", "delegated": ":blue[**delegated**]",
                "done": ":green[done]", "failed": ":red[**failed**]",
                "cancelled": ":orange[**cancelled**]"}


def is_teams(snapshot: dict | None, design: dict | None = None) -> bool:
    return ((snapshot or {}).get("system") == SYSTEM
            or (design or {}).get("system") == SYSTEM)


def _short(text: str, limit: int = 400) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def subtask_rows(snapshot: dict) -> list[dict]:
    """The subtask table: a cancelled, failed or blocked subtask says why in its result."""
    rows = []
    for r in snapshot.get("rows") or []:
        outcome = r.get("result") or ""
        if r.get("reason"):
            outcome = f"{r['reason']} {outcome}".strip() if r["status"] != "done" else outcome
        rows.append({"Id": r["id"], "Team": r["team"], "Instruction": plain(r["instruction"]),
                     "Status": r["status"], "Depends on": ", ".join(r.get("depends_on") or []) or "—",
                     "Result": plain(_short(outcome)),
                     "Time": "" if r.get("duration_s") is None else f"{r['duration_s']:.1f} s"})
    return rows


def plan_title(plan: dict, number: int) -> str:
    if plan.get("kind") == "initial":
        return f"Plan {number} — first plan (request revision {plan.get('revision', 0)})"
    return f"Plan {number} — replan after the request was edited (revision {plan.get('revision')})"


def plan_changes(plan: dict) -> str:
    """Kept / cancelled / added, in one line."""
    parts = []
    if plan.get("kind") != "initial":
        parts.append("kept " + (", ".join(plan.get("kept") or []) or "none"))
        cancelled = plan.get("cancelled") or []
        parts.append("cancelled " + ("; ".join(f"{c['id']} ({c['reason']})" for c in cancelled)
                                     or "none"))
    parts.append("added " + (", ".join(plan.get("added") or []) or "none"))
    return " · ".join(parts)


def plan_rows(plan: dict) -> list[dict]:
    return [{"Id": s["id"], "Team": s["team"], "Instruction": plain(s["instruction"]),
             "Status when planned": s["status"],
             "Depends on": ", ".join(s.get("depends_on") or []) or "—"}
            for s in plan.get("subtasks") or []]


def routing_rows(snapshot: dict) -> list[dict]:
    return [{"Dispatch": r.get("step"), "Subtask": r.get("subtask_id"), "Team": r.get("team") or "—",
             "Chosen by": {"direct": "the only one that could run", "lead": "routing call"}.get(
                 r.get("by"), r.get("by")),
             "Reason": plain(r.get("reason") or "")}
            for r in snapshot.get("routing") or []]


def team_activity(events: list[dict]) -> dict[str, dict[str, list]]:
    """Each team's inner steps and messages, from the updates its subgraph streamed (so
    they show while the team works, and a team stopped by an edit keeps what it did)."""
    teams: dict[str, dict[str, list]] = {}
    for event in events:
        ns = event.get("namespace") or ""
        if event.get("kind") != "update" or not ns:
            continue
        team = ns.split(":", 1)[0]
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        found = teams.setdefault(team, {"steps": [], "messages": []})
        found["steps"] += [s for s in data.get("team_steps") or [] if isinstance(s, dict)]
        found["messages"] += [m for m in data.get("messages") or [] if isinstance(m, dict)]
    return teams


def step_rows(steps: list[dict]) -> list[dict]:
    return [{"Time": datetime.fromtimestamp(s["at"]).strftime("%H:%M:%S") if s.get("at") else "",
             "Subtask": s.get("subtask_id"), "Node": s.get("node"), "What": s.get("kind"),
             "Detail": plain(_short(s.get("text"), 300))}
            for s in steps]


def approval_rows(snapshot: dict) -> list[dict]:
    return [{"Subtask": a.get("subtask_id"), "Worker": a.get("agent"), "Call": plain(a.get("query", "")),
             "Decision": a.get("decision"), "By": a.get("by"), "Reason": plain(a.get("reason") or "")}
            for a in snapshot.get("approvals") or []]


# --------------------------------------------------------------------------- Streamlit


def _edit(run_id: str, key: str) -> None:
    text = (st.session_state.get(f"{key}:edit-text") or "").strip()
    try:
        services.service().edit_request(run_id, text)
    except (ValueError, KeyError) as exc:
        widgets.say(f"{key}:flash", "error", str(exc))
        return
    widgets.say(f"{key}:flash", "success",
                "Request edited: the lead supervisor replans, keeping finished subtasks and "
                "cancelling the ones the new text no longer asks for.")


def edit_control(store, run_id: str, key: str) -> None:
    """The "Edit request" control, while the run goes or waits: outside the polling
    fragment, so what the user types is not disturbed by the refreshes."""
    snapshot = store.snapshot(run_id) or {}
    current = snapshot.get("request") or (store.run(run_id).question if store.run(run_id) else "")
    with st.container(border=True, key=f"{key}-edit-request"):
        st.markdown(f"**Request** (revision {snapshot.get('request_revision') or 0}): {current}")
        st.text_area("Edit the request while the run goes", value=current,
                     key=f"{key}:edit-text", height=80,
                     help="The lead supervisor replans at once: finished subtasks are kept "
                          "(never redone), subtasks the new text no longer asks for are "
                          "cancelled with the reason, new ones are added.")
        st.button("Edit request", key=f"{key}:edit", on_click=_edit, args=(run_id, key),
                  icon=":material/edit_note:")


def show(store, view, key: str) -> None:
    """The teams run in place of plan steps."""
    snapshot = view.snapshot
    edits = snapshot.get("edits") or []
    if edits:
        st.caption("Request edits: " + " · ".join(
            f"revision {e['revision']} at {datetime.fromtimestamp(e['at']).strftime('%H:%M:%S')}: "
            f"“{_short(e['text'], 160)}”" for e in edits))
    st.subheader("Subtasks")
    st.caption("One row per subtask of the lead supervisor's plan, live. Status: pending → "
               "delegated (its team works on it) → done / failed / cancelled; a team sees only "
               "its own instruction and the results of what it depends on.")
    rows = subtask_rows(snapshot)
    with st.container(key=f"{key}-subtasks"):
        if rows:
            st.table([{**r, "Status": STATUS_STYLE.get(r["Status"], r["Status"])} for r in rows],
                     hide_index=True)
        elif view.live:
            st.info("The lead supervisor is splitting the request into subtasks…")
        else:
            st.info("This run has no subtasks.")

    plans = snapshot.get("plans") or []
    st.subheader("Plans")
    if not plans:
        st.caption("No plan yet.")
    for number, plan in enumerate(plans, 1):
        with st.expander(plan_title(plan, number), expanded=number == len(plans) and number > 1):
            st.markdown(f"For the request: “{plan.get('request') or ''}”  \n{plan_changes(plan)}")
            st.table(plan_rows(plan), hide_index=True)

    dispatches = routing_rows(snapshot)
    if dispatches:
        st.subheader("Lead supervisor's dispatches")
        st.table(dispatches, hide_index=True)

    st.subheader("Inside the teams")
    activity = team_activity(store.events(view.record.id, kinds=("update",)))
    teams = [t for t in snapshot.get("teams") or [] if t in activity] or list(activity)
    if not teams:
        st.caption("No team has started yet.")
    for team in teams:
        found = activity[team]
        with st.expander(f"{team} — {len(found['steps'])} step(s), "
                         f"{len(found['messages'])} message(s)",
                         expanded=team == snapshot.get("current_team") and view.live):
            if found["steps"]:
                st.table(step_rows(found["steps"]), hide_index=True)
            widgets.message_list(found["messages"])

    approvals = approval_rows(snapshot)
    if approvals:
        st.subheader("Approvals given")
        st.table(approvals, hide_index=True)

