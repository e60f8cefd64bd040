"""A person's score and note of an opened run (Run and History pages; issue 27, point 3):
on the scale of the eval set the run belongs to (the judge's 1-5 when it is in none), so
the Evals page can tell how far the judge agrees with people."""

from __future__ import annotations

import streamlit as st

from graph.service.human_reviews import Annotation, HumanReviews, ReviewError
from graph.service.judge_agreement import judge_overall, judge_score_label
from graph.service.run_scales import RunScale, run_scale
from graph.service.score_scales import JUDGE_SCALE
from graph.service.store import Store

REVIEWER = None  # no sign-in in the app yet: annotations record no one


def scale_sentence(found: RunScale) -> str:
    """Which scale the form offers, and why that one."""
    scale = found.scale.describe()
    if found.eval_set is None:
        return (
            f"This run is in no eval set, so it is scored on the default scale, the model "
            f"judge's: {scale}."
        )
    made = f" (the experiment “{found.experiment}” ran it)" if found.experiment else ""
    return f"On the scale of the eval set “{found.eval_set}”{made}: {scale}."


def kept_sentence(kept: Annotation) -> str:
    """An earlier score given on a scale the set has changed since: shown on its own."""
    return (
        f"Your earlier score, {kept.label}, was given on {kept.scale.describe()}, the scale "
        "of that time, and stays on it; keeping a score now uses the scale above."
    )


def control(store: Store, run_id: str, key: str) -> None:
    """Folded by default; keyed per run and page."""
    reviews = HumanReviews(store)
    kept = reviews.annotation(run_id, REVIEWER)
    title = "Score this run" if kept is None else f"Your score of this run: {kept.label}"
    box = st.expander(title, icon=":material/rate_review:", key=f"{key}:score-open")
    base = f"{key}:score:{run_id}"
    found = run_scale(store, run_id)
    scale = found.scale
    same = kept is not None and kept.scale == scale
    with box, st.form(f"{base}:form", border=False):
        st.caption(
            scale_sentence(found) + " The Evals page compares people's scores with the judge's."
        )
        if kept is not None and not same:
            st.caption(kept_sentence(kept))
        if judged := store.judgement(run_id):
            try:
                point = scale.label(judge_score_label(judged["scores"], scale))
                mean = judge_overall(judged["scores"])
            except (KeyError, TypeError, ValueError):
                st.caption("The judge scored this run in another shape (an older prompt).")
            else:
                st.caption(
                    f"The judge's overall score: {point}."
                    if scale == JUDGE_SCALE
                    else f"The judge's overall score on this scale: {point} (its mean "
                    f"{mean:.2f} on 1 to 5)."
                )
        score = st.radio(
            "Score",
            scale.points,
            index=scale.points.index(kept.score) if kept is not None and same else None,
            horizontal=True,
            format_func=scale.label,
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
                reviews.annotate(run_id, score, note, REVIEWER, scale)
            except ReviewError as exc:
                st.error(f"Not kept: {exc}")
            else:
                said = scale.label(score) if scale.labels else f"{score} of {scale.high}"
                st.success(f"Kept: {said}.")
