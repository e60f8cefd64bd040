"""The Eval sets tab: the stored sets, the starter set, the JSON editor, import, export
and delete."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from graph.service.eval_sets import EvalSetError, export_eval_set, import_eval_set, load_starter
from ui import services, widgets
from ui.evals import SETS, flash_key
from ui.evals import view as ev

FLASH = flash_key(SETS)
PICKED = "evals:set"  # the set shown here
TO_RUN = "evals:exp-set"  # the set the experiment tab runs next: the one last picked here


def show() -> None:
    widgets.flash(FLASH)
    store = services.store()
    names = store.eval_set_names()
    if not names:
        st.info(
            "No eval set saved yet. Stepwise ships a starter set: six questions over the "
            "bundled stock database and documents, each with checks, that run offline."
        )
        st.button(
            "Save the starter set",
            type="primary",
            icon=":material/playlist_add:",
            on_click=_save_starter,
            key="evals:starter",
        )
    else:
        if st.session_state.get(PICKED) not in names:
            st.session_state[PICKED] = names[0]
        name = st.selectbox("Eval set", names, key=PICKED, on_change=_picked_set)
        eval_set = store.load_eval_set(name)
        facts = (eval_set.description, ev.eval_set_facts(eval_set))
        st.markdown(" · ".join(p for p in facts if p))
        st.dataframe(
            pd.DataFrame(ev.question_rows(eval_set)),
            hide_index=True,
            column_config={
                "Question": st.column_config.TextColumn(width="large"),
                "Checks": st.column_config.TextColumn(width="large"),
            },
        )
        _editor(name, eval_set)
        with st.container(horizontal=True):
            st.download_button(
                "Export JSON",
                icon=":material/download:",
                key="evals:export",
                data=ev.json_file(export_eval_set(eval_set)),
                file_name=f"stepwise-eval-set-{ev.file_stem(name)}.json",
                mime="application/json",
            )
            with st.popover("Delete", icon=":material/delete:"):
                st.markdown(
                    f"Delete the eval set “{name}”? Experiments that ran it keep their own copy."
                )
                st.button(
                    f"Delete “{name}”",
                    type="primary",
                    on_click=_delete,
                    args=(name,),
                    key="evals:delete",
                )
            if "starter" not in names:
                st.button("Add the starter set", on_click=_save_starter, key="evals:starter")
    st.file_uploader(
        "Import an eval set (a JSON file exported from Stepwise)",
        type=["json"],
        key="evals:import",
        on_change=_import,
    )


def _editor_key(name: str) -> str:
    return f"evals:editor:{name}"


def _editor(name: str, eval_set) -> None:
    # Keyed and tracked, so a message appearing above it does not fold it up again.
    with st.expander(
        "Edit the questions and checks (JSON)", key="evals:edit-open", on_change="rerun"
    ):
        key = _editor_key(name)
        saved_text = ev.eval_set_text(eval_set)
        if key not in st.session_state:
            st.session_state[key] = saved_text
        edit_col, help_col = st.columns([3, 2], gap="large")
        with help_col:
            st.markdown(
                "Each question has a list of checks; a run passes when it ends done "
                "and every check passes. Check kinds:\n" + ev.check_kinds_help()
            )
            st.caption("Change the name to save a copy under the new name.")
        with edit_col:
            text = st.text_area("Eval set JSON", key=key, height=460)
            problem = draft = None
            try:
                draft = ev.parse_eval_set_text(text)
            except EvalSetError as exc:
                problem = str(exc)
                st.error(f"Not valid: {problem}")
            if draft is not None and text != saved_text:
                st.caption(
                    f"Valid: {ev.eval_set_facts(draft)}. "
                    + (
                        f"Saving stores a new eval set “{draft.name}”."
                        if draft.name != name
                        else "Not saved yet."
                    )
                )
            st.button(
                "Save",
                type="primary",
                icon=":material/save:",
                disabled=problem is not None,
                on_click=_save_edit,
                args=(name,),
                key="evals:save",
                help="Fix the JSON first." if problem else None,
            )


# --------------------------------------------------------------------------- actions


def _saved(name: str, text: str) -> None:
    st.session_state.pop(_editor_key(name), None)  # the editor reloads what is stored
    st.session_state[PICKED] = st.session_state[TO_RUN] = name
    widgets.say(FLASH, "success", text)


def _picked_set() -> None:
    st.session_state[TO_RUN] = st.session_state[PICKED]


def _save_starter() -> None:
    starter = load_starter()
    services.store().save_eval_set(starter)
    _saved(starter.name, f"Saved the starter set “{starter.name}”: {ev.eval_set_facts(starter)}.")


def _save_edit(name: str) -> None:
    try:
        eval_set = ev.parse_eval_set_text(st.session_state.get(_editor_key(name), ""))
    except EvalSetError as exc:
        widgets.say(FLASH, "error", f"Not saved: {exc}")
        return
    services.store().save_eval_set(eval_set)
    st.session_state.pop(_editor_key(name), None)
    _saved(eval_set.name, f"Saved “{eval_set.name}”: {ev.eval_set_facts(eval_set)}.")


def _delete(name: str) -> None:
    services.store().delete_eval_set(name)
    st.session_state.pop(_editor_key(name), None)
    st.session_state.pop(PICKED, None)
    widgets.say(FLASH, "success", f"Deleted “{name}”. Experiments that ran it keep their own copy.")


def _import() -> None:
    upload = st.session_state.get("evals:import")
    if upload is None:
        return
    try:
        eval_set = import_eval_set(upload.getvalue())
    except EvalSetError as exc:
        widgets.say(FLASH, "error", f"{upload.name} was not imported: {exc}")
        return
    store = services.store()
    replaced = eval_set.name in store.eval_set_names()
    store.save_eval_set(eval_set)
    _saved(
        eval_set.name,
        f"Imported “{eval_set.name}” from {upload.name}"
        + (" (it replaces the set of that name)." if replaced else "."),
    )
