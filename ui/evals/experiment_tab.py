"""The Run an experiment tab: the eval set, the variants (a version of each prompt the
design's system tunes, on a model), repeats and workers, who decides approvals, and the
start button."""

from __future__ import annotations

from typing import Literal, Mapping

import streamlit as st

from graph.service.experiment_variants import APPROVALS, ExperimentError, Variant
from ui import access, moved_tabs, services, widgets
from ui.evals import NEW, RESULTS, SETS, TAB, flash_key, setup_view
from ui.evals.results_tab import SHOWN
from ui.evals.sets_tab import PICKED, TO_RUN

FLASH = flash_key(NEW)
VARIANTS = "evals:variants"  # the ids of the variant rows on screen
APPROVALS_KEY = "evals:approvals"


def _models() -> dict:
    """The variants' model picker: label -> choice (None: the model in use)."""
    service = services.service()
    stored = [p.choice() for p in service.profiles.all() if not p.built_in]
    return setup_view.model_options(services.model_settings(), list(service.modes.all()), stored)


def _tuned() -> Mapping[str, str]:
    """Role -> prompt name: what the variants vary, for the saved design's system."""
    return services.system_of(services.current_design()).prompts.tuned


def show() -> None:
    widgets.flash(FLASH)
    store, settings, tuned = services.store(), services.settings(), _tuned()
    names = store.eval_set_names()
    if not names:
        st.info(f"Save an eval set first, on the “{SETS}” tab.")
        return
    if st.session_state.get(TO_RUN) not in names:
        chosen = st.session_state.get(PICKED)
        st.session_state[TO_RUN] = chosen if chosen in names else names[0]
    set_name = st.selectbox("Eval set", names, key=TO_RUN)
    eval_set = store.load_eval_set(set_name)
    assert eval_set is not None  # picked from the sets listed

    st.markdown("**Variants**")
    st.caption(
        f"A variant is a version of each of these prompts: "
        f"{', '.join(tuned.values())} (save versions on the Prompts page). The other "
        "prompts are the ones the Run page uses."
    )
    versions = {
        role: {v.id: v for v in store.prompt_versions(prompt)} for role, prompt in tuned.items()
    }
    now = store.active_prompts()
    active = {role: now.get(prompt) for role, prompt in tuned.items()}
    st.caption(setup_view.active_caption(active))
    st.caption(setup_view.model_caption())
    ids = st.session_state.setdefault(VARIANTS, [0, 1])
    models = list(_models())
    for position, variant_id in enumerate(ids):
        _variant_row(position, variant_id, versions, active, models, removable=len(ids) > 2)
    st.button(
        "Add a variant", icon=":material/add:", on_click=_add_variant, key="evals:add-variant"
    )

    name_col, repeats_col, workers_col = st.columns([4, 1, 1])
    names_typed = [st.session_state.get(f"evals:variant:{i}:name") or "?" for i in ids]
    name_col.text_input(
        "Experiment name",
        key="evals:exp-name",
        placeholder=setup_view.experiment_name(set_name, names_typed),
    )
    repeats = repeats_col.number_input(
        "Repeats",
        min_value=1,
        max_value=100,
        value=1,
        key="evals:repeats",
        help="How many times each variant runs each question.",
    )
    workers = workers_col.number_input(
        "Runs at once",
        min_value=1,
        max_value=64,
        value=settings.experiment_workers,
        key="evals:workers",
        help="The experiment's own pool of workers (default: the "
        "STEPWISE_EXPERIMENT_WORKERS setting).",
    )
    design = services.current_design()
    total = len(eval_set.questions) * len(ids) * int(repeats)
    limits = services.view_of_design(design).limits(design)
    approvals = st.radio(
        "Approvals",
        list(APPROVALS),
        format_func=APPROVALS.get,
        key=APPROVALS_KEY,
        help="Who answers when a run's agent asks for approval. Automatically: read-only "
        "steps are approved and side-effecting ones are not performed (the run records "
        "it), so no run waits.",
    )
    st.caption(
        f"{len(eval_set.questions)} question(s) × {len(ids)} variants × {repeats} "
        f"repeat(s) = **{total} runs**, at most {workers} at a time, with the saved "
        f"design ({len(design.enabled_agents)} agents{'; ' + limits if limits else ''}). "
        + setup_view.approvals_sentence(approvals, total)
    )
    st.button(
        "Start the experiment",
        type="primary",
        icon=":material/play_arrow:",
        on_click=_start,
        args=(set_name,),
        key="evals:start",
    )


def _variant_row(
    position: int, variant_id: int, versions: dict, active: dict, models: list, removable: bool
) -> None:
    key = f"evals:variant:{variant_id}"
    label: Literal["visible", "collapsed"] = "visible" if position == 0 else "collapsed"
    columns = st.columns([2, *[4] * len(versions), 4, 1], vertical_alignment="bottom")
    columns[0].text_input(
        "Variant name",
        value=setup_view.default_variant_name(position),
        key=f"{key}:name",
        label_visibility=label,
    )
    for column, role in zip(columns[1:-2], versions):
        options = [setup_view.SHIPPED_ID, *versions[role]]
        # The second variant onwards starts from what runs now: the active version, else
        # the newest saved one (listed first).
        newest = next(iter(versions[role]), setup_view.SHIPPED_ID)
        start = (
            (getattr(active[role], "id", None) or newest) if position > 0 else setup_view.SHIPPED_ID
        )
        column.selectbox(
            f"{role.capitalize()} prompt",
            options,
            index=options.index(start),
            key=f"{key}:{role}",
            label_visibility=label,
            format_func=lambda i, r=role: setup_view.version_label(versions[r].get(i)),
        )
    if st.session_state.get(f"{key}:model") not in models:
        st.session_state.pop(f"{key}:model", None)  # a server forgotten since: the default
    columns[-2].selectbox("Model", models, key=f"{key}:model", label_visibility=label)
    if removable:
        columns[-1].button(
            "",
            icon=":material/close:",
            key=f"{key}:remove",
            help="Remove this variant",
            on_click=_remove_variant,
            args=(variant_id,),
        )


# --------------------------------------------------------------------------- actions


def _add_variant() -> None:
    ids = st.session_state[VARIANTS]
    ids.append(max(ids) + 1)


def _remove_variant(variant_id: int) -> None:
    st.session_state[VARIANTS].remove(variant_id)


def _variants(tuned: Mapping[str, str]) -> list[Variant]:
    """The variants as typed in: a name and a version of each tuned prompt."""
    variants, models = [], _models()
    for position, variant_id in enumerate(st.session_state[VARIANTS], start=1):
        name = (st.session_state.get(f"evals:variant:{variant_id}:name") or "").strip()
        if not name:
            raise ExperimentError(f"Variant {position} needs a name.")
        chosen = [st.session_state.get(f"evals:variant:{variant_id}:{role}") for role in tuned]
        variants.append(
            Variant.from_versions(
                services.store(),
                name,
                [c for c in chosen if c not in (None, setup_view.SHIPPED_ID)],
                model=models.get(st.session_state.get(f"evals:variant:{variant_id}:model")),
            )
        )
    return variants


def _start(set_name: str) -> None:
    tuned = _tuned()
    eval_set = services.store().load_eval_set(set_name)
    design = services.run_design()  # the saved design, other prompts as the Run page runs them
    design = design.model_copy(
        update={"prompts": {n: t for n, t in design.prompts.items() if n not in tuned.values()}}
    )
    try:
        access.require("run")
        if eval_set is None:
            raise ExperimentError(f"The eval set “{set_name}” is no longer stored.")
        variants = _variants(tuned)
        name = (st.session_state.get("evals:exp-name") or "").strip() or setup_view.experiment_name(
            set_name, [v.name for v in variants]
        )
        experiment_id = services.experiments().start(
            name,
            eval_set,
            variants,
            repeats=int(st.session_state["evals:repeats"]),
            design=design,
            max_workers=int(st.session_state["evals:workers"]),
            approvals=st.session_state.get(APPROVALS_KEY) or "auto",
        )
    except ValueError as exc:  # ExperimentError, a variant name pydantic refuses
        widgets.say(FLASH, "error", f"Not started: {exc}")
        return
    st.session_state[SHOWN] = experiment_id
    moved_tabs.move_to(TAB, RESULTS)
    widgets.say(
        flash_key(RESULTS),
        "success",
        f"Started “{name}”. Its runs are listed in History as they go.",
    )
