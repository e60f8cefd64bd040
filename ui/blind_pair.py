"""Two answers side by side with nothing that says which run or variant gave them (issue
27, point 3): the pair view the Evals page's review of an experiment and the History
page's review of any two runs share, so a reviewer meets the same view, words and keys
in both places."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from graph.service.side_by_side import side_by_side
from ui import services, widgets
from ui.model_text import model_markdown
from ui.views import panels_of

# Each choice, its button's words and its key (C and R are Streamlit's own).
CHOICES = (("A", "A is better", "A"), ("B", "B is better", "B"), ("tie", "Tie", "T"))
BOTH_BAD = ("both bad", "Both bad", "X")


def show(
    run_a: str,
    run_b: str,
    prefix: str,
    note_key: str,
    on_choose: Callable[..., None],
    args: tuple[Any, ...],
) -> None:
    """The two answers (A left, B right), the steps of each folded, a note and a button
    per choice; a button calls ``on_choose(*args, choice)``. Widget keys start with
    ``prefix`` (``evals:review``), containers' with it dashed (``evals-review``)."""
    dashed = prefix.replace(":", "-")
    view = side_by_side(services.store(), run_a, run_b)
    columns = st.columns(2, gap="large")
    for column, side in zip(columns, ("a", "b")):
        with column, st.container(key=f"{dashed}-{side}"):
            _answer(view[side], side.upper(), dashed)
    st.text_input(
        "Note (optional)",
        key=note_key,
        max_chars=2000,
        placeholder="What made the difference?",
    )
    with st.container(horizontal=True, key=f"{dashed}-choices"):
        for choice, words, key in (*CHOICES, BOTH_BAD):
            st.button(
                words,
                key=f"{prefix}:{choice}",
                shortcut=key,
                type="primary" if choice in ("A", "B") else "secondary",
                on_click=on_choose,
                args=(*args, choice),
                help=f"Key: {key}",
            )


def _answer(side: dict, letter: str, dashed: str) -> None:
    st.markdown(f"#### Answer {letter}")
    with st.container(border=True):
        if side["answer"]:
            model_markdown(side["answer"])
        else:
            st.caption(f"No final answer ({side['status']}: {side['reason']}).")
    with st.expander(f"Steps of answer {letter} ({side['steps']} step(s))"):
        for part in panels_of(side):
            widgets.panel(part, key=f"{dashed}-steps-{letter}")
        for decision in side["human_decisions"]:
            st.caption(f"A person decided: {decision}")
