"""The Approvals inbox by keyboard: one current card, moved with J and K, answered with A,
X and S, the keys shown on the page.

Streamlit has no key bindings of its own for this: ``st.button(shortcut=...)`` triggers a
button from anywhere on the page, so every key here is a button's, and shows on it. What
no button can do (bring the current card into view, put the cursor in its reason box)
is a few lines of script run by ``st.html``, only when the current card changed.

Streamlit reserves R and C (rerun, clear caches), so Reject is X. In a text box a key
without Ctrl types a letter: the reason is sent with Ctrl+Enter, which the current
card's Reject button takes while its reason box waits for words.
"""

from __future__ import annotations

import json

import streamlit as st

from ui import inbox_view

CURRENT = "approvals:current"  # the current card's question id
ARMED = "approvals:armed"  # a card whose Reject waits for its reason (keyboard or click)
MOVED = "approvals:moved"  # how often the current card changed: the script runs again

PREVIOUS_KEY, NEXT_KEY = "K", "J"
# The current card's buttons' keys; Reject's once its reason box has the cursor.
CARD_KEYS = {"approve": "A", "reject": "X", "skip": "S"}
SEND_REASON_KEY = "Ctrl+Enter"
HELP = (
    "Keys: **J** next card · **K** previous card · **A** approve · **X** reject (type why, "
    "then **Ctrl+Enter**) · **S** skip"
)


def current_id(cards: list[dict]) -> str | None:
    """The current card: the one chosen, while it waits; else the first waiting after it
    in the page's order (a decided card hands on to the next); else the first waiting."""
    waiting = [c["id"] for c in cards if not c.get("decided")]
    if not waiting:
        return None
    chosen = st.session_state.get(CURRENT)
    if chosen in waiting:
        return chosen
    order = [c["id"] for c in cards]
    if chosen in order:
        after = [i for i in order[order.index(chosen) :] if i in waiting]
        if after:
            return after[0]
    return waiting[0]


def _moved(cards: list[dict], now: str | None, step: int) -> str | None:
    waiting = [c["id"] for c in cards if not c.get("decided")]
    if not waiting or now is None:
        return now
    chosen = waiting[(waiting.index(now) + step) % len(waiting)]
    st.session_state[CURRENT] = chosen
    st.session_state[MOVED] = st.session_state.get(MOVED, 0) + 1
    st.session_state.pop(ARMED, None)
    return chosen


def follow_link(card: str | None) -> None:
    """A webhook's link (``/approvals?card=<id>``) makes that card current and brings it
    into view, once per link followed."""
    if card and st.session_state.get("approvals:linked") != card:
        st.session_state["approvals:linked"] = card
        st.session_state[CURRENT] = card
        st.session_state[MOVED] = st.session_state.get(MOVED, 0) + 1


def arm(item_id: str) -> None:
    """Reject was asked with no reason: the cursor goes to the card's reason box."""
    st.session_state[CURRENT] = item_id
    st.session_state[ARMED] = item_id
    st.session_state[MOVED] = st.session_state.get(MOVED, 0) + 1


def card_keys(item_id: str, current: str | None) -> dict[str, str]:
    """{decision: key} for a card's buttons: the current card's only."""
    if item_id != current:
        return {}
    if st.session_state.get(ARMED) == item_id:
        return {**CARD_KEYS, "reject": SEND_REASON_KEY}
    return dict(CARD_KEYS)


def bar(cards: list[dict], current: str | None) -> str | None:
    """The keys, where they are read: previous and next, and which card is current (one
    line whatever the card's words, so nothing under it moves when it changes); the
    current card, once a key moved it.

    The buttons' return values, not callbacks: a card's countdown, redrawn alone each
    second, ran a callback again for the same press, and J moved five cards at once."""
    with st.container(horizontal=True, vertical_alignment="center", key="inbox-keys"):
        for label, step, shortcut, icon in (
            ("Previous card", -1, PREVIOUS_KEY, ":material/keyboard_arrow_up:"),
            ("Next card", 1, NEXT_KEY, ":material/keyboard_arrow_down:"),
        ):
            if st.button(
                label,
                key=f"approvals:{label.split()[0].lower()}",
                shortcut=shortcut,
                disabled=current is None,
                icon=icon,
            ):
                current = _moved(cards, current, step)
        with st.container(key="oneline-keys"):
            found = [c for c in cards if c["id"] == current]
            st.caption(
                f"Current card: {inbox_view.card_label(found[0])}" if found else "No card waits."
            )
    with st.container(key="oneline-keys-help"):
        st.caption(HELP)
    return current


def script(current: str | None) -> None:
    """Outline the current card; bring it into view and, when its Reject waits for a
    reason, put the cursor in its reason box. Runs again only when that changed."""
    if current is None:
        return
    armed = st.session_state.get(ARMED) == current
    st.html(
        f"<style>.st-key-approval-{current} {{ outline: 3px solid #1c83e1; "
        "outline-offset: 3px; }</style>"
    )
    moved = st.session_state.get(MOVED, 0)
    if not moved:
        return  # the page just opened: the reader's scroll is left alone
    st.html(
        "<script>(() => {"
        f"const id = {json.dumps(current)}, armed = {json.dumps(armed)}, n = {moved};"
        "const card = document.querySelector('.st-key-approval-' + id);"
        "if (!card) return;"
        "card.scrollIntoView({block: 'nearest'});"
        "if (armed) {"
        " const box = card.querySelector('[class*=\"-reason\"] input');"
        " if (box) box.focus();"
        "}"
        "})();</script>",
        unsafe_allow_javascript=True,
        width="content",
    )
