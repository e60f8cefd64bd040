"""The "Add to eval set" control of an opened run (Run and History pages): the run's
question and the checks proposed from what it did, edited in a table, saved into an
existing eval set or a new one."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from graph.service.eval_sets import CHECK_KINDS, EvalSetError
from graph.service.run_to_eval import add_question, passes_on, proposal_from_run
from graph.service.store import Store
from ui import access
from ui.evals import check_table as ct
from ui.roles import Refused

NEW_SET = "A new eval set…"
COLUMNS = ["Keep", "Kind", "Value", "From the run"]


def control(store: Store, run_id: str, key: str) -> None:
    """Folded by default, and then costs the page nothing (the proposal reads all the
    run's messages); keyed per run, so edits for one run never show on another."""
    box = st.expander(
        "Add this run to an eval set",
        icon=":material/playlist_add:",
        key=f"{key}:to-set-open",
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        try:
            run, proposed = proposal_from_run(store, run_id)
        except KeyError:
            st.caption("This run is no longer in the store.")
            return
        st.caption(
            "The run's question becomes a question of the set, with checks proposed from "
            "what this run did. Edit them, untick the ones to leave out, add rows; then "
            "pick the set. An experiment on the set runs the question again and checks "
            "each new run."
        )
        if run.status != "done":
            st.warning(
                f"This run ended “{run.status}”: an eval run passes only when it ends done, "
                "so check that the question is one the system can finish."
            )
        base = key_of(key, run_id)
        question = st.text_area(
            "As the set will ask it", value=run.question, key=f"{base}:question", height=68
        )
        edited = st.data_editor(
            pd.DataFrame(ct.proposal_rows(proposed), columns=COLUMNS),
            key=f"{base}:checks",
            num_rows="dynamic",
            hide_index=True,
            width="stretch",
            column_config={
                "Keep": st.column_config.CheckboxColumn("Keep", default=True, width="small"),
                "Kind": st.column_config.SelectboxColumn("Kind", options=list(CHECK_KINDS)),
                "Value": st.column_config.TextColumn("Value", help=ct.VALUE_HELP, width="large"),
                "From the run": st.column_config.TextColumn("From the run", disabled=True),
            },
        )
        names = store.eval_set_names()
        picked, named = st.columns([1, 1])
        target = picked.selectbox("Eval set", [*names, NEW_SET], key=f"{base}:target")
        new_name = ""
        if target == NEW_SET:
            new_name = named.text_input(
                "Name of the new eval set", key=f"{base}:new-name", placeholder="e.g. from history"
            )
        problem = draft = None
        try:
            draft = ct.question_from_rows(question, ct.records(edited))
        except EvalSetError as exc:
            problem = str(exc)
            st.error(f"Not saved yet: {problem}")
        if draft is not None:
            if not draft.checks:
                st.caption("No check kept: a run of this question then passes when it ends done.")
            elif failing := passes_on(draft, run):
                st.caption("This run itself would fail: " + "; ".join(failing) + ".")
        if (
            st.button(
                "Add to eval set",
                type="primary",
                icon=":material/playlist_add:",
                key=f"{base}:add",
                disabled=problem is not None,
            )
            and draft is not None
        ):
            set_name = new_name if target == NEW_SET else target
            try:
                access.require("eval_sets")
                _, said = add_question(
                    store, set_name, draft, new_set=target == NEW_SET, run_id=run_id
                )
            except (EvalSetError, Refused) as exc:
                st.error(f"Not saved: {exc}")
            else:
                st.success(said + " Open it on the Evals page, Eval sets tab.")


def key_of(key: str, run_id: str) -> str:
    """The session-state prefix of one run's control on one page."""
    return f"{key}:to-set:{run_id}"
