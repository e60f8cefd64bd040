"""The Design page's part for docs/systems/conversations.md: the guardrail switches, the hook rules and where
the injection patterns live.

Each change is checked by building the design's graph (a hook naming a node or agent
that does not exist raises ``HookError``, saying what does) and saved at once from its
callback, so the graph the page draws next already shows it. A change that does not
build is not saved: the error is shown under the control and the inputs are kept.
"""

from __future__ import annotations

import streamlit as st

from graph.kernel.design import Design
from graph.kernel.guardrail import PATTERNS_FILE
from graph.kernel.hooks import GUARDRAIL, HookError, HookRule
from graph.service.store import Store
from ui import access, services, widgets
from ui.roles import Refused

GUARDRAIL_KEY = "design:guardrail"
CLASSIFIER_KEY = "design:guardrail-classifier"
FLASH = "design:hooks-flash"  # what the last switch or hook action did
EVENTS = {
    "before_run": "before a run (each new user message)",
    "after": "after a node returns",
    "fallback": "when a node fails (fallback)",
}
INTERNAL_NODES = {"__start__", "__end__", "__default_error_handler__"}


def hook_rows(hooks: list[HookRule]) -> list[dict]:
    return [
        {
            "#": i + 1,
            "Event": h.event,
            "Node": h.node,
            "Target": h.target,
            "Resume": "yes" if h.resume else "no",
            "Step": "" if h.step is None else str(h.step),
            "Times": h.times,
        }
        for i, h in enumerate(hooks)
    ]


def design_nodes(design: Design) -> list[str]:
    """The nodes a hook may watch or go to, in the graph's own order."""
    compiled = services.compiled_graph(design)
    return [n for n in compiled.get_graph().nodes if n not in INTERNAL_NODES]


def design_agents(design: Design) -> list[str]:
    return [design.system, *([GUARDRAIL] if design.guardrail else [])]


def _try_save(store: Store, design: Design) -> str | None:
    """Save ``design`` if its graph builds; else the reason it does not."""
    try:
        person = access.require("design")
        services.compiled_graph(design)
    except (HookError, Refused) as exc:
        return str(exc)
    store.save_design(design, by=person.by)
    return None


def _switch(store: Store, field: str, key: str) -> None:
    saved = services.current_design()
    wanted = bool(st.session_state[key])
    if problem := _try_save(store, saved.model_copy(update={field: wanted})):
        st.session_state[key] = getattr(saved, field)  # the switch shows what is saved
        widgets.say(
            FLASH,
            "error",
            f"The guardrail was not switched {'on' if wanted else 'off'}: "
            f"{problem} Remove the hooks that need it first.",
        )


def _add_hook(store: Store) -> None:
    state = st.session_state
    target = (state.get("design:hook-target") or "").strip()
    if not target:
        widgets.say(FLASH, "error", "A hook needs a target: a node or an agent name.")
        return
    rule = HookRule(
        event=state["design:hook-event"],
        node="*" if state["design:hook-event"] == "before_run" else state["design:hook-node"],
        target=target,
        resume=bool(state.get("design:hook-resume")),
        step=None if state.get("design:hook-step") is None else int(state["design:hook-step"]),
        times=int(state.get("design:hook-times") or 1),
    )
    saved = services.current_design()
    if problem := _try_save(store, saved.model_copy(update={"hooks": [*saved.hooks, rule]})):
        widgets.say(FLASH, "error", f"The hook was not added: {problem}")
        return
    widgets.say(FLASH, "success", f"Hook added: {rule.key()}.")


def _remove_hook(store: Store) -> None:
    saved = services.current_design()
    index = st.session_state.get("design:hook-remove")
    if index is None or not 0 <= index < len(saved.hooks):
        return
    hooks = [h for i, h in enumerate(saved.hooks) if i != index]
    if problem := _try_save(store, saved.model_copy(update={"hooks": hooks})):
        widgets.say(FLASH, "error", f"The hook was not removed: {problem}")
        return
    widgets.say(FLASH, "success", f"Hook {index + 1} removed.")


def _keep_in_step(key: str, saved_value: bool) -> None:
    """Show the saved value when the design changed elsewhere (an import, a system
    switch, another tab): the switches save themselves, so any difference is that."""
    if st.session_state.get(key) != saved_value:
        st.session_state[key] = saved_value


def section(store: Store, saved: Design) -> None:
    """The guardrail switches, the injection patterns file and the hooks editor."""
    st.divider()
    guard, hooks = st.columns([2, 3], gap="large")
    with guard:
        _guardrail(store, saved)
    with hooks:
        _hooks(store, saved)


def _guardrail(store: Store, saved: Design) -> None:
    st.subheader("Guardrail")
    _keep_in_step(GUARDRAIL_KEY, saved.guardrail)
    _keep_in_step(CLASSIFIER_KEY, saved.guardrail_classifier)
    st.toggle(
        "Guardrail",
        key=GUARDRAIL_KEY,
        on_change=_switch,
        args=(store, "guardrail", GUARDRAIL_KEY),
        help="A guardrail agent beside this system's agents (docs/systems/conversations.md), drawn in the "
        "graph: START routes each message to it.",
    )
    st.caption(
        "Every user message (the question and each follow-up) goes to a guardrail "
        "agent first: it refuses prompt injections and requests the enabled agents "
        "cannot serve, with the reason; a message that passes goes on and the main "
        "agent resumes where it stopped. Tool results carrying instructions aimed at "
        "the agents are flagged on their step."
    )
    st.toggle(
        "Model classifier",
        key=CLASSIFIER_KEY,
        disabled=not saved.guardrail,
        on_change=_switch,
        args=(store, "guardrail_classifier", CLASSIFIER_KEY),
        help="Only used while the guardrail is on.",
    )
    note = (
        "The guardrail also asks the model whether each message may pass, with the "
        "prompt **guardrail/classifier** (editable on the Prompts page)."
    )
    if services.model_settings().resolved_provider == "scripted":
        note += (
            " With the offline scripted model this classifier is rule-based: it refuses "
            "messages about passwords, API keys, secrets or jailbreaks and passes the rest."
        )
    st.caption(note if saved.guardrail else "Switch the guardrail on to use it. " + note)
    path = services.settings().prompts_dir / PATTERNS_FILE
    with st.expander("Injection patterns (read-only here)"):
        st.caption(
            f"Edit them in `{path}`: one regular expression a line, read at every "
            "check, so a change applies to the next message without a restart."
        )
        try:
            st.code(path.read_text(encoding="utf-8"), language=None, wrap_lines=True)
        except OSError as exc:
            st.error(f"The patterns file cannot be read: {exc}")


def _hooks(store: Store, saved: Design) -> None:
    st.subheader("Hooks")
    agents = design_agents(saved)
    st.caption(
        "Send execution elsewhere before a run, after a node or when a node fails. "
        f"The target is a node or an agent ({', '.join(agents)}). With *resume* it must "
        "be an agent, which continues exactly where it stopped (its remembered node "
        "and step); without, execution restarts at the node (and step) given. A rule "
        "fires at most *times* per turn."
    )
    widgets.flash(FLASH)
    if saved.hooks:
        with st.container(key="design-hooks"):
            st.table(hook_rows(saved.hooks), hide_index=True)
        remove, go = st.columns([3, 1], vertical_alignment="bottom")
        remove.selectbox(
            "Hook to remove",
            range(len(saved.hooks)),
            key="design:hook-remove",
            format_func=lambda i: f"{i + 1}: {saved.hooks[i].key()}",
        )
        go.button(
            "Remove",
            key="design:hook-remove-button",
            on_click=_remove_hook,
            args=(store,),
            icon=":material/delete:",
        )
    else:
        st.caption("No hooks: the guardrail switch is the only one (when on).")
    nodes = design_nodes(saved)
    with st.container(border=True, key="design-hook-form"):
        event, node, target = st.columns(3)
        chosen = event.selectbox(
            "Event", list(EVENTS), format_func=EVENTS.__getitem__, key="design:hook-event"
        )
        node.selectbox(
            "Node watched",
            ["*", *nodes],
            key="design:hook-node",
            disabled=chosen == "before_run",
            help="'*': any node. A before_run hook watches no node.",
        )
        target.text_input(
            "Target (node or agent)",
            key="design:hook-target",
            placeholder=f"e.g. {nodes[0] if nodes else saved.system}",
        )
        resume, step, times = st.columns(3, vertical_alignment="bottom")
        resume.toggle(
            "Resume",
            key="design:hook-resume",
            help="The target is an agent: it continues where it stopped.",
        )
        step.number_input(
            "Step (optional)",
            min_value=0,
            value=None,
            step=1,
            key="design:hook-step",
            help="Without resume: the step to restart at (empty: keep it).",
        )
        times.number_input(
            "Times per turn", min_value=1, max_value=100, value=1, key="design:hook-times"
        )
        st.button(
            "Add hook",
            key="design:hook-add",
            on_click=_add_hook,
            args=(store,),
            icon=":material/add:",
        )
