"""The Review tab: people judge an experiment's answers blind, two at a time (issue 27,
point 3), then see each variant's win rate against the baseline, export the judgements,
and see how far the model judge agrees with them (point 4).

Blind until the end: the pairs come from ``blind_review.review_queue`` (no variant names),
the page names no variant while a pair is left, and the results appear once every pair
is judged. The baseline is the experiment's first variant, so no choice on the page names
one either.
"""

from __future__ import annotations

import streamlit as st

from graph.service.blind_review import (
    export_csv,
    export_json,
    export_rows,
    judged_keys,
    review_queue,
    win_rates,
)
from graph.service.human_reviews import HumanReviews, ReviewError
from graph.service.judge_agreement import (
    Agreement,
    Disagreement,
    pair_agreement,
    score_agreement,
)
from ui import blind_pair, services, widgets
from ui.evals import REVIEW, flash_key, setup_view
from ui.evals.experiment_picker import pick_experiment
from ui.evals.intervals import level_words

FLASH = flash_key(REVIEW)
SHOWN = "evals:review:experiment"
REVIEWER = None  # no sign-in in the app yet: judgements record no one


def show() -> None:
    widgets.flash(FLASH)
    store = services.store()
    experiments = {r.id: r for r in store.experiments()}
    if not experiments:
        st.info("No experiment to review yet: start one on the “Run an experiment” tab.")
        return
    experiment_id = pick_experiment(experiments, "Experiment to review", SHOWN)
    record = experiments[experiment_id]
    baseline = record.variants[0]["name"]
    st.caption(
        "Two answers to the same question, side by side, without the names of the variants "
        "that gave them, in a random order and on random sides. Pick the better one (keys "
        "A, B, T for a tie, X when both are bad). The results, with the names, appear when "
        "every pair is judged."
    )
    queue = review_queue(store, experiment_id, baseline)
    if not queue:
        st.info(
            "No pair to review yet: each question needs a run of the first variant and of "
            "another one that have both ended."
        )
        return
    judged = judged_keys(HumanReviews(store), experiment_id, REVIEWER)
    left = [p for p in queue if p.key not in judged]
    done = len(queue) - len(left)
    with st.container(key="evals-review-progress"):
        st.progress(
            done / len(queue),
            text=f"{min(done + 1, len(queue))} of {len(queue)}"
            if left
            else f"All {len(queue)} pairs judged",
        )
    if left:
        _pair(experiment_id, left[0])
    else:
        _results(record, baseline)
    _calibration(experiment_id)


def _pair(experiment_id: str, pair) -> None:
    st.markdown(f"**Question:** {pair.question}")
    blind_pair.show(
        pair.run_a,
        pair.run_b,
        "evals:review",
        f"evals:review:note:{pair.key}",
        _choose,
        (experiment_id, pair),
    )


def _choose(experiment_id: str, pair, choice: str) -> None:
    note = st.session_state.get(f"evals:review:note:{pair.key}", "")
    try:
        HumanReviews(services.store()).judge_pair(
            pair.question, pair.run_a, pair.run_b, choice, note, REVIEWER, experiment_id
        )
    except ReviewError as exc:
        widgets.say(FLASH, "error", f"Not kept: {exc}")


def _results(record, baseline: str) -> None:
    store = services.store()
    rates = win_rates(store, record.id, baseline)
    st.subheader("Win rates")
    st.caption(
        f"Against the baseline “{baseline}”: the share of the pairs with a preferred "
        "answer that the variant's answer won (ties and both bad are counted beside it, "
        f"not in it), with its {level_words(rates[0]['level'] if rates else 0.95)} "
        "Wilson score interval."
    )
    with st.container(key="evals-review-results"):
        st.table([rate_row(r) for r in rates], hide_index=True)
    rows = export_rows(store, record.id)
    stem = setup_view.file_stem(record.name)
    with st.container(horizontal=True):
        st.download_button(
            "Export the judgements (CSV)",
            icon=":material/download:",
            key="evals:review:csv",
            data=export_csv(rows),
            file_name=f"{stem}.review.csv",
            mime="text/csv",
        )
        st.download_button(
            "Export the judgements and win rates (JSON)",
            icon=":material/download:",
            key="evals:review:json",
            data=export_json(record.name, baseline, rows, rates),
            file_name=f"{stem}.review.json",
            mime="application/json",
        )


def rate_row(rate: dict) -> dict:
    if rate["win_rate"] is None:
        shown = "no preference yet"
    else:
        shown = f"{rate['win_rate']:.0%} ({rate['low']:.0%} to {rate['high']:.0%})"
    return {
        "Variant": rate["variant"],
        "Pairs judged": rate["pairs"],
        "Won": rate["wins"],
        "Lost": rate["losses"],
        "Tie": rate["ties"],
        "Both bad": rate["both_bad"],
        "Win rate (interval)": shown,
    }


def agreement_sentence(found: Agreement, what: str) -> str:
    """The judge against people on ``what`` (pairs, scores), in one sentence."""
    if found.pairs == 0 or found.share is None:
        return f"No {what} judged by both a person and the model judge yet."
    said = (
        f"The model judge agrees with people on {found.agreeing} of {found.pairs} {what} "
        f"({found.share:.0%}); "
    )
    if found.kappa is None:
        return said + (
            "Cohen's kappa is undefined: both gave one and the same label to every one, "
            "so there is no agreement beyond chance to measure."
        )
    return said + f"Cohen's kappa {found.kappa:.2f} (1 is full agreement, 0 what chance gives)."


def disagreement_row(what: str, found: Disagreement) -> dict:
    return {
        "On": what,
        "Runs": found.item,
        "People": str(found.human),
        "Judge": str(found.judge),
    }


def _calibration(experiment_id: str) -> None:
    """The judge against people, on the pairs reviewed here and on the runs people scored
    on the Run or History page; run ids only, never a variant's name."""
    store = services.store()
    pairs = pair_agreement(store, experiment_id)
    scores = score_agreement(store, [r["run_id"] for r in store.experiment_runs(experiment_id)])
    st.subheader("The judge against people")
    st.caption(
        "On pairs, the judge prefers the answer with the higher mean of its four scores "
        "(equal: neither); a person's tie and both bad mean neither. On scores, the judge's "
        "mean (1 to 5) is put on the scale the person scored on at the same share of its "
        "range and rounded to the nearest point, a half up (on fail or pass, 3 or more is "
        "pass), then set against the person's score."
    )
    st.markdown(agreement_sentence(pairs, "pairs"))
    st.markdown(agreement_sentence(scores, "scored runs"))
    shown = [("pair", d) for d in pairs.disagreements]
    shown += [("score", d) for d in scores.disagreements]
    if shown:
        with st.container(key="evals-review-disagreements"):
            st.table([disagreement_row(what, d) for what, d in shown], hide_index=True)
        st.caption(
            "Improve the judge's prompt (judge/gpa) on the Prompts page on these runs, then "
            "judge them again on the Compare variants tab."
        )
