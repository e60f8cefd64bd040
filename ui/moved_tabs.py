"""Tabs the page moves to by itself: a fork opens its "Run" tab, a started experiment its
results.

Setting a drawn tab widget's value is not enough: a refresh the browser sent before it
had heard of the value (a polling fragment, on a busy machine) carries the tab it had,
and a value from the browser wins over one set by code (seen once in a whole suite: a
fork stayed on "Fork or replay"). So a move draws the tabs as a new widget (its key gets
the next number) that opens on the tab asked for; the old widget's value is forgotten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st


def _turn(key: str) -> str:
    return f"{key}:moved"


def _last_move(key: str, state: Mapping[str, Any] | None = None) -> tuple[int, str | None]:
    """How many times the tabs called ``key`` were moved, and to which tab last (``state``:
    a test's session state; the page's own by default)."""
    seen: Any = st.session_state if state is None else state
    return seen[_turn(key)] if _turn(key) in seen else (0, None)


def drawn_key(key: str, state: Mapping[str, Any] | None = None) -> str:
    """The key the tabs called ``key`` are drawn under now."""
    return f"{key}:{_last_move(key, state)[0]}"


def tabs(labels: Sequence[str], key: str) -> Sequence[Any]:
    """``st.tabs`` whose selected tab the browser reports, opened on the last move's tab."""
    _, label = _last_move(key)
    return st.tabs(list(labels), key=drawn_key(key), default=label, on_change="rerun")


def move_to(key: str, label: str) -> None:
    """Open the tabs called ``key`` on ``label`` when the page is next drawn."""
    turn, _ = _last_move(key)
    st.session_state[_turn(key)] = (turn + 1, label)
