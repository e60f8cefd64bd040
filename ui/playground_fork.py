"""*Fork from here with this prompt* under a playground result: the run goes on from the
checkpoint that was tried, with the text of that result's column, and the Run page opens
on the new run. A checkpoint inside a team is forked from the run's own checkpoint before
that team (LangGraph forks a thread from its top graph): the team runs again from its
start with the new text.

The fork is the History page's (``RunService.fork_with_prompt``): the calls before the
checkpoint are replayed from the parent's recording, later ones go to the active model
profile, and the fork records its parent and the prompt version it used (a text no
version holds yet, the editor's unsaved edit or the shipped default, is saved as one).
"""

from __future__ import annotations

import logging

import streamlit as st

from graph.kernel.design import Design
from graph.prompts import PromptError
from graph.service.playground import Trial
from ui import access, run_actions, services

log = logging.getLogger(__name__)

RUN_PAGE = "app_pages/run.py"


def why_not(trial: Trial) -> str:
    """Why the trial's run cannot be forked with its prompt ("" when it can)."""
    record = services.store().run(trial.run_id)
    if record is None:
        return "The run is gone: it may have been deleted."
    if record.is_live:
        return "The run is still going: fork it once it has ended."
    design = Design.model_validate(record.design)
    forkable = services.system_of(design).prompts.fork_prompts(design)
    if trial.prompt_name not in forkable.values():
        return (
            f"A fork of a {design.system} run can change only "
            f"{', '.join(sorted(forkable.values())) or 'no prompt'}, "
            f"not {trial.prompt_name}."
        )
    return ""


def button(trial: Trial, label: str, key: str) -> None:
    """The button for the column of the text labelled ``label``."""
    tried = next((t for t in trial.tries if t.label == label), None)
    if tried is None:
        return
    refused = why_not(trial)
    if not st.button(
        "Fork from here with this prompt",
        key=key,
        icon=":material/call_split:",
        disabled=bool(refused),
        help=refused
        or f"A new run from this checkpoint with {label}: the calls before it are replayed "
        "from the run's recording, the later ones go to the active model profile."
        + (
            f" A fork starts at the run's own checkpoint before {trial.inside}, which "
            "runs again from its start."
            if trial.inside
            else ""
        ),
    ):
        return
    try:
        access.require("run")
        new_id = services.service().fork_with_prompt(
            trial.run_id,
            trial.fork_from or trial.checkpoint_id,
            trial.prompt_name,
            text=tried.text if tried.version_id is None else None,
            version_id=tried.version_id,
            label=f"{label}, forked from the playground on run {trial.run_id[:8]}",
        )
    except (ValueError, KeyError, PromptError) as exc:
        st.error(f"The fork was not started: {exc}")
        return
    forked = services.store().run(new_id)
    version = forked.prompt_versions.get(trial.prompt_name) if forked else None
    log.info("run %s forked from %s in the playground", new_id, trial.run_id)
    run_actions.watch(
        new_id,
        f"Started run {new_id[:8]}: a fork of {trial.run_id[:8]} from the checkpoint before "
        f"{trial.inside or trial.node}, with version {version} of {trial.prompt_name} "
        f"({label}); the calls before the checkpoint are replayed, later ones live.",
    )
    st.switch_page(RUN_PAGE, query_params={"run": new_id})
