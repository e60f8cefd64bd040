"""What the Approvals page's buttons and its watcher do: decide a group's questions at
once, clear the decided lines, redraw the page when the list changes.

Kept out of the page file on purpose: Streamlit keeps a session's callbacks and
fragments while the session lives, even for a while after its tab closed, and a
function defined in a page keeps that page's whole namespace (the inbox, the runs it
read) alive with it.
"""

from __future__ import annotations

import time

import streamlit as st

from graph.service.store import LIVE_STATUSES
from ui import access, inbox_view, services, widgets
from ui.roles import Refused


def live() -> bool:
    """Is any run in progress (so a question may still come)?"""
    return any(services.store().runs(status=status, limit=1) for status in LIVE_STATUSES)


def clear_decided() -> None:
    st.session_state["approvals:cleared"] = time.time()


def decide_group(
    items: list[dict],
    decision: str,
    key: str,
    group: str = inbox_view.OUTSIDE_GROUP,
    filters: inbox_view.Filters | None = None,
) -> None:
    """Answer the group's questions that were on screen (``items``, bound when the page
    was drawn), never one that arrived since: that one is named and left waiting. The one
    reason is cleared once used, so a later card is never rejected with it unread."""
    answered = st.session_state.setdefault("approvals:answered", [])
    if items and all(item["id"] in answered for item in items):
        return  # the same press handled again (by a card's countdown redrawn alone)
    reason = st.session_state.get(f"{key}:reason") or ""
    service = services.service()
    arrived = inbox_view.arrived_since(service.pending_approvals(), items, group, filters)
    try:
        person = access.require("decide")
        results = inbox_view.decide_all(service, items, decision, reason, person.by)
    except (ValueError, Refused) as exc:
        widgets.say(f"{key}:flash", "error", str(exc))
        return
    st.session_state[f"{key}:reason"] = ""
    answered[:] = [*answered, *(r.item["id"] for r in results if r.ok)][-200:]
    for result in results:
        if not result.ok:
            widgets.say(f"approvals:{result.item['id']}:flash", "warning", result.text.capitalize())
    widgets.say(f"{key}:flash", *inbox_view.bulk_summary(decision, results, arrived))


def listed(decided_since: float) -> tuple:
    """The ids of the pending and the recently decided questions."""
    service = services.service()
    return (
        tuple(p["id"] for p in service.pending_approvals()),
        tuple(d["id"] for d in service.recent_decisions(decided_since)),
    )


def watch(was: tuple, was_live: bool, decided_since: float) -> None:
    """Run as a fragment: redraw the page when the list or the live state changed."""
    if listed(decided_since) != was or live() != was_live:
        st.rerun()
