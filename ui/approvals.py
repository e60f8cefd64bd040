"""A pending approval and its controls: shared by the Approvals page and the Run page.

Each card answers exactly one interrupt (by its id), so two questions of one run are
decided separately. The decision goes to the run service, which resumes the run in a
worker; the card only reports what happened.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime

import streamlit as st
from pydantic import ValidationError

from graph.kernel.design import Design
from ui import access, inbox_keys, inbox_view, services, widgets
from ui.roles import Refused
from ui.run_times import ago
from ui.view_models import ApprovalView

log = logging.getLogger(__name__)

DONE_WORDS = {
    "approve": "Approved",
    "edit": "Approved with your query",
    "reject": "Rejected",
    "skip": "Skipped",
    "retry": "Asked a retry of",
}


def waiting_since(asked_at: float | None, now: float | None = None) -> str:
    """ "12:03:04 (5 min ago)": when the run started waiting, and for how long."""
    if not asked_at:
        return "unknown"
    now = now or time.time()
    return f"{datetime.fromtimestamp(asked_at).strftime('%H:%M:%S')} ({ago(now - asked_at)} ago)"


def timeout_note(item: dict, design: dict | None) -> str:
    """What happens if nobody answers, from the run's own design."""
    try:
        checked = Design.model_validate(design or {})
    except ValidationError:  # a design from an older or newer build: no timeout to state
        return ""
    if not checked.approval_timeout_s:
        return "No timeout: the run waits until someone decides."
    deadline = (item.get("asked_at") or time.time()) + checked.approval_timeout_s
    return (
        f"If nobody decides by {datetime.fromtimestamp(deadline).strftime('%H:%M:%S')}, "
        f"the design's default applies: **{checked.timeout_action}**."
    )


# How each outcome looks where its card's buttons were: a rejection is no success.
OUTCOME_ICONS = {
    "approved": ":material/check_circle:",
    "edited": ":material/edit_note:",
    "rejected": ":material/block:",
    "skipped": ":material/skip_next:",
    "retried": ":material/replay:",
    "timed-out": ":material/timer_off:",
}
OUTCOME_STYLE = """<style>
[class*="st-key-oneline-"] p { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
[class*="st-key-actions-"] { position: relative; gap: 0; }
[class*="st-key-spent-"] { visibility: hidden; }
[class*="st-key-decided-"] { position: absolute; inset: 0; overflow: hidden; }
[class*="st-key-outcome-"] {
  height: 100%; justify-content: center; padding: 0 0.75rem; border-radius: 0.5rem;
}
[class*="st-key-outcome-"] p { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
[class*="st-key-outcome-approved-"], [class*="st-key-outcome-edited-"] {
  background: rgba(33, 195, 84, 0.12); color: rgb(23, 114, 51);
}
[class*="st-key-outcome-rejected-"] { background: rgba(255, 43, 43, 0.10); color: rgb(158, 22, 22); }
[class*="st-key-outcome-skipped-"] { background: rgba(128, 132, 149, 0.14); color: rgb(74, 76, 86); }
[class*="st-key-outcome-retried-"] { background: rgba(28, 131, 225, 0.10); color: rgb(0, 66, 128); }
[class*="st-key-outcome-timed-out-"] {
  background: rgba(255, 164, 33, 0.16); color: rgb(146, 84, 0);
}
</style>"""

# (label, decision, icon), in the order the card shows them.
BUTTONS = (
    ("Approve", "approve", ":material/check:"),
    ("Approve edited query", "edit", ":material/edit:"),
    ("Reject", "reject", ":material/close:"),
    ("Skip", "skip", ":material/skip_next:"),
    ("Retry", "retry", ":material/replay:"),
)


def _decide(item: dict, decision: str, key: str, flash_key: str, in_place: bool = False) -> None:
    """``in_place``: the card shows its own outcome where its buttons were (the inbox), so
    success says nothing more under it: a message there would push every card below down."""
    query = (st.session_state.get(f"{key}:query") or "").strip()
    reason = (st.session_state.get(f"{key}:reason") or "").strip()
    if decision == "edit" and query == (item.get("query") or "").strip():
        widgets.say(
            flash_key,
            "error",
            "The query is unchanged: edit it in the box first, or press Approve.",
        )
        return
    if decision == "edit" and not query:
        widgets.say(flash_key, "error", "The edited query is empty.")
        return
    if decision == "reject" and not reason:
        widgets.say(
            flash_key,
            "error",
            "Say why you reject it: your reason is recorded and passed on to the run."
            + (" Type it in the reason box, then press Ctrl+Enter or Reject." if in_place else ""),
        )
        if in_place:
            inbox_keys.arm(item["id"])  # the cursor goes to the reason box
        return
    answered = st.session_state.setdefault("approvals:answered", [])
    if item["id"] in answered:
        # The same press handled twice (a card's countdown redrawn by itself ran the
        # button's callback again): answered already, by this very press. Nothing to say.
        log.info("question %s: one decision handled twice, sent once", item["id"])
        return
    # Marked before it is sent: a second run of this callback that starts while the first
    # is cut short after sending finds it answered, instead of an error under the card.
    answered[:] = [*answered[-199:], item["id"]]
    try:
        person = access.require("decide")
        services.service().decide(
            item["run_id"],
            item["id"],
            decision,
            query=query if decision == "edit" else "",
            reason=reason,
            by=person.by,
        )
    except (ValueError, KeyError, Refused) as exc:
        answered.remove(item["id"])
        widgets.say(flash_key, "error", str(exc))
        return
    if in_place:
        st.session_state.pop(inbox_keys.ARMED, None)
        return
    widgets.say(
        flash_key,
        "success",
        f"{DONE_WORDS[decision]} step {item.get('step')} ({item.get('agent')}) of "
        f"“{item.get('question', 'the run')}”: the run goes on.",
    )


@st.fragment(run_every=1)
def _clock(item: dict, prefix: str) -> None:
    """The one line of a card that changes by itself: how long it has waited and how
    long until its deadline. Redrawn alone each second, so typing in the card's boxes
    is never interrupted."""
    now = time.time()
    st.caption(
        f"{prefix}Waiting since {waiting_since(item.get('asked_at'), now)} · "
        f"{inbox_view.countdown(item, now)}"
    )


def _with_timeout(item: dict, design: dict | None) -> dict:
    """The item with its design's timeout (the Run page's items do not carry it)."""
    if "timeout_s" in item:
        return item
    try:
        parsed = Design.model_validate(design or {})
    except ValidationError:  # a design from an older or newer build: no timeout to state
        return item
    return {
        **item,
        "timeout_s": parsed.approval_timeout_s,
        "timeout_action": parsed.timeout_action,
    }


def tool_call_view(item: dict) -> ApprovalView:
    """A gated tool's call (``graph.kernel.tool_gate``), in any system: the exact tool and
    arguments, which an edit changes."""
    call = item["tool_call"]
    server = f" of the MCP server {call['server']}" if call.get("server") else ""
    step = f"Step {item['step']} · " if item.get("step") is not None else ""
    return ApprovalView(
        f"**{step}{item.get('agent')}** · approval before the tool "
        f"**{call.get('tool')}**{server} is called",
        code=json.dumps(call.get("args") or {}, ensure_ascii=False, indent=2),
        note="Approve calls the tool with exactly these arguments. To change them, edit the "
        "JSON object below and press Approve edited query. Reject or Skip: the tool is not "
        "called and the agent is told why.",
        help={
            "reject": "Do not call the tool: the agent is told your reason.",
            "skip": "Do not call the tool.",
        },
        placeholder="e.g. why not call it",
        query_label="The tool's arguments (a JSON object; edit them, then Approve edited query)",
    )


def approval_card(
    item: dict,
    *,
    key: str,
    flash_key: str,
    design: dict | None = None,
    link_run: bool = False,
    show_flash: bool = False,
    keys: dict[str, str] | None = None,
    compact: bool = False,
) -> None:
    """One question with its facts and the buttons that answer it. A decided question
    (``item["decided"]``) keeps its card, boxes greyed, and a line saying who decided
    what and when where the buttons were: nothing below moves up under the pointer.
    ``compact``: a decided question is drawn with no boxes and no buttons (one decided
    before the page was opened: nothing can move that was never shown waiting, and a
    session keeps every widget a page drew while Streamlit keeps it). ``show_flash``:
    the card shows its own messages, under its buttons. ``keys``: the keyboard shortcut
    of each decision's button (the inbox's current card)."""
    decided = item.get("decided")
    st.html(OUTCOME_STYLE)
    with st.container(border=True, key=f"approval-{item['id']}"):
        kind = item.get("kind") or "approval"
        view = (
            tool_call_view(item)
            if isinstance(item.get("tool_call"), dict)
            else services.view_of_design(design).approval_view(item)
        )
        st.markdown(view.heading)
        short = compact and bool(decided)  # its run, why it asked, what was decided
        if view.code and not short:
            st.code(
                view.code, language="json" if item.get("tool_call") else "http", wrap_lines=True
            )
        if view.note and not short:
            st.caption(view.note)
        prefix = f"Run: “{item.get('question', '')}” · " if link_run else ""
        # The lines a decision rewrites, one line each whatever their length: a clock
        # line wrapping where its decided line does not would move every card below.
        with st.container(key=f"oneline-when-{item['id']}"):
            if decided:
                st.caption(f"{prefix}Asked at {waiting_since(item.get('asked_at'))}")
            else:
                _clock(_with_timeout(item, design), prefix)
        st.markdown(f"**Why it asks:** {item.get('reason') or 'no reason recorded'}")
        if compact and decided:  # ``short``
            _outcome(item, decided, over_buttons=False)
            if link_run:
                _watch_link(item)
            return
        with st.container(key=f"oneline-note-{item['id']}"):
            if decided:  # one line in the note's place, so the card keeps its height
                st.caption("Answered: the deadline no longer applies.")
            elif note := timeout_note(item, design):
                st.caption(note)
        query_box, reason_box = st.columns([3, 2])
        query_box.text_area(
            view.query_label,
            value=item.get("edited_query") or item.get("query") or "",
            key=f"{key}:query",
            height=100,
            disabled=bool(decided),
        )
        reason_box.text_input(
            "Reason (for Reject or Retry)",
            key=f"{key}:reason",
            placeholder=view.placeholder,
            disabled=bool(decided),
            # sent with the button that uses it: a reason typed, then Ctrl+Enter, is
            # never a rerun of its own between the two
            on_change="ignore",
        )
        if not decided and not access.may("decide"):
            st.caption(f"Deciding needs the operator role; {access.role_words()}.")
        else:
            # The outcome is written over the spent buttons, which stay (hidden) to hold
            # the card at exactly its height, however many lines they take at this width.
            with st.container(key=f"actions-{item['id']}"):
                choices = BUTTONS if kind == "escalation" else BUTTONS[:-1]  # retry: escalations
                # Each button as wide as its label, on as many lines as the card needs: in
                # equal columns "Approve edited query" was cut to "A…" at 1280 px.
                row = st.container(
                    horizontal=True, key=f"{'spent' if decided else 'buttons'}-{item['id']}"
                )
                for label, decision, icon in choices:
                    row.button(
                        label,
                        key=f"{key}:{decision}",
                        type="primary" if decision == "approve" else "secondary",
                        on_click=None if decided else _decide,
                        args=None if decided else (item, decision, key, flash_key, show_flash),
                        icon=icon,
                        width="content",
                        wrap=True,
                        help=view.help.get(decision),
                        disabled=bool(decided),
                        shortcut=None if decided else (keys or {}).get(decision),
                    )
                if decided:
                    _outcome(item, decided)
        if show_flash:
            widgets.flash(flash_key, keep_s=120)
        if link_run:
            _watch_link(item)


def _outcome(item: dict, decided: dict, over_buttons: bool = True) -> None:
    """The line saying who decided what and when, with its kind's icon and colour:
    written over the card's spent buttons (``over_buttons``), else in the card's flow."""
    kind_of_outcome = inbox_view.outcome_kind(decided)
    line = f"{OUTCOME_ICONS[kind_of_outcome]} {inbox_view.decided_line(decided)}"
    outcome = f"outcome-{kind_of_outcome}-{item['id']}"
    if not over_buttons:
        st.container(key=outcome).markdown(line)
        return
    with st.container(key=f"decided-{item['id']}"), st.container(key=outcome):
        st.markdown(line)


def _watch_link(item: dict) -> None:
    """The link to the question's run on the Run page."""
    st.page_link(
        "app_pages/run.py",
        label="Watch this run",
        icon=":material/play_circle:",
        query_params={"run": item["run_id"]},
    )
