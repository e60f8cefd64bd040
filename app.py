"""Stepwise: design, run and watch a multi-agent LangGraph system.

    streamlit run app.py

The entry point only lays out the navigation and the sidebar; each page is a thin
file in ``app_pages/`` that calls the engine in ``graph/``. (Not ``pages/``: Streamlit
treats a folder of that name as a legacy multipage app, and a first request for
``/run`` on a fresh server would run that page alone, outside this navigation.)

The tab's icon is an SVG file in ``assets/`` (sent inline): a ``:material/...:`` page
icon makes the browser fetch it from Google's font CDN, which fails offline. The other
``:material/...:`` icons are drawn with the font Streamlit serves itself.
"""

from pathlib import Path

import streamlit as st

from ui import collector, native_heap, session_expiry

# malloc gives freed memory back past fixed thresholds, which it no longer raises
# (``ui/native_heap.py``); once per process.
native_heap.fix_thresholds()

# The process's first run loads the app's modules with no garbage collection; one
# collection once it has ended, then one after a full script run every few seconds at
# most (``ui/collector.py``).
collector.hold()
# Closed tabs' sessions shut down and their memory given back once Streamlit's TTL for
# them has passed, even if no one opens the app again (``ui/session_expiry.py``).
session_expiry.start()
try:
    from ui import access, page_visits, projector_theme, widgets

    PAGE_ICON = Path(__file__).parent / "assets" / "stepwise-icon.svg"

    st.set_page_config(page_title="Stepwise", page_icon=str(PAGE_ICON), layout="wide")
    access.gate()  # with sign-in configured, nothing below runs for a stranger

    page = st.navigation(
        [
            st.Page(
                "app_pages/design.py", title="Design", icon=":material/account_tree:", default=True
            ),
            st.Page("app_pages/prompts.py", title="Prompts", icon=":material/edit_note:"),
            st.Page("app_pages/run.py", title="Run", icon=":material/play_circle:"),
            st.Page("app_pages/approvals.py", title="Approvals", icon=":material/front_hand:"),
            st.Page("app_pages/history.py", title="History", icon=":material/history:"),
            st.Page("app_pages/audit.py", title="Audit", icon=":material/policy:"),
            st.Page("app_pages/evals.py", title="Evals", icon=":material/fact_check:"),
            st.Page("app_pages/model.py", title="Model", icon=":material/memory:"),
            st.Page("app_pages/tools.py", title="Tools", icon=":material/build:"),
            st.Page("app_pages/server.py", title="Server", icon=":material/dns:"),
        ]
    )
    page_visits.note(page.url_path)
    access.sidebar_line()
    widgets.sidebar()
    projector_theme.choose_and_apply()
    page.run()
finally:  # also after st.stop or st.rerun
    collector.settle()
    collector.sweep()  # the garbage of page runs and closed sessions, before it piles up
    native_heap.give_back()  # what the run freed, back to the system
