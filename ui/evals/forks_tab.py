"""The Fork and parent tab: a run forked with another prompt (History's "Fork from here
with this prompt") beside the run it was forked from: the prompt versions, the figures
(the fork's model calls split into replayed and live) and the two runs side by side."""

from __future__ import annotations

import streamlit as st

from graph.service.fork_compare import compare_with_parent, forks_with_parents
from ui import services
from ui.evals import two_runs
from ui.history_view import short_id

SHOWN = "evals:fork"  # the fork shown


def _label(record) -> str:
    question = record.question if len(record.question) <= 60 else record.question[:59] + "…"
    return f"{short_id(record.id)} · fork of {short_id(record.parent_run)} · {question}"


def _cell(value) -> str:
    return "–" if value is None else str(value)


def show() -> None:
    store = services.store()
    forks = {r.id: r for r in forks_with_parents(store)}
    if not forks:
        st.info(
            "No fork with another prompt yet: on the History page, open a run's “Fork or "
            "replay” tab and use “Fork from here with this prompt”."
        )
        return
    fork_id = st.selectbox("Fork", list(forks), key=SHOWN, format_func=lambda i: _label(forks[i]))
    try:
        found = compare_with_parent(store, fork_id, services.settings().prices)
    except KeyError as exc:
        st.warning(str(exc).strip("'\""))
        return
    labels = {}
    for row in found["prompts"]:
        labels.update({v.id: v.label for v in store.prompt_versions(row["prompt"])})
    st.table(
        [
            {
                "Prompt": row["prompt"],
                "Parent": labels.get(row["parent"], "the run's text (no stored version)")
                if row["parent"]
                else "shipped default or unsaved text",
                "Fork": f"version {row['fork']}: {labels.get(row['fork'], '?')}",
            }
            for row in found["prompts"]
        ],
        hide_index=True,
    )
    st.caption(
        "The fork went on from checkpoint "
        f"`{short_id(found['fork'].parent_checkpoint)}` of its parent: its calls before it "
        "were replayed from the parent's recording, the later ones made live."
    )
    st.table([{k: _cell(v) for k, v in row.items()} for row in found["figures"]], hide_index=True)
    pair = found["pair"]
    left, right = st.columns(2, gap="large")
    for column, side, other, name in ((left, "a", "b", "parent"), (right, "b", "a", "fork")):
        with column, st.container(key=f"evals-fork-{side}"):
            # keyed apart from the Compare variants tab's sides, drawn in the same run
            two_runs.show_side(pair[side], name, f"fork-{side}", pair[other])
