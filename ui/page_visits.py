"""Which page a session drew last, so a page can tell a visit from its own reruns.

A visit (from another page, a link with ``?run=...``, a new session after a reload) may
follow the address; a rerun of the same page must not: the browser sends the address
and widget values it had when it sent the rerun, and one sent before it had drawn the
page's last change carries the old ones (the Run page fell back to the run shown
before Run was pressed, seen in CI under load).
"""

from __future__ import annotations

import streamlit as st

SHOWN = "page:shown"
ARRIVED = "page:arrived"


def note(url_path: str) -> None:
    """Called by the navigation before the page runs (not by a fragment's rerun)."""
    st.session_state[ARRIVED] = st.session_state.get(SHOWN) != url_path
    st.session_state[SHOWN] = url_path


def arrived() -> bool:
    """Whether this run of the page is a visit, not a rerun of the page already shown."""
    return st.session_state.get(ARRIVED, True)
