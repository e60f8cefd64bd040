"""Approvals: every question a run is waiting on, across runs, with the buttons to answer.

Grouped by experiment (variant, repeat) and run, filtered, and in an order that never
changes under the pointer: a decided question keeps its place as a line saying who
decided what, and when (``ui.inbox_view``). The page is redrawn only when the list
changes (a new question, one answered elsewhere or by its timeout), and looks for
changes only while something is pending or running; each card's countdown redraws alone.
"""

import time

import streamlit as st

from ui import access, approvals, inbox_actions, inbox_keys, inbox_view, services, widgets
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
opened_at = st.session_state.setdefault("approvals:opened", time.time())
since = st.session_state.get("approvals:cleared") or inbox_view.decided_since(opened_at)
pending = service.pending_approvals()
decided = service.recent_decisions(since)


# Callbacks and the watcher come from ui.inbox_actions: a function defined here would keep
# this page's namespace (the inbox, the runs read) in each session Streamlit keeps.
live = inbox_actions.live()
shown = inbox_view.merge(pending, decided)
options = inbox_view.filter_options(shown)
filters = inbox_view.Filters()
if shown:
    for column, (name, label) in zip(
        st.columns(4),
        (
            ("systems", "System"),
            ("agents", "Agent"),
            ("kinds", "Kind"),
            ("experiments", "Experiment"),
        ),
    ):
        chosen = st.session_state.get(f"approvals:filter:{name}") or []
        column.multiselect(
            label,
            sorted(set(options[name]) | set(chosen)),
            key=f"approvals:filter:{name}",
            placeholder="all",
        )
        setattr(filters, name, set(st.session_state.get(f"approvals:filter:{name}") or []))
inbox = inbox_view.build_inbox(pending, decided, filters)

# The lines above the cards keep their kind and height while cards are listed: one that
# appeared (or went) with the first (or last) decision would move every card under it.
if not shown:
    st.info(
        "Nothing is waiting for a decision."
        + (" A run is in progress: if it reaches a flagged step, it appears here." if live else "")
    )
else:
    summary = (
        f"{inbox.waiting} decision(s) waiting, oldest first, by experiment and run."
        if inbox.waiting
        else "Nothing is waiting for a decision."
    )
    if inbox.hidden:
        summary += f" {inbox.hidden} more hidden by the filters."
    st.caption(summary)
    left, right = st.columns([4, 1])
    left.caption(
        f"{inbox.decided} decided here or by a timeout since you opened this page (or in the "
        "last 10 min): each stays in its place as a line."
    )
    right.button(
        "Clear decided",
        on_click=inbox_actions.clear_decided,
        key="approvals:clear",
        disabled=not inbox.decided,
    )

cards = [card for group in inbox.groups for card in group.cards]
inbox_keys.follow_link(st.query_params.get("card"))
current = inbox_keys.current_id(cards)
if cards:
    current = inbox_keys.bar(cards, current)

designs = {}
for group in inbox.groups:
    group_key = f"approvals:group:{group.key}"
    with st.container(border=True, key=f"inbox-group-{group.key}"):
        st.subheader(group.title)
        waiting = group.pending  # the row stays, greyed, once none waits: nothing moves
        if access.may("decide"):  # a viewer gets no decision controls
            reason_box, *buttons = st.columns([3, 1, 1, 1], vertical_alignment="bottom")
            reason_box.text_input(
                "One reason for Reject all",
                key=f"{group_key}:reason",
                placeholder="e.g. not now: the data is being rebuilt",
                disabled=not waiting,
            )
            for column, (label, decision) in zip(
                buttons,
                (("Approve all", "approve"), ("Reject all", "reject"), ("Skip all", "skip")),
            ):
                column.button(
                    f"{label} ({len(waiting)})",
                    key=f"{group_key}:{decision}",
                    on_click=inbox_actions.decide_group,
                    args=(waiting, decision, group_key, group.key, filters),
                    width="stretch",
                    disabled=not waiting,
                )
        widgets.flash(f"{group_key}:flash", keep_s=120)
        for run in group.runs:
            st.markdown(f"**{run.title}**")
            if run.run_id not in designs:
                record = store.run(run.run_id)
                designs[run.run_id] = record.design if record else {}
            for item in run.cards:
                approvals.approval_card(
                    item,
                    key=f"approvals:{item['id']}",
                    flash_key=f"approvals:{item['id']}:flash",
                    design=designs[run.run_id],
                    link_run=True,
                    show_flash=True,
                    keys=inbox_keys.card_keys(item["id"], current),
                    compact=inbox_view.decided_before(item, opened_at),
                )
inbox_keys.script(current)


if pending or live:
    listed = (tuple(p["id"] for p in pending), tuple(d["id"] for d in decided))
    st.fragment(run_every=WATCH_S)(inbox_actions.watch)(listed, live, since)
