"""What the Prompts page's buttons do: save the editor's text as a version, make a
version active, go back to the shipped default, load a text into the editor.

Kept out of the page file on purpose: Streamlit keeps a session's callbacks while the
session lives, even for a while after its tab closed, and a function defined in a page
keeps that page's whole namespace (the runs offered for the preview, their states)
alive with it.
"""

from __future__ import annotations

import streamlit as st

from graph.prompts import PromptError, default_text
from ui import access, services, widgets
from ui.prompt_view import default_words

FLASH = "prompts:flash"


def editor_key(name: str) -> str:
    return f"prompts:editor:{name}"


def draft_key(name: str) -> str:
    """Where the editor's text is kept while the user is on another page."""
    return f"prompts:draft:{name}"


def set_editor(name: str, text: str) -> None:
    st.session_state[editor_key(name)] = st.session_state[draft_key(name)] = text


def save(name: str) -> None:
    if not (person := access.permitted("prompts", FLASH)):
        return
    store = services.store()
    make_active = st.session_state.get(f"prompts:activate:{name}", True)
    try:
        version = store.save_prompt_version(
            name,
            st.session_state.get(f"prompts:label:{name}", ""),
            st.session_state[editor_key(name)],
            by=person.by,
        )
        if make_active:
            store.set_active_prompt(name, version.id, by=person.by)
    except PromptError as exc:
        widgets.say(FLASH, "error", f"Not saved: {exc}")
        return
    st.session_state[f"prompts:label:{name}"] = ""
    widgets.say(
        FLASH,
        "success",
        f"Saved version “{version.label}”" + (" and made it active." if make_active else "."),
    )


def activate(name: str, version_id: int, label: str, text: str) -> None:
    if not (person := access.permitted("prompts", FLASH)):
        return
    services.store().set_active_prompt(name, version_id, by=person.by)
    set_editor(name, text)
    widgets.say(FLASH, "success", f"Runs now use version “{label}”.")


def reset(name: str) -> None:
    if not (person := access.permitted("prompts", FLASH)):
        return
    services.store().set_active_prompt(name, None, by=person.by)
    set_editor(name, default_text(name))
    widgets.say(FLASH, "success", f"Back to {default_words(name)}: runs use it from now on.")
