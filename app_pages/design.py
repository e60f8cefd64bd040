"""Design: which agents are on, the settings of a run, when a human must approve, and the
graph they compile to; the design can be exported and imported as a JSON file."""

import streamlit as st

from graph.kernel.design import Design, DesignError
from graph.kernel.system import coordination_by_size, get_system, systems
from graph.service.user_agent_designs import with_library
from ui import (
    access,
    design_io,
    graph_fit,
    guardrail_design,
    services,
    settings_form,
    user_agents_view,
    widgets,
)
from ui.roles import Refused
from ui.views import view_of

SYSTEMS = systems()
ALL_AGENTS = sorted({a for system in SYSTEMS.values() for a in system.agents})
WIDGETS = (
    "design:system",
    "recursion_limit",
    "pace_s",
    "approval_timeout_s",
    *(f"timeout_action:{s}" for s in SYSTEMS),
    *settings_form.widget_keys(SYSTEMS),
    *(f"agent:{a}" for a in ALL_AGENTS),
    *(f"approval:{a}" for a in ALL_AGENTS),
)
st.title("Design")
store = widgets.store_or_stop()


def _import() -> None:
    upload = st.session_state.get("design:import")
    if upload is None:
        return
    try:
        _, prompts = design_io.import_design_file(store, upload.getvalue())
    except (DesignError, Refused) as exc:
        widgets.say("design:flash", "error", f"{upload.name} was not imported: {exc}")
        return
    for key in [*WIDGETS, *(k for k in st.session_state if str(k).startswith("agent:"))]:
        st.session_state.pop(key, None)  # redraw every widget from the imported design
    widgets.say(
        "design:flash", "success", f"Imported {upload.name}: it is now the saved design. {prompts}"
    )


def _switch_system() -> None:
    """A system starts from its own defaults (all its agents, its approvals), or from how
    the user left it earlier in this session (agents unticked stay unticked on coming
    back); the run limits and timeouts the user set, and each system's own settings, are
    kept."""
    if not (person := access.permitted("design", "design:flash")):
        return
    old = services.current_design()
    left = st.session_state.setdefault("design:left", {})  # system -> its design, as left
    left[old.system] = old
    chosen = st.session_state["design:system"]
    start = left.get(chosen) or Design(system=chosen)
    new = start.model_copy(
        update=dict(
            prompts=old.prompts,
            recursion_limit=old.recursion_limit,
            pace_s=old.pace_s,
            settings={**start.settings, **old.settings},
            approval_timeout_s=old.approval_timeout_s,
            timeout_action=old.timeout_action,
            guardrail=old.guardrail,
            guardrail_classifier=old.guardrail_classifier,
        )
    )
    store.save_design(new, by=person.by)
    for key in WIDGETS:
        if key != "design:system":
            st.session_state.pop(key, None)


saved = services.current_design()
if st.session_state.get("design:system") not in (None, saved.system):
    st.session_state.pop("design:system")  # the saved design changed elsewhere (an import)
system = get_system(saved.system)
view = view_of(saved.system)
AGENTS = system.agents

st.radio(
    "System",
    list(SYSTEMS),
    index=list(SYSTEMS).index(saved.system),
    format_func=lambda n: SYSTEMS[n].title,
    key="design:system",
    horizontal=True,
    on_change=_switch_system,
    help="Switching starts from the other system's default design (all its agents on, "
    "its default approvals), or from how you left it earlier in this session.",
)
st.markdown(
    f"{view.intro or view.summary} Tick the agents this system may use: "
    "the graph on the right is recompiled at once, and the design is saved for the "
    "next run."
)

left, right = st.columns([2, 3], gap="large")
with left:
    st.subheader("Agents")
    st.caption(view.always_on)
    enabled = []
    for group, names in view.agent_groups().items():
        if group:
            st.markdown(
                f"**{group}** · a team that {system.shape.teams[group]} On when one of its workers is."
            )
        for name in names:
            if st.checkbox(name, value=name in saved.enabled_agents, key=f"agent:{name}"):
                enabled.append(name)
            st.caption(view.agent_caption(name))
    enabled += user_agents_view.ticks(store, saved.enabled_agents, system.name)
    user_agents_view.editor(store)
    st.info(
        f"**Coordination by size** (guidance, not a rule): {coordination_by_size(len(enabled), system.name)}",
        icon=":material/hub:",
    )

    st.subheader("Run settings")
    own = saved.settings_of(system.settings_model).model_dump()
    chosen = settings_form.inputs(system, own, "run")
    recursion_limit = st.number_input(
        "Recursion limit",
        min_value=5,
        max_value=10_000,
        value=saved.recursion_limit,
        key="recursion_limit",
        help="The most steps (plan steps, subtasks or bus rounds) one stretch of a run "
        f"may take: LangGraph is given {system.shape.node_runs_per_step} node runs per step of "
        "this system. A run that reaches it stops and says so, keeping what it found.",
    )
    pace = st.number_input(
        "Pace, seconds per node",
        min_value=0.0,
        max_value=10.0,
        value=saved.pace_s,
        step=0.5,
        key="pace_s",
        help="How long each node's result stays on screen before the next node starts "
        "(0: as fast as possible). For following a run in class; the Run page can "
        "change it per run.",
    )
    st.caption("Model in use")
    st.markdown(f"**{services.model_settings().model_label}**")

library = store.user_agents.all()
deleted = with_library(saved, library)[1]  # a ticked agent deleted since: said
design, _unused = with_library(
    saved.model_copy(
        update={
            "enabled_agents": enabled,
            "recursion_limit": int(recursion_limit),
            "pace_s": float(pace),
        }
    ),
    library,
)

with right:
    st.subheader("Compiled graph")
    for note in deleted:
        st.warning(note, icon=":material/person_remove:")
    compiled = services.compiled_graph(design)  # built: its own agents are known by name
    for warning in system.shape.design_warnings(design.enabled_agents):
        st.warning(warning)
    graph_fit.design_graph(compiled, system, key="design")
    st.caption(view.graph_legend)
    st.page_link(
        "app_pages/run.py", label="Run a question with this design", icon=":material/play_arrow:"
    )

    st.subheader("Human approval")
    st.caption(
        "Before an agent runs a step, the run can stop and wait for a person on the "
        "Approvals page (or the Run page) to approve, edit, reject or skip it. Agents "
        "with side effects always ask unless you say otherwise."
    )
    policies: dict[str, str] = {}
    for column, name in zip(st.columns(2) * len(AGENTS), AGENTS):
        policies[name] = column.selectbox(
            name,
            list(view.policy_words),
            key=f"approval:{name}",
            index=list(view.policy_words).index(saved.approval_policy(name)),
            format_func=view.policy_words.__getitem__,
            help="has side effects" if AGENTS[name].side_effects else None,
        )
    chosen |= settings_form.inputs(system, own, "approvals")
    if view.approvals_note:
        st.caption(view.approvals_note)
    timeout = st.number_input(
        "Approval timeout, seconds (0: wait for ever)",
        min_value=0,
        max_value=7 * 24 * 3600,
        value=int(saved.approval_timeout_s),
        step=60,
        key="approval_timeout_s",
    )
    timeout_actions = {"reject": view.rejected, "skip": "skip the step"}
    timeout_action = st.radio(
        "When nobody decides in time",
        list(timeout_actions),
        format_func=timeout_actions.get,
        index=list(timeout_actions).index(saved.timeout_action),
        # one widget per system: its option words differ, and a browser holding the other
        # system's words showed neither option chosen after a switch
        key=f"timeout_action:{system.name}",
        horizontal=True,
        disabled=not timeout,
    )

defaults = Design(system=system.name, approvals={})
design = design.model_copy(
    update={
        "approval_timeout_s": float(timeout),
        "timeout_action": timeout_action,
        # only what differs from an agent's default, so a new default still reaches it
        "approvals": {a: p for a, p in policies.items() if p != defaults.approval_policy(a)},
    }
)
try:
    design = settings_form.with_settings(design, system, chosen)
except DesignError as exc:  # a value its model refuses: said, and not saved
    st.error(f"Not saved: {exc}")
else:
    if design != saved and (person := access.permitted("design", "design:flash")):
        store.save_design(design, by=person.by)

guardrail_design.section(store, design)

with right:
    st.subheader("Share the design")
    st.caption(
        "One JSON file: the agents, the settings and approvals on this page, and the "
        "active prompt texts."
    )
    st.download_button(
        "Export design JSON",
        data=design_io.design_file(store, design),
        file_name="stepwise-design.json",
        mime="application/json",
        icon=":material/download:",
        key="design:export",
    )
    st.file_uploader(
        "Import a design file (it replaces the saved design)",
        type=["json"],
        key="design:import",
        on_change=_import,
    )
    widgets.flash("design:flash")
