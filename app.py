"""Stepwise: design, run and watch a multi-agent LangGraph system.

    streamlit run app.py

The entry point only lays out the navigation and the sidebar; each page is a thin
file in ``pages/`` that calls the engine in ``graph/``.
"""

import streamlit as st

from ui import widgets

st.set_page_config(page_title="Stepwise", page_icon=":material/account_tree:", layout="wide")

page = st.navigation([
    st.Page("pages/design.py", title="Design", icon=":material/account_tree:", default=True),
    st.Page("pages/prompts.py", title="Prompts", icon=":material/edit_note:"),
    st.Page("pages/run.py", title="Run", icon=":material/play_circle:"),
    st.Page("pages/approvals.py", title="Approvals", icon=":material/front_hand:"),
    st.Page("pages/history.py", title="History", icon=":material/history:"),
    st.Page("pages/evals.py", title="Evals", icon=":material/fact_check:"),
])
widgets.sidebar()
widgets.through_app()
page.run()
