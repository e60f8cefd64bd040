"""Audit: who decided each approval and who changed prompts and the design, filtered and
exported as CSV."""

import time

import pandas as pd
import streamlit as st

from ui import audit_view, widgets

st.title("Audit")
st.caption(
    "Every decision on an approval (by a person, or by nobody when it timed out) and every "
    "prompt version saved or activated and design change, with who made it. Newest first."
)
store = widgets.store_or_stop()
PERIODS = {"last hour": 3600, "last day": 86_400, "last week": 7 * 86_400, "all time": None}
period, who_box, what_box = st.columns([1, 2, 2])
chosen = period.selectbox("Since", list(PERIODS), index=3, key="audit:since")
span = PERIODS[chosen]
rows = audit_view.trail(store, since=time.time() - span if span else 0.0)
who = who_box.multiselect(
    "Who", sorted({audit_view.who_words(r["by"]) for r in rows}), key="audit:who"
)
what = what_box.multiselect("What", sorted({r["what"] for r in rows}), key="audit:what")
shown = audit_view.filtered(rows, who, what)
if not shown:
    st.info("Nothing recorded matches." if rows else "Nothing recorded yet.")
else:
    st.dataframe(pd.DataFrame(audit_view.table(shown)), hide_index=True, key="audit:table")
st.download_button(
    f"Export {len(shown)} row(s) as CSV",
    data=audit_view.csv_text(shown),
    file_name="stepwise-audit.csv",
    mime="text/csv",
    icon=":material/download:",
    on_click="ignore",
    disabled=not shown,
    key="audit:csv",
)
