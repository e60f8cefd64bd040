"""One run, as the Run and History pages show it: its status and the actions it allows
(stop, resume, next, continue, decide, edit the request, add it to an eval set), the
parts its system shows (``SystemView.panels``: a plan's steps and history, a message bus,
subtasks...), the model use, the conversation, the answer, the graph and the messages
(as a trace).

While the run goes, only this part of the page is redrawn (a fragment polling the
store). A run that waits for a human or is paused in step mode is not polled; a small
watcher redraws the page when someone else moves it on (another tab, the Approvals
page, an approval timeout).
"""

from __future__ import annotations

import logging

import streamlit as st

from graph.kernel.checkpoints import pending_nodes, running_node
from graph.kernel.design import Design
from graph.kernel.system import systems
from graph.service.store import Store
from ui import (
    access,
    add_to_eval_set,
    approvals,
    conversation_view,
    graph_fit,
    model_calls,
    playground_view,
    run_annotation,
    services,
    trace_panel,
    widgets,
)
from ui.event_feed import FEED
from ui.run_view import (
    POLL_S,
    WATCH_S,
    load_run_view,
    run_mode,
    usage_summary,
)

log = logging.getLogger(__name__)

RESUMABLE = ("interrupted", "failed", "cancelled")
# The tabs under a run's answer and follow-up box, for what a class does not need; the
# same labels whatever the run, so the tab a user chose stays chosen while a live run
# redraws (and nothing a class needs is in one when a redraw resets it).
BELOW = ["Model use", "Messages", "More about this run"]
ANSWER_BOX_PX = 220


def show(store: Store, run_id: str, key: str, seen_status: str | None = None) -> None:
    """The run's view; ``key`` keeps this page's widgets apart from another page's.

    ``seen_status``: the status the page has already shown (in a run list, say). Polling
    follows it, so a run that ended meanwhile is noticed and the whole page redrawn."""
    record = services.run_record(store, run_id)
    if record is None:
        st.warning("This run is no longer in the store.")
        return
    if record.system not in systems():  # stored by an import before imports were checked
        st.warning(
            f"This run is of the system “{record.system}”, which this app does not host: "
            "it is listed, and can be deleted on the History page, but not shown."
        )
        return
    status = seen_status or record.status
    mode = run_mode(status)
    if services.system_of(record.design).forks.edit_goto is not None:
        # Kept, greyed, when the run has ended: the page under the pointer does not move.
        _edit_control(store, run_id, key, mode in ("live", "waiting", "paused"))
    st.fragment(run_every=POLL_S if mode == "live" else None)(_panel)(store, run_id, mode, key)
    # Below the run, outside the polling fragment (edits there are not disturbed): when a
    # run ends it appears under what the class is reading, never above the status line.
    # Full width (its checks are edited in a table); scoring, which a class does not
    # need, is under "More about this run".
    if mode != "live":
        add_to_eval_set.control(store, run_id, key)
    if mode in ("waiting", "paused"):
        st.fragment(run_every=WATCH_S)(_watch)(store, run_id, status, store.latest_seq(run_id))


def _watch(store: Store, run_id: str, status: str, seq: int) -> None:
    record = services.run_record(store, run_id)
    if record is None or record.status != status or store.latest_seq(run_id) != seq:
        st.rerun()


def _checkpoint(compiled, run_id: str) -> tuple[tuple[str, ...] | None, dict, str | None]:
    """The nodes the run's last checkpoint runs next (None: it could not be read), the
    state they will read, and the node to mark running (inside a team when the team runs).
    Read once: a live page reads again at its next refresh, and a settled one offers
    Resume, whose service says why if it cannot."""
    if compiled is None:
        return None, {}, None
    try:
        snap = compiled.get_state({"configurable": {"thread_id": run_id}}, subgraphs=True)
    except Exception:  # no checkpoint (an imported run), or one this build cannot read
        log.warning("the checkpoint of run %s could not be read", run_id, exc_info=True)
        return None, {}, None
    return pending_nodes(snap), dict(snap.values or {}), running_node(snap)


def _stop(run_id: str, key: str) -> None:
    if not access.permitted("run", f"{key}:flash"):
        return
    if not services.service().cancel(run_id):
        widgets.say(f"{key}:flash", "error", "That run is not in progress any more.")


def _resume(run_id: str, key: str, step_mode: bool = False) -> None:
    try:
        access.require("run")
        services.service().resume(run_id, step_mode=step_mode)
    except (ValueError, KeyError) as exc:
        widgets.say(f"{key}:flash", "error", str(exc))


def _panel(store: Store, run_id: str, mode: str, key: str) -> None:
    view = load_run_view(
        store, run_id, events=FEED.events(store, run_id), record=services.run_record(store, run_id)
    )
    if view is None:
        st.warning("This run is no longer in the store.")
        return
    if run_mode(view.record.status) != mode:
        st.rerun()  # it ended, paused or went on: redraw the whole page once
    status = view.record.status
    try:
        compiled = services.compiled_graph(Design.model_validate(view.record.design))
    except Exception as exc:  # a design this version of the app cannot build
        log.warning("run %s: its design cannot be built here: %s", run_id, exc)
        compiled, graph_problem = None, str(exc)
    else:
        graph_problem = ""
    upcoming, values, running = _checkpoint(compiled, run_id)

    facts, actions = st.columns([5, 2], vertical_alignment="center")
    with facts:
        widgets.run_status(view)
    if mode == "live":
        actions.button(
            "Stop", on_click=_stop, args=(run_id, key), icon=":material/stop:", key=f"{key}:stop"
        )
    elif status in RESUMABLE and (upcoming or upcoming is None):
        # Unknown (unreadable checkpoint) still offers Resume: the service says why if not.
        actions.button(
            "Resume",
            on_click=_resume,
            args=(run_id, key),
            type="primary",
            icon=":material/play_arrow:",
            key=f"{key}:resume",
            help="Go on from the last checkpoint"
            + (f": {', '.join(upcoming)} runs next." if upcoming else "."),
        )
    if mode == "live":
        model_calls.show(run_id)
    else:
        with actions:
            playground_view.run_button(run_id, key=f"{key}:try")
    widgets.flash(f"{key}:flash")
    widgets.notices(view)

    # The controls, the step table and the graph side by side: a class sees the table
    # change and the graph's marked node move without scrolling.
    # In presentation the graph gets three fifths: at 1280 px a six-agent graph then fits
    # whole at its natural size.
    shares = [2, 3] if st.session_state.get(f"{key}:presentation") else [1, 1]
    work, drawing = st.columns(shares, gap="medium")
    with work:
        if status == "waiting":
            st.subheader("Waiting for your decision")
            for item in store.pending_interrupts(run_id):
                approvals.approval_card(
                    {"run_id": run_id, "question": view.record.question, **item},
                    key=f"{key}:approval:{item['id']}",
                    flash_key=f"{key}:flash",
                    design=view.record.design,
                )
        elif status == "paused":
            _paused(view, run_id, upcoming, values, key)
        if view.panels:  # the system's main table; the others full width below, folded
            widgets.panel(view.panels[0], key)
    with drawing, st.container(key=f"{key}-graph"):
        # the heading and the size control on one line: the graph starts higher
        head = st.container(horizontal=True, vertical_alignment="bottom", gap="large")
        head.subheader(
            "Graph",
            help="▶ marks the node running now (or next, when the run waits or is paused); "
            "bold orange edges are the way taken so far, the thickest one just now. "
            f"Graph size: {graph_fit.SIZE_HELP}",
        )
        if compiled is None:
            st.caption(f"The graph of this run cannot be drawn: {graph_problem}")
        else:
            active = running if upcoming and mode != "ended" else None
            graph_fit.design_graph(
                compiled,
                view.system.system,
                key=key,
                active=active,
                taken=view.taken,
                active_note="running" if mode == "live" else "next",
                controls=head,
            )
            # the legend is the heading's help: a caption line here made a teams run in
            # Presentation (its graph taller than its table) 2.5 screens and a bit
    # Under the run, in the page's flow, what a class needs: the answer and, on the Run
    # page, the follow-up box (a tab there was reset by the live page's redraws before the
    # user could type). Only what a class does not need goes under tabs: the model use
    # (one line, shown first on the Run page), the messages (shown first on History, where
    # its users look for the trace) and "More about this run". One after another they
    # made a finished run 4 to 6 screens long at 1280x720.
    st.subheader("Answer")
    # A long answer (a teams run's three results with their links) scrolls in its box.
    long = len(view.snapshot.get("final_answer") or view.record.final_answer or "") > 900
    with st.container(key=f"{key}-answer", height=ANSWER_BOX_PX if long else "content"):
        widgets.final_answer(view)
    conversation_view.show(view, key, chat=key == "run")
    use, messages, more = st.tabs(
        BELOW, key=f"{key}:below", default=BELOW[0] if key == "run" else BELOW[1]
    )
    with use:  # a class reads the run, not its cost
        st.markdown(usage_summary(view.total, view.usage.get(0), view.system.before_first_step))
    with messages:
        trace_panel.show(store, run_id, key)
    with more:
        if mode != "live":
            run_annotation.control(store, run_id, key)
        for panel in view.panels[1:]:
            widgets.panel(panel, key, folded=True)
        conversation_view.agents_and_hooks(view, key)


def _paused(view, run_id: str, upcoming: tuple[str, ...] | None, values: dict, key: str) -> None:
    """Step mode: which node runs next, what it will read, and the buttons to go on."""
    with st.container(border=True, key=f"{key}-paused"):
        node = upcoming[0] if upcoming else "?"
        st.markdown(
            f"**Paused in step mode. Next node: `{node}`** — it {view.system.node_role(node)}."
        )
        controls = st.container(horizontal=True)
        controls.button(
            "Next",
            type="primary",
            on_click=_resume,
            args=(run_id, key, True),
            icon=":material/skip_next:",
            key=f"{key}:next",
            # → and End (each button shows its key): a presenter's remote sends arrow keys
            shortcut="Right",
            help="Run this one node, then pause again (key: →).",
        )
        controls.button(
            "Continue",
            on_click=_resume,
            args=(run_id, key, False),
            icon=":material/fast_forward:",
            key=f"{key}:continue",
            shortcut="End",
            help="Run to the end without pausing (a decision may still be asked) (key: End).",
        )
        with st.expander("The state it will read"):
            st.table(
                [
                    {"Field": name, "Value": "" if value is None else str(value)}
                    for name, value in view.system.paused_fields(values)
                ],
                hide_index=True,
            )


def _edit(run_id: str, key: str) -> None:
    text = (st.session_state.get(f"{key}:edit-text") or "").strip()
    try:
        services.service().edit_request(run_id, text)
    except (ValueError, KeyError) as exc:
        widgets.say(f"{key}:flash", "error", str(exc))
        return
    record = services.store().run(run_id)
    assert record is not None  # its request was just edited
    view = services.view_of_design(record.design)
    widgets.say(f"{key}:flash", "success", f"Request edited: {view.edited}")


def _edit_control(store: Store, run_id: str, key: str, open_: bool) -> None:
    """The "Edit request" control, while the run goes or waits: outside the polling
    fragment, so what the user types is not disturbed by the refreshes. ``open_`` False:
    the run has ended; the box stays where it was, the same height, greyed, and says so."""
    snapshot = store.snapshot(run_id) or {}
    record = store.run(run_id)
    current = snapshot.get("request") or (record.question if record else "")
    revision = snapshot.get("request_revision") or 0
    with st.container(key=f"{key}-edit-request"):  # no border: 34 px less at 720
        text, press = st.columns([5, 1], vertical_alignment="bottom")
        text.text_area(
            # one line either way: the box keeps its height when the run ends
            f"Edit the request while the run goes (revision {revision})"
            if open_
            else f"The run has ended: its request (revision {revision}) can no longer be edited",
            value=current,
            key=f"{key}:edit-text",
            height=68,
            disabled=not open_,
            help="The run replans at once: finished work is kept (never redone), "
            "what the new text no longer asks for is cancelled with the reason, "
            "new work is added.",
        )
        press.button(
            "Edit request",
            key=f"{key}:edit",
            on_click=_edit,
            args=(run_id, key),
            icon=":material/edit_note:",
            disabled=not open_,
            width="stretch",
        )
