"""A person's score and note of an opened run (Run and History pages; issue 27, point 3):
on the judge's scale, so the Evals page can tell how far the judge agrees with people."""

from __future__ import annotations

import streamlit as st

from graph.service.human_reviews import SCALE, HumanReviews, ReviewError
from graph.service.judge_agreement import judge_score_label
from graph.service.store import Store

REVIEWER = None  # no sign-in in the app yet: annotations record no one
WORDS = {1: "1 poor", 2: "2", 3: "3", 4: "4", 5: "5 good"}


def control(store: Store, run_id: str, key: str) -> None:
    """Folded by default; keyed per run and page."""
    reviews = HumanReviews(store)
    kept = reviews.annotation(run_id, REVIEWER)
    title = "Score this run" if kept is None else f"Your score of this run: {kept.score}"
    box = st.expander(title, icon=":material/rate_review:", key=f"{key}:score-open")
    base = f"{key}:score:{run_id}"
    with box, st.form(f"{base}:form", border=False):
        low, high = SCALE
        st.caption(
            f"From {low} (poor) to {high} (good), the scale the model judge scores on; the "
            "Evals page compares people's scores with the judge's."
        )
        if found := store.judgement(run_id):
            try:
                st.caption(f"The judge's overall score: {judge_score_label(found['scores'])}.")
            except (KeyError, TypeError, ValueError):
                st.caption("The judge scored this run in another shape (an older prompt).")
        score = st.radio(
            "Score",
            list(range(low, high + 1)),
            index=None if kept is None else kept.score - low,
            horizontal=True,
            format_func=WORDS.get,
            key=f"{base}:value",
        )
        note = st.text_area(
            "Note (optional)",
            value=kept.note if kept else "",
            max_chars=2000,
            height=68,
            key=f"{base}:note",
        )
        if st.form_submit_button("Keep the score", icon=":material/check:"):
            if score is None:
                st.error("Not kept: pick a score first.")
                return
            try:
                reviews.annotate(run_id, score, note, REVIEWER)
            except ReviewError as exc:
                st.error(f"Not kept: {exc}")
            else:
                st.success(f"Kept: {score} of {high}.")
