"""The note shown wherever prompts are edited or compared while the offline scripted model
is in use: it says so, what its rules read from those prompts (so which edits can change
what it does) and how to switch to a real model. Without it a prompt engineer on the
default install edits wording that a rule-based model never reads, and sees no effect.
"""

from __future__ import annotations

import streamlit as st

from graph.models.scripted.reads import reading
from ui.prompt_view import short_name

SWITCH = (
    "To see what your wording does, use a real model: on the Model page, add a profile "
    "for any OpenAI-compatible server (a local one included) and make it active, no "
    "restart needed (or start the app with `OPENAI_BASE_URL` or `OPENAI_API_KEY` set)."
)


def headline(names: list[str]) -> str:
    """The note's first lines, always in view: the model is rules, most edits do nothing."""
    said = ", ".join(short_name(n) for n in names)
    return (
        "Runs use the **offline scripted model**: fixed rules, not an LLM. Its rules read "
        f"only some parts of a prompt, so most edits of {said} make no difference to its "
        "runs; what they read, and how to switch to a real model, is below."
    )


def note_markdown(names: list[str]) -> str:
    """What the rules read from prompts ``names``, in Markdown, then how to switch."""
    parts = []
    for name in names:
        found = reading(name)
        parts.append(f"**{short_name(name)}**: what its rules read: {found.reads}")
        if found.effective:
            parts.append(
                "Edits that change what it does:\n"
                + "\n".join(f"- {edit}" for edit in found.effective)
            )
        else:
            parts.append("No edit of this prompt changes what it does.")
        if found.ignored:
            parts.append(f"Makes no difference to it: {found.ignored}")
    parts.append(SWITCH)
    return "\n\n".join(parts)


def show(names: list[str], provider: str) -> None:
    """The note, when ``provider`` (the model in use, or the one an experiment ran on) is
    the offline scripted model; nothing otherwise."""
    if provider != "scripted" or not names:
        return
    with st.container(key="offline-note"):
        st.info(headline(names), icon=":material/smart_toy:")
        said = ", ".join(short_name(n) for n in names)
        with st.expander(f"What the offline model reads from {said}, and how to switch"):
            st.markdown(note_markdown(names))


def for_experiment(record) -> None:
    """The note for the prompts an experiment's variants set differently."""
    texts = [v.get("prompts") or {} for v in record.variants]
    names = sorted({n for t in texts for n in t if len({x.get(n) for x in texts}) > 1})
    in_use = (record.settings or {}).get("resolved_provider", "")
    # a variant may name its model: the note holds when any variant ran on the rules
    providers = {
        ("openai" if (v["model"].get("endpoint")) else "scripted") if v.get("model") else in_use
        for v in record.variants
    }
    show(names, "scripted" if "scripted" in providers else in_use)
