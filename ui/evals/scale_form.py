"""An eval set's score scale on the Eval sets tab (issue 27, point 3): whole numbers from
a lowest to a highest (words for the ends optional) or named labels, what people score
the set's runs on from the Run and History pages. A bad scale is said under the fields
and cannot be saved; the fields keep what was typed."""

from __future__ import annotations

from typing import Callable

import streamlit as st

from graph.service.eval_sets import EvalSet
from graph.service.score_scales import END_LIMIT, ScaleError, ScoreScale, scale_from
from ui import access, services, widgets

NUMBERS, LABELS = "Numbers", "Labels"


def scale_from_fields(
    kind: str, low: int, high: int, low_word: str, high_word: str, labels: str
) -> ScoreScale:
    """The scale the fields say; ScaleError says what is wrong. Labels are typed
    lowest first, separated by commas."""
    if kind == LABELS:
        return scale_from({"labels": labels.split(",")})
    return scale_from({"low": low, "high": high, "low_word": low_word, "high_word": high_word})


def _keys(name: str, revision: int) -> dict[str, str]:
    parts = ("kind", "low", "high", "low_word", "high_word", "labels")
    return {part: f"evals:scale:{part}:{name}:{revision}" for part in parts}


def show(
    name: str, eval_set: EvalSet, revision: int, flash: str, saved: Callable[[str, str], None]
) -> None:
    """``revision`` moves on when the set is saved, so the fields show what is stored."""
    scale, keys = eval_set.scale, _keys(name, revision)
    with st.expander(
        f"Score scale: {scale.describe()}",
        icon=":material/linear_scale:",
        key="evals:scale-open",
        on_change="rerun",
    ):
        st.caption(
            "What people score this set's runs on (Score this run, on the Run and History "
            "pages). Scores already kept stay on the scale they were given on."
        )
        kind = st.radio(
            "Kind", [NUMBERS, LABELS], index=int(bool(scale.labels)), horizontal=True,
            key=keys["kind"],
        )  # fmt: skip
        low = high = 0
        low_word = high_word = labels = ""
        if kind == NUMBERS:
            ends = st.columns(4)
            low = ends[0].number_input(
                "Lowest", -END_LIMIT, END_LIMIT, value=scale.low, step=1, key=keys["low"]
            )
            low_word = ends[1].text_input(
                "Word for the lowest", value=scale.low_word, key=keys["low_word"]
            )
            high = ends[2].number_input(
                "Highest", -END_LIMIT, END_LIMIT, value=scale.high, step=1, key=keys["high"]
            )
            high_word = ends[3].text_input(
                "Word for the highest", value=scale.high_word, key=keys["high_word"]
            )
        else:
            labels = st.text_input(
                "Labels, lowest first, separated by commas",
                value=", ".join(scale.labels) or "fail, pass",
                key=keys["labels"],
            )
        problem = None
        try:
            draft = scale_from_fields(kind, int(low), int(high), low_word, high_word, labels)
        except ScaleError as exc:
            problem = str(exc)
            st.error(f"Not valid: {exc}")
        else:
            if draft != scale:
                st.caption(f"Valid: {draft.describe()}. Not saved yet.")
        st.button(
            "Save the scale",
            icon=":material/save:",
            disabled=problem is not None,
            on_click=_save,
            args=(name, keys, flash, saved),
            key=f"evals:scale-save:{name}",
            help="Fix the scale first." if problem else None,
        )


def _save(name: str, keys: dict[str, str], flash: str, saved: Callable[[str, str], None]) -> None:
    if not access.permitted("eval_sets", flash):
        return
    state, store = st.session_state, services.store()
    eval_set = store.load_eval_set(name)
    if eval_set is None:
        widgets.say(flash, "error", f"Not saved: there is no eval set named “{name}” any more.")
        return
    scale = eval_set.scale
    try:
        draft = scale_from_fields(
            state.get(keys["kind"], NUMBERS),
            int(state.get(keys["low"], scale.low)),
            int(state.get(keys["high"], scale.high)),
            state.get(keys["low_word"], scale.low_word),
            state.get(keys["high_word"], scale.high_word),
            state.get(keys["labels"], ", ".join(scale.labels)),
        )
    except ScaleError as exc:
        widgets.say(flash, "error", f"Not saved: {exc}")
        return
    store.save_eval_set(eval_set.model_copy(update={"scale": draft}))
    saved(
        name,
        f"The score scale of “{name}” is now {draft.describe()}. Scores already kept stay on "
        "the scale they were given on.",
    )
