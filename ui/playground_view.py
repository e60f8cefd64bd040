"""The node playground on the Prompts page, and the button that opens it from a run.

A tuner picks a past run, a checkpoint before a node that sends the prompt being edited,
up to four texts of it (the editor's unsaved edit, the active version, saved versions, the
shipped default), model profiles and a number of samples; the engine
(``graph.service.playground``) asks only that node's model and the replies are shown side
by side. The button on the Run and History pages leaves the run and checkpoint here and
switches to the Prompts page, which opens on the prompt that checkpoint's node sends.
"""

from __future__ import annotations

import logging

import streamlit as st

from graph.agents.user_agents import agent_of_prompt
from graph.prompts import default_text
from graph.service.playground import (
    MAX_PROMPTS,
    MAX_SAMPLES,
    PlaygroundError,
    PromptTry,
    Trial,
    target,
    tryable_points,
)
from graph.service.playground_calls import PlaygroundCall
from ui import playground_fork, services
from ui.prompt_view import runs_for_prompt
from ui.run_view import run_label

log = logging.getLogger(__name__)

PRESET = "playground:preset"
RUN, POINT, TEXTS, PROFILES, SAMPLES = (
    "playground:run",
    "playground:point",
    "playground:texts",
    "playground:profiles",
    "playground:samples",
)
RESULT = "playground:result"
CALL = "playground:call"  # the PlaygroundCall in progress
POLL_S = 0.5  # how often the progress line is redrawn while the calls run
PROBLEM = "playground:problem"
PROMPTS_PAGE = "app_pages/prompts.py"
NOT_TRYABLE = (
    "The playground asks nodes that send a system's own prompts; this prompt is a user "
    "agent's, which its worker is sent, so it cannot be tried here. Its active version is "
    "used by the next run that gives the agent a step."
)


def open_button(
    run_id: str, checkpoint_id: str | None, key: str, node: str = "", why_not: str = ""
) -> None:
    """*Try this node with another prompt*: the playground, preset to this run (and this
    checkpoint, when given); greyed out with ``why_not`` said when it cannot be tried."""
    label = f"Try {node} with another prompt" if node else "Try this node with another prompt"
    if st.button(
        label,
        key=key,
        icon=":material/science:",
        disabled=bool(why_not),
        help=why_not or None,
        wrap=True,  # in a narrow column its label goes on two lines, not cut short
    ):
        st.session_state[PRESET] = {"run_id": run_id, "checkpoint_id": checkpoint_id}
        st.switch_page(PROMPTS_PAGE)


def checkpoint_button(run_id: str, point: dict, key: str) -> None:
    """The button for a checkpoint of the History page's timeline."""
    if not point.get("next"):
        return
    try:
        node = target(services.service(), run_id, point["checkpoint_id"]).ask.node
        why_not = ""
    except PlaygroundError as exc:
        inside = point.get("inside")  # a checkpoint inside a team: "team:node"
        node = f"{inside}:{point['next'][0]}" if inside else point["next"][0]
        why_not = str(exc)
    open_button(run_id, point["checkpoint_id"], key, node=node, why_not=why_not)


def run_button(run_id: str, key: str) -> None:
    """The button for a run that has ended or waits: the playground at its first
    checkpoint the playground can try."""
    open_button(run_id, None, key, node="a node of this run")


def apply_preset(names: list[str]) -> str | None:
    """Take the preset the button left: choose its run and checkpoint, and return the
    prompt that checkpoint's node sends (to open the page on), or None. A preset that
    cannot be tried is said in words."""
    preset = st.session_state.pop(PRESET, None)
    if not preset:
        return None
    service, run_id = services.service(), preset["run_id"]
    try:
        checkpoint = preset.get("checkpoint_id")
        if checkpoint is None:
            points = tryable_points(service, run_id)
            if not points:
                raise PlaygroundError(
                    "No checkpoint of this run is before a node the playground can try."
                )
            checkpoint = points[0]["checkpoint_id"]
        prompt = target(service, run_id, checkpoint).ask.prompt
    except PlaygroundError as exc:
        st.session_state[PROBLEM] = f"This run cannot be tried here: {exc}"
        return None
    st.session_state[RUN], st.session_state[POINT] = run_id, checkpoint
    st.session_state.pop(RESULT, None)
    return prompt if prompt in names else None


def show(name: str, editor_text: str, versions: list, active_text: str) -> None:
    """The playground section for prompt ``name``."""
    st.subheader("Try a node")
    st.caption(
        "Ask one node of a past run again, with the state it had, and other texts of this "
        "prompt: only that node's model is called. Nothing else of the run executes, no "
        "tool runs (a worker's proposed tool call is shown, not made), and nothing is "
        "written to the run. A node inside a team is named team:node."
    )
    if problem := st.session_state.pop(PROBLEM, None):
        st.error(problem)
    if agent_of_prompt(name):  # a user agent's prompt: no node of a run sends it
        st.caption(NOT_TRYABLE)
        return
    store, service = services.store(), services.service()
    started = [r for r in store.runs(limit=40) if r.started_at is not None]
    runs = {r.id: run_label(r) for r in runs_for_prompt(name, started)}
    if st.session_state.get(RUN) and st.session_state[RUN] not in runs:
        record = store.run(st.session_state[RUN])
        if record is not None:
            runs = {record.id: run_label(record), **runs}
    if not runs:
        st.caption("No run to try this prompt on yet: start one on the Run page.")
        return
    run_id = st.selectbox("Run", list(runs), format_func=runs.__getitem__, key=RUN)
    try:
        points = [p for p in tryable_points(service, run_id) if p["prompt"] == name]
    except PlaygroundError as exc:
        st.warning(str(exc))
        return
    if not points:
        st.caption(
            "No checkpoint of this run is before a node that sends this prompt and asks its "
            "model for a plan, a routing decision or a worker's tool call."
        )
        return
    by_id = {p["checkpoint_id"]: p for p in points}
    if st.session_state.get(POINT) not in by_id:
        st.session_state[POINT] = points[0]["checkpoint_id"]
    checkpoint = st.selectbox(
        "Checkpoint",
        list(by_id),
        format_func=lambda c: f"before {by_id[c]['node']} (checkpoint {by_id[c]['number']})",
        key=POINT,
    )
    texts = _texts(name, editor_text, versions, active_text)
    edited = editor_text != active_text  # an edit begun: compared with the active text
    default = ["active"] + (["editor"] if edited else [])
    chosen = st.multiselect(
        "Prompt texts",
        list(texts),
        default=[k for k in default if k in texts],
        format_func=lambda k: texts[k][0],
        max_selections=MAX_PROMPTS,
        key=f"{TEXTS}:{name}:{edited}",
    )
    profiles = service.profiles.all()
    names = [p.name for p in profiles]
    picked = st.multiselect(
        "Model profiles",
        names,
        default=[service.profiles.active().name],
        key=PROFILES,
    )
    samples = st.number_input(
        "Samples of each", min_value=1, max_value=MAX_SAMPLES, value=1, key=SAMPLES
    )
    call: PlaygroundCall | None = st.session_state.get(CALL)
    if st.button(
        "Try it",
        type="primary",
        key="playground:try",
        disabled=not chosen or bool(call and call.running),
        help="The model is still answering the last Try it: wait or cancel it."
        if call and call.running
        else None,
    ):
        tries = [PromptTry(*texts[k]) for k in chosen]
        _start(run_id, checkpoint, tries, [p for p in profiles if p.name in picked], int(samples))
    _call_panel()
    _results(st.session_state.get(RESULT))


def _texts(name: str, editor_text: str, versions: list, active_text: str) -> dict:
    """Each text to offer: its label, the text and its stored version (None: no version
    holds it yet; a fork with it saves one)."""
    active = services.store().active_prompts().get(name)
    texts = {
        "editor": ("the unsaved edit", editor_text, None),
        "active": ("the active text", active_text, active.id if active else None),
    }
    texts["default"] = ("the shipped default", default_text(name), None)
    texts.update({f"v{v.id}": (f"version {v.label}", v.text, v.id) for v in versions})
    return texts


def _start(run_id: str, checkpoint: str, tries: list, profiles: list, samples: int) -> None:
    """The calls go on a thread of their own: a slow model never holds the page, and a
    rerun or another page does not stop them; the result waits in the session."""
    st.session_state.pop(RESULT, None)
    st.session_state[CALL] = PlaygroundCall(
        services.service(), run_id, checkpoint, tries, profiles, samples
    )


def _call_panel() -> None:
    """The calls' progress line and Cancel while they run; once ended, their result."""
    call: PlaygroundCall | None = st.session_state.get(CALL)
    if call is None:
        return
    if call.running:
        st.fragment(run_every=POLL_S)(_progress)()
        return
    del st.session_state[CALL]
    st.session_state[RESULT] = call.trial if call.trial is not None else call.problem


def _progress() -> None:
    call: PlaygroundCall | None = st.session_state.get(CALL)
    if call is None or not call.running:
        st.rerun()  # ended: the whole page shows the result
    with st.container(key="playground-progress"):
        doing = "Cancelling" if call.cancelling else "Asking the model"
        st.progress(
            call.done / max(call.total, 1),
            text=f"{doing}: {call.done} of {call.total} calls done… ({call.elapsed_s:.0f} s)",
        )
        st.button(
            "Cancel",
            key="playground:cancel",
            on_click=call.cancel,
            icon=":material/cancel:",
            disabled=call.cancelling,
            help="Ends the call in flight and asks no more; the replies so far are shown.",
        )


def _results(result: Trial | str | None) -> None:
    if result is None:
        return
    if isinstance(result, str):
        st.error(result)
        return
    st.markdown(f"**{result.node}**, prompt `{result.prompt_name}`")
    for note in result.notes:
        st.info(note, icon=":material/smart_toy:")
    labels = list(dict.fromkeys(s.prompt for s in result.samples))
    with st.container(key="playground-results"):
        for number, (column, label) in enumerate(zip(st.columns(len(labels)), labels)):
            with column:
                st.markdown(f"**{label}**")
                playground_fork.button(result, label, key=f"playground:fork:{number}")
                for sample in (s for s in result.samples if s.prompt == label):
                    _sample(sample)


def _sample(sample) -> None:
    with st.container(border=True):
        st.caption(f"{sample.profile} · sample {sample.number}")
        if sample.ok:
            if sample.rows:
                st.dataframe(sample.rows, hide_index=True)
            if sample.fields:
                st.table([{"field": k, "value": str(v)} for k, v in sample.fields.items()])
        else:
            st.error(sample.problem)
        for notice in sample.notices:
            st.caption(notice)
        if sample.note:
            st.caption(sample.note)
        figures = []
        if sample.tokens is not None:
            figures.append(f"{sample.tokens} tokens")
        if sample.latency_s is not None:
            figures.append(f"{sample.latency_s:.2f} s")
        if figures:
            st.caption(" · ".join(figures))
        if sample.raw:
            with st.expander("Raw reply"):
                st.code(sample.raw, language=None, wrap_lines=True)
