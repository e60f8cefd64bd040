"""The History page's blind review of any two runs (issue 27, point 3): the user picks two
runs, then judges their answers in the Evals page's pair view (``blind_pair``) with the
runs' ids hidden and the sides drawn at random, and is told which run they preferred.

Kept out of the page file for the reason ``history_actions`` gives: the callbacks and
labels here would otherwise keep the page's namespace alive in every session.
"""

from __future__ import annotations

import secrets

import streamlit as st

from graph.service.human_reviews import HumanReviews, ReviewError
from graph.service.store import RunRecord
from ui import blind_pair, services, widgets
from ui import history_view as hv

PICKED = ("history:blind:first", "history:blind:second")
PAIR = "history:blind:pair"  # (run shown as A, run shown as B) while it is judged
FLASH = "history:blind:flash"
NOTE = "history:blind:note"
REVIEWER = None  # no sign-in in the app yet: judgements record no one


def show(runs: list[RunRecord]) -> None:
    """In a folded section under the runs table: pick two of the listed runs, review."""
    reviewing = st.session_state.get(PAIR)
    with st.expander(
        "Review two runs blind",
        icon=":material/compare:",
        expanded=bool(reviewing or st.session_state.get(FLASH)),
        key="history:blind-open",
    ):
        widgets.flash(FLASH)
        _pick(runs)
        if reviewing:
            _review(*reviewing)


def _pick(runs: list[RunRecord]) -> None:
    labels = {r.id: f"{hv.short_id(r.id)} · {hv.clip(r.question, 60)} · {r.status}" for r in runs}
    st.caption(
        "Pick two of the runs listed above (any questions). Their answers are shown side "
        "by side without their ids, each on a side drawn at random; pick the better one "
        "(keys A, B, T for a tie, X when both are bad). Which run you preferred is said "
        "after you choose."
    )
    first, second = st.columns(2)
    picked = [
        column.selectbox(
            label,
            list(labels),
            index=None,
            key=key,
            format_func=labels.__getitem__,
            placeholder="Pick a run",
        )
        for column, label, key in zip((first, second), ("First run", "Second run"), PICKED)
    ]
    by_id = {r.id: r for r in runs}
    if None not in picked and picked[0] != picked[1]:
        one, two = (by_id[p] for p in picked if p is not None)
        if one.question != two.question:
            st.warning(
                f"The two runs answer different questions (“{one.question}” and "
                f"“{two.question}”): each answer is shown under its own question, and the "
                "judgement says which answer you found better all the same."
            )
    st.button(
        "Review these two blind",
        icon=":material/visibility_off:",
        key="history:blind:start",
        on_click=start,
        args=(picked[0], picked[1]),
    )


def start(first: str | None, second: str | None) -> None:
    """Draw the sides of the picked pair; a missing or repeated pick is refused in words."""
    if first is None or second is None:
        widgets.say(FLASH, "error", "Pick two runs first: a first and a second run.")
        return
    if first == second:
        widgets.say(FLASH, "error", "Pick two different runs: a run is not compared with itself.")
        return
    pair = (first, second) if secrets.randbelow(2) else (second, first)
    st.session_state[PAIR] = pair
    st.session_state[NOTE] = ""


def _review(run_a: str, run_b: str) -> None:
    store = services.store()
    records = [store.run(run_a), store.run(run_b)]
    if None in records:
        st.session_state.pop(PAIR, None)
        st.error("One of the two runs has been deleted meanwhile: pick two runs again.")
        return
    st.divider()
    a, b = (r for r in records if r is not None)
    if a.question == b.question:
        st.markdown(f"**Question:** {a.question}")
    else:
        st.markdown(f"**Question of A:** {a.question}  \n**Question of B:** {b.question}")
    blind_pair.show(run_a, run_b, "history:blind", NOTE, choose, (run_a, run_b))


def question_of(store, run_a: str, run_b: str) -> str:
    """The question the judgement is kept under: the runs' one question, else both."""
    questions = [getattr(store.run(r), "question", "") for r in (run_a, run_b)]
    return questions[0] if questions[0] == questions[1] else " | ".join(questions)


def choose(run_a: str, run_b: str, choice: str) -> None:
    store = services.store()
    try:
        found = HumanReviews(store).judge_pair(
            question_of(store, run_a, run_b),
            run_a,
            run_b,
            choice,
            st.session_state.get(NOTE, ""),
            REVIEWER,
        )
    except ReviewError as exc:
        widgets.say(FLASH, "error", f"Not kept: {exc}")
        return
    st.session_state.pop(PAIR, None)
    widgets.say(FLASH, "success", result_words(found.choice, run_a, run_b))


def result_words(choice: str, run_a: str, run_b: str) -> str:
    a, b = f"`{hv.short_id(run_a)}…` (answer A)", f"`{hv.short_id(run_b)}…` (answer B)"
    said = {
        "A": f"You preferred run {a} to run {b}",
        "B": f"You preferred run {b} to run {a}",
        "tie": f"You judged a tie: run {a} and run {b}",
    }
    return f"Kept. {said.get(choice, f'You judged both bad: run {a} and run {b}')}."
