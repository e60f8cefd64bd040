"""The History page's "Fork from here with this prompt": one of the prompts the node
playground can try on the run (``Prompts.fork_prompts``) with another text, a saved version or a
typed one, from the checkpoint chosen above. The engine is
``RunService.fork_with_prompt`` (``graph/service/prompt_forks.py``).

The callback lives here, not in the page (see ``ui.history_actions``)."""

from __future__ import annotations

import streamlit as st

from graph.kernel.design import Design
from graph.prompts import PromptError, default_text
from ui import access, moved_tabs, services
from ui import history_actions as actions
from ui import history_view as hv

TYPED = "typed"  # the choice of a typed text instead of a saved version


def _keys(run_id: str) -> dict[str, str]:
    return {
        name: f"history:prompt-fork:{name}:{run_id}"
        for name in ("prompt", "source", "text", "label", "step")
    }


def form(run_id: str, checkpoint_id: str, record) -> None:
    """The form, below the checkpoint chosen for "Go on from a checkpoint"."""
    design = Design.model_validate(record.design)
    system = services.system_of(design)
    tuned = system.prompts.fork_prompts(design)
    if not tuned:
        return
    keys = _keys(run_id)
    service = services.service()
    st.markdown("**Fork from here with this prompt**")
    st.caption(
        "A new run from this checkpoint with another text for one prompt. The model calls "
        "made before the checkpoint are replayed from this run's recording (no request to "
        "any server); every call from here on goes to the active model profile, "
        f"“{service.profiles.active().name}”. The new run's step table and messages say "
        "which calls were replayed and which live."
    )
    names = {prompt: role for role, prompt in tuned.items()}
    prompt = st.selectbox(
        "Prompt",
        list(names),
        key=keys["prompt"],
        format_func=lambda p: f"{names[p].replace('_', ' ')} ({p})",
    )
    versions = services.store().prompt_versions(prompt)
    labels = {v.id: f"version {v.id}: {v.label}" for v in versions}
    source = st.selectbox(
        "Text",
        [TYPED, *labels],
        key=f"{keys['source']}:{prompt}",
        format_func=lambda s: "typed here (saved as a new version)" if s == TYPED else labels[s],
    )
    if source == TYPED:
        st.text_area(
            f"The {names[prompt].replace('_', ' ')} prompt for the fork",
            value=design.prompts.get(prompt) or default_text(prompt),
            key=f"{keys['text']}:{prompt}",
            height=240,
        )
        st.text_input(
            "Version label",
            key=f"{keys['label']}:{prompt}",
            placeholder=f"typed for a fork of run {hv.short_id(run_id)}",
        )
    else:
        with st.expander("The version's text"):
            st.code(next(v.text for v in versions if v.id == source), language=None)
    st.checkbox("Step mode", key=keys["step"], help="Pause the fork before every node.")
    st.button(
        "Fork from here with this prompt",
        icon=":material/call_split:",
        on_click=fork,
        args=(run_id, checkpoint_id, prompt),
        disabled=record.is_live,
        help="Once the run has ended." if record.is_live else None,
        key=f"history:prompt-fork:{run_id}",
    )


def fork(run_id: str, checkpoint_id: str, prompt: str) -> None:
    keys = _keys(run_id)
    source = st.session_state.get(f"{keys['source']}:{prompt}", TYPED)
    typed = source == TYPED
    try:
        access.require("run")
        new_id = services.service().fork_with_prompt(
            run_id,
            checkpoint_id,
            prompt,
            text=st.session_state.get(f"{keys['text']}:{prompt}", "") if typed else None,
            version_id=None if typed else int(source),
            label=st.session_state.get(f"{keys['label']}:{prompt}", "") if typed else "",
            step_mode=st.session_state.get(keys["step"], False),
        )
    except (ValueError, KeyError, PromptError) as exc:
        actions.flash("error", str(exc))
        return
    forked = services.store().run(new_id)
    version = forked.prompt_versions.get(prompt) if forked else None
    st.session_state[actions.FORKED] = (
        new_id,
        f"Started run {hv.short_id(new_id)}: a fork of {hv.short_id(run_id)} with version "
        f"{version} of {prompt}; the calls before the checkpoint are replayed, later ones "
        "live. It is open below.",
    )
    actions.clear_filter()
    actions.open_run(new_id)
    moved_tabs.move_to(actions.TAB, "Run")
