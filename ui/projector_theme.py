"""The projector theme (issue 28.7): high contrast for a room with a washed-out projector,
chosen in the sidebar and kept for the session on every page.

Streamlit's own theme is set per server (``.streamlit/config.toml``), not per session,
so the theme is a style sheet on top of the light base: black text on white, darker
captions, tables ruled in black, the primary button a dark blue with white text. Text
coloured on purpose (a status, a better or worse mark) keeps its colour: only the
elements that inherit the page's grey are set.
"""

from __future__ import annotations

import streamlit as st

from ui import widgets

KEY = "ui:projector-theme"
# Contrast with the white page: #000 is 21:1 and #1f1f1f (captions) about 16.7:1. Streamlit
# draws its dark grey text at about 13.7:1 and its captions at opacity 0.6, under 7:1 (the
# browser test measures both); a washed-out projector takes much of any contrast away.
STYLE = """<style>
.stApp, [data-testid="stSidebar"], [data-testid="stHeader"] { background: #fff !important; }
.stApp p, .stApp li, .stApp label, .stApp h1, .stApp h2, .stApp h3, .stApp td, .stApp th,
.stApp summary, .stApp input, .stApp textarea { color: #000 !important; }
[data-testid="stCaptionContainer"] { opacity: 1 !important; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { color: #1f1f1f !important; }
[data-testid="stTable"] td, [data-testid="stTable"] th { border: 1px solid #000 !important; }
[data-testid="stTable"] th { font-weight: 700; }
.stApp button[kind="primary"] { background: #0b3d91 !important; border-color: #0b3d91 !important; }
.stApp button[kind="primary"] p { color: #fff !important; }
</style>"""


def choose_and_apply() -> None:
    """The sidebar's switch, and the style sheet when it is on (also in Presentation,
    where the sidebar is hidden but the choice kept)."""
    widgets.restore(KEY)
    on = st.sidebar.toggle(
        "Projector theme",
        key=KEY,
        on_change=widgets.keep,
        args=(KEY,),
        help="High contrast for a projector: black text on white, tables ruled in black. "
        "Kept on every page while this tab is open.",
    )
    if on:
        st.html(STYLE)
