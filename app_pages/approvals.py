"""Approvals: every question a run is waiting on, across runs, with the buttons to answer.

The page is redrawn only when the list changes (a new question, one answered
elsewhere or by its timeout), and looks for changes only while something is
pending or running.
"""

import streamlit as st

from graph.service.store import LIVE_STATUSES
from ui import approvals, services, widgets
from ui.run_view import WATCH_S

st.title("Approvals")
st.markdown(
    "A run stops **before** a step, a request or a call that needs a person, and waits "
    "here: approve it, edit what will be done and approve, reject it with a reason, or "
    "skip it. A run at one of its limits may ask too (an escalation), and may be "
    "retried. Which agents ask is set per agent on the Design page; each card says what "
    "its buttons do in its run's system."
)

store = widgets.store_or_stop()
service = services.service()
widgets.flash("approvals:flash", keep_s=120)
pending = service.pending_approvals()


def _live() -> bool:
    return any(store.runs(status=status, limit=1) for status in LIVE_STATUSES)


live = _live()

if not pending:
    st.info(
        "Nothing is waiting for a decision."
        + (" A run is in progress: if it reaches a flagged step, it appears here." if live else "")
    )
else:
    st.caption(f"{len(pending)} decision(s) waiting, oldest first.")
designs = {}
for item in pending:
    if item["run_id"] not in designs:
        record = store.run(item["run_id"])
        designs[item["run_id"]] = record.design if record else {}
    approvals.approval_card(
        item,
        key=f"approvals:{item['id']}",
        flash_key="approvals:flash",
        design=designs[item["run_id"]],
        link_run=True,
    )


def _watch(shown: tuple[str, ...], was_live: bool) -> None:
    if tuple(p["id"] for p in service.pending_approvals()) != shown or _live() != was_live:
        st.rerun()


if pending or live:
    st.fragment(run_every=WATCH_S)(_watch)(tuple(p["id"] for p in pending), live)
