"""A pending approval and its controls: shared by the Approvals page and the Run page.

Each card answers exactly one interrupt (by its id), so two questions of one run are
decided separately. The decision goes to the run service, which resumes the run in a
worker; the card only reports what happened.
"""

from __future__ import annotations

import time
from datetime import datetime

import streamlit as st

from graph.design import Design
from ui import services, widgets

KINDS = {"approval": "approval before the step runs",
         "escalation": "escalation: the step reached its replan cap"}
DONE_WORDS = {"approve": "Approved", "edit": "Approved with your query", "reject": "Rejected",
              "skip": "Skipped", "retry": "Asked a retry of"}


def waiting_since(asked_at: float | None, now: float | None = None) -> str:
    """"12:03:04 (5 min ago)": when the run started waiting, and for how long."""
    if not asked_at:
        return "unknown"
    now = now or time.time()
    seconds = max(0, int(now - asked_at))
    ago = (f"{seconds} s" if seconds < 60 else f"{seconds // 60} min" if seconds < 3600
           else f"{seconds // 3600} h {seconds % 3600 // 60:02d} min")
    return f"{datetime.fromtimestamp(asked_at).strftime('%H:%M:%S')} ({ago} ago)"


def timeout_note(item: dict, design: dict | None) -> str:
    """What happens if nobody answers, from the run's own design."""
    try:
        design = Design.model_validate(design or {})
    except Exception:
        return ""
    if not design.approval_timeout_s:
        return "No timeout: the run waits until someone decides."
    deadline = (item.get("asked_at") or time.time()) + design.approval_timeout_s
    return (f"If nobody decides by {datetime.fromtimestamp(deadline).strftime('%H:%M:%S')}, "
            f"the design's default applies: **{design.timeout_action}**.")


BUS_KINDS = {"approval": "approval before the supervisor sends the request",
             "escalation": "escalation: the request timed out"}
BUS_HELP = {"approve": "Send the request to the agent (for a timed-out request: retry it).",
            "edit": "Reassign: put another enabled agent's name (e.g. researcher) in the query "
                    "box to send the request to it; any other text retries with that task.",
            "reject": "Drop the request: it stays a dead letter and the supervisor goes on.",
            "skip": "Drop the request: it stays a dead letter and the supervisor goes on.",
            "retry": "Send the same request to the same agent again."}


def _is_bus(item: dict, design: dict | None) -> bool:
    return (design or {}).get("system") == "supervisor_bus" or "message_id" in item


def _decide(item: dict, decision: str, key: str, flash_key: str) -> None:
    query = (st.session_state.get(f"{key}:query") or "").strip()
    reason = (st.session_state.get(f"{key}:reason") or "").strip()
    if decision == "edit" and query == (item.get("query") or "").strip():
        widgets.say(flash_key, "error",
                    "The query is unchanged: edit it in the box first, or press Approve.")
        return
    if decision == "edit" and not query:
        widgets.say(flash_key, "error", "The edited query is empty.")
        return
    if decision == "reject" and not reason:
        widgets.say(flash_key, "error",
                    "Say why you reject the step: the Planner gets your reason to revise it.")
        return
    try:
        services.service().decide(item["run_id"], item["id"], decision,
                                  query=query if decision == "edit" else "", reason=reason)
    except (ValueError, KeyError) as exc:
        widgets.say(flash_key, "error", str(exc))
        return
    widgets.say(flash_key, "success",
                f"{DONE_WORDS[decision]} step {item.get('step')} ({item.get('agent')}) of "
                f"“{item.get('question', 'the run')}”: the run goes on.")


def approval_card(item: dict, *, key: str, flash_key: str, design: dict | None = None,
                  link_run: bool = False) -> None:
    """One pending question with its facts and the buttons that answer it."""
    with st.container(border=True, key=f"approval-{item['id']}"):
        kind = item.get("kind") or "approval"
        bus = _is_bus(item, design)
        if bus:
            about = f" · request {item['message_id']}" if item.get("message_id") else ""
            st.markdown(f"**Round {item.get('step')} · {item.get('agent')}{about}** · "
                        f"{BUS_KINDS.get(kind, kind)}")
            if kind == "escalation":
                st.caption("Retry or Approve: send it to the same agent again. Approve edited "
                           "query with another agent's name (e.g. `researcher`) in the box: "
                           "reassign it. Skip or Reject: drop it (a dead letter).")
        elif item.get("call"):  # hierarchical_teams: a real HTTP call waits to be sent
            st.markdown(f"**Subtask {item.get('subtask_id')} · {item.get('team')} · "
                        f"{item.get('agent')}** · approval before the HTTP call is sent")
            st.code(item.get("query") or "", language="http", wrap_lines=True)
            st.caption("Approve sends exactly this call. To change it, edit the query as "
                       "METHOD URL [JSON body] and press Approve edited query (it must stay "
                       "on the allowlisted API). Reject or Skip: nothing is sent and the "
                       "subtask fails with your reason.")
        else:
            st.markdown(f"**Step {item.get('step')} · {item.get('agent')}** · "
                        f"{KINDS.get(kind, kind)}")
        facts = []
        if link_run:
            facts.append(f"Run: “{item.get('question', '')}”")
        facts.append(f"Waiting since {waiting_since(item.get('asked_at'))}")
        st.caption(" · ".join(facts))
        st.markdown(f"**Why it asks:** {item.get('reason') or 'no reason recorded'}")
        if item.get("executor_reason"):
            st.caption(f"The Executor's note: {item['executor_reason']}")
        if note := timeout_note(item, design):
            st.caption(note)
        query_box, reason_box = st.columns([3, 2])
        query_box.text_area("Query the agent will get (edit it, then Approve edited query)",
                            value=item.get("query") or "", key=f"{key}:query", height=100)
        reason_box.text_input("Reason (for Reject or Retry)", key=f"{key}:reason",
                              placeholder="e.g. not this source, look in the database")
        buttons = st.columns(5 if kind == "escalation" else 4)
        buttons[0].button("Approve", key=f"{key}:approve", type="primary", on_click=_decide,
                          args=(item, "approve", key, flash_key), icon=":material/check:",
                          width="stretch")
        buttons[1].button("Approve edited query", key=f"{key}:edit", on_click=_decide,
                          args=(item, "edit", key, flash_key), icon=":material/edit:",
                          width="stretch", help=BUS_HELP["edit"] if bus else None)
        buttons[2].button("Reject", key=f"{key}:reject", on_click=_decide,
                          args=(item, "reject", key, flash_key), icon=":material/close:",
                          width="stretch",
                          help=BUS_HELP["reject"] if bus else
                          "The Planner revises the step with your reason (a replan attempt).")
        buttons[3].button("Skip", key=f"{key}:skip", on_click=_decide,
                          args=(item, "skip", key, flash_key), icon=":material/skip_next:",
                          width="stretch",
                          help=BUS_HELP["skip"] if bus else "Move on without running this step.")
        if kind == "escalation":
            buttons[4].button("Retry", key=f"{key}:retry", on_click=_decide,
                              args=(item, "retry", key, flash_key), icon=":material/replay:",
                              width="stretch",
                              help=BUS_HELP["retry"] if bus else "Grant one more replan of this step.")
        if link_run:
            st.page_link("app_pages/run.py", label="Watch this run", icon=":material/play_circle:",
                         query_params={"run": item["run_id"]})
