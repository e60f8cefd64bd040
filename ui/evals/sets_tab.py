"""The Eval sets tab: the stored sets, the starter set, the table editor (questions and
checks in ``st.data_editor``), the score scale, the JSON editor, import, export and
delete."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from graph.service.eval_formats import SHAPES, TITLES, export_jsonl, import_jsonl
from graph.service.eval_sets import (
    CHECK_KINDS,
    EvalSetError,
    export_eval_set,
    import_eval_set,
    load_starter,
    with_kept_fields,
)
from ui import access, services, widgets
from ui.evals import SETS, flash_key, scale_form, setup_view
from ui.evals import check_table as ct

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
        assert eval_set is not None  # picked from the sets listed
        facts = (eval_set.description, setup_view.eval_set_facts(eval_set))
        st.markdown(" · ".join(p for p in facts if p))
        _tables(name, eval_set)
        revision = st.session_state.get(f"evals:table-rev:{name}", 0)
        scale_form.show(name, eval_set, revision, FLASH, _saved)
        _editor(name, eval_set)
        with st.container(horizontal=True):
            st.download_button(
                "Export JSON",
                icon=":material/download:",
                key="evals:export",
                data=setup_view.json_file(export_eval_set(eval_set)),
                file_name=f"stepwise-eval-set-{setup_view.file_stem(name)}.json",
                mime="application/json",
            )
            for shape in SHAPES:
                st.download_button(
                    f"Export {TITLES[shape]} JSONL",
                    icon=":material/download:",
                    key=f"evals:export:{shape}",
                    data=export_jsonl(eval_set, shape),
                    file_name=f"{setup_view.file_stem(name)}.{shape}.jsonl",
                    mime="application/jsonl",
                    help=f"One {TITLES[shape]} dataset item a line; the checks travel in "
                    "metadata.stepwise_checks, a scale other than 1-5 in "
                    "metadata.stepwise_scale.",
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
        "Import an eval set: a JSON file exported from Stepwise, or a LangSmith "
        "(inputs, outputs, metadata) or Langfuse (input, expectedOutput, metadata) "
        "dataset as JSONL, one item a line",
        type=["json", "jsonl"],
        key="evals:import",
        on_change=_import,
    )


def _table_keys(name: str) -> dict[str, str]:
    """The table editor's widget keys; a save moves to fresh ones, so the tables show
    what was stored. A bad edit keeps them: the edit stays on screen with its error."""
    revision = st.session_state.get(f"evals:table-rev:{name}", 0)
    return {
        part: f"evals:table:{part}:{name}:{revision}"
        for part in ("name", "description", "questions", "checks")
    }


def _tables(name: str, eval_set) -> None:
    keys = _table_keys(name)
    named, described = st.columns([1, 2])
    set_name = named.text_input("Name", value=eval_set.name, key=keys["name"])
    description = described.text_input(
        "Description", value=eval_set.description, key=keys["description"]
    )
    questions = st.data_editor(
        pd.DataFrame(ct.question_table(eval_set), columns=["No.", "Question"]),
        key=keys["questions"],
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        column_config={
            "No.": st.column_config.NumberColumn(
                "No.",
                min_value=1,
                step=1,
                format="%d",
                width="small",
                help="The checks below name their question by this number; a new "
                "question left without one gets the next free number.",
            ),
            "Question": st.column_config.TextColumn("Question", width="large"),
        },
    )
    st.caption(
        "Checks: a run passes its question when it ends done and every check passes. "
        + ct.VALUE_HELP
    )
    checks = st.data_editor(
        pd.DataFrame(ct.check_table(eval_set), columns=["Question", "Kind", "Value"]),
        key=keys["checks"],
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        column_config={
            "Question": st.column_config.NumberColumn(
                "Question",
                min_value=1,
                step=1,
                format="%d",
                width="small",
                help="The number of the question in the table above.",
            ),
            "Kind": st.column_config.SelectboxColumn("Kind", options=list(CHECK_KINDS)),
            "Value": st.column_config.TextColumn("Value", help=ct.VALUE_HELP, width="large"),
        },
    )
    problem = _checked(
        lambda: ct.eval_set_from_tables(
            set_name, description, ct.records(questions), ct.records(checks)
        ),
        name,
        changed=lambda draft: with_kept_fields(draft, eval_set) != eval_set,
    )
    st.button(
        "Save the tables",
        type="primary",
        icon=":material/save:",
        disabled=problem is not None,
        on_click=_save_tables,
        args=(name, eval_set),
        key="evals:table-save",
        help="Fix the tables first." if problem else None,
    )


def _save_tables(name: str, eval_set) -> None:
    """Reads the edits the tables keep in session state (the callback runs before the
    script hands back the edited tables); a bad edit is reported and stays as it is."""
    if not access.permitted("eval_sets", FLASH):
        return
    keys, state = _table_keys(name), st.session_state
    try:
        draft = ct.eval_set_from_tables(
            state.get(keys["name"], eval_set.name),
            state.get(keys["description"], eval_set.description),
            ct.apply_edits(ct.question_table(eval_set), state.get(keys["questions"])),
            ct.apply_edits(ct.check_table(eval_set), state.get(keys["checks"])),
        )
    except EvalSetError as exc:
        widgets.say(FLASH, "error", f"Not saved: {exc}")
        return
    draft = with_kept_fields(draft, eval_set)  # what the tables do not show stays
    services.store().save_eval_set(draft)
    _saved(draft.name, f"Saved “{draft.name}”: {setup_view.eval_set_facts(draft)}.")


def _editor_key(name: str) -> str:
    return f"evals:editor:{name}"


def _editor(name: str, eval_set) -> None:
    # Keyed and tracked, so a message appearing above it does not fold it up again.
    with st.expander(
        "Edit the questions and checks (JSON)", key="evals:edit-open", on_change="rerun"
    ):
        key = _editor_key(name)
        saved_text = setup_view.eval_set_text(eval_set)
        if key not in st.session_state:
            st.session_state[key] = saved_text
        edit_col, help_col = st.columns([3, 2], gap="large")
        with help_col:
            st.markdown(
                "Each question has a list of checks; a run passes when it ends done "
                "and every check passes. Check kinds:\n" + setup_view.check_kinds_help()
            )
            st.caption("Change the name to save a copy under the new name.")
        with edit_col:
            text = st.text_area("Eval set JSON", key=key, height=460)
            problem = _checked(
                lambda: setup_view.parse_eval_set_text(text),
                name,
                changed=lambda _: text != saved_text,
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
    revision = f"evals:table-rev:{name}"  # and so do the tables, on fresh keys
    st.session_state[revision] = st.session_state.get(revision, 0) + 1
    st.session_state[PICKED] = st.session_state[TO_RUN] = name
    widgets.say(FLASH, "success", text)


def _picked_set() -> None:
    st.session_state[TO_RUN] = st.session_state[PICKED]


def _save_starter() -> None:
    if not access.permitted("eval_sets", FLASH):
        return
    starter = load_starter()
    services.store().save_eval_set(starter)
    _saved(
        starter.name,
        f"Saved the starter set “{starter.name}”: {setup_view.eval_set_facts(starter)}.",
    )


def _save_edit(name: str) -> None:
    if not access.permitted("eval_sets", FLASH):
        return
    try:
        eval_set = setup_view.parse_eval_set_text(st.session_state.get(_editor_key(name), ""))
    except EvalSetError as exc:
        widgets.say(FLASH, "error", f"Not saved: {exc}")
        return
    store = services.store()
    eval_set = with_kept_fields(eval_set, store.load_eval_set(name))  # the editor shows less
    store.save_eval_set(eval_set)
    st.session_state.pop(_editor_key(name), None)
    _saved(eval_set.name, f"Saved “{eval_set.name}”: {setup_view.eval_set_facts(eval_set)}.")


def _delete(name: str) -> None:
    if not access.permitted("eval_sets", FLASH):
        return
    services.store().delete_eval_set(name)
    st.session_state.pop(_editor_key(name), None)
    st.session_state.pop(PICKED, None)
    widgets.say(FLASH, "success", f"Deleted “{name}”. Experiments that ran it keep their own copy.")


def _import() -> None:
    if not access.permitted("eval_sets", FLASH):
        return
    upload = st.session_state.get("evals:import")
    if upload is None:
        return
    try:
        if upload.name.lower().endswith(".jsonl"):
            stem = upload.name.rsplit(".", 1)[0]
            for shape in SHAPES:  # "x.langsmith.jsonl", as exported here: named x
                stem = stem.removesuffix(f".{shape}")
            eval_set = import_jsonl(upload.getvalue(), stem or "imported")
        else:
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


def _checked(parse, name: str, changed) -> str | None:
    """The edit read as an eval set (``parse``), with what saving it would do said under
    it, or its problem shown and returned (the tables and the JSON editor share this)."""
    try:
        draft = parse()
    except EvalSetError as exc:
        st.error(f"Not valid: {exc}")
        return str(exc)
    if changed(draft):
        st.caption(
            f"Valid: {setup_view.eval_set_facts(draft)}. "
            + (
                f"Saving stores a new eval set “{draft.name}”."
                if draft.name != name
                else "Not saved yet."
            )
        )
    return None
