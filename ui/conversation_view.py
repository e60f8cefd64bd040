"""A run as a conversation (docs/systems/conversations.md), for every hosted system: the user's messages and
what became of each (checked by the guardrail, queued, refused with its reason,
answered), a box to send a follow-up, the top-level agents' memory (active, hibernated,
finished, where each resumes), tool results the guardrail flagged and the hooks that
fired.

It reads only the generic ``conversation`` key of the run's snapshot
(``graph.kernel.conversation.conversation_snapshot``), so a new system needs nothing here.
The row builders are plain functions, testable without Streamlit.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

import streamlit as st

from ui import access, services, widgets
from ui.model_text import model_markdown

# what each turn status means, as the user reads it: (badge colour, words)
TURN_STATUS = {
    "received": ("gray", "received"),
    "checking": ("orange", "checking by the guardrail"),
    "queued": ("violet", "queued until the current plan finishes"),
    "passed": ("blue", "passed the guardrail, starting"),
    "active": ("blue", "in progress"),
    "answered": ("green", "answered"),
    "failed": ("red", "failed"),
    "refused": ("red", "refused by the guardrail"),
}
# A second submit of the same text within this many seconds is one message sent twice
# (a double Enter, or the box's value dispatched again by a refresh that interrupted the
# first), not a message the user meant to send again: it is dropped, with a word why.
REPEAT_S = 5.0
log = logging.getLogger(__name__)
AGENT_STATUS = {"active": "active", "hibernated": "hibernated", "finished": "finished"}


def conversation(snapshot: dict | None) -> dict:
    return (snapshot or {}).get("conversation") or {}


def turn_badge(turn: dict) -> str:
    colour, words = TURN_STATUS.get(str(turn.get("status")), ("gray", turn.get("status") or "?"))
    return f":{colour}-badge[{words}]"


def check_rows(turn: dict) -> list[dict]:
    return [
        {
            "Check": c.get("check", ""),
            "Result": "passed" if c.get("passed") else "failed",
            "Detail": c.get("detail", ""),
        }
        for c in turn.get("checks") or []
    ]


def _when(ts) -> str:
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S") if ts else ""


def agent_rows(convo: dict) -> list[dict]:
    """One row per top-level agent: where it stands and where it would go on."""
    rows = []
    for agent, memory in (convo.get("agent_memory") or {}).items():
        step = memory.get("step")
        rows.append(
            {
                "Agent": agent,
                "Status": AGENT_STATUS.get(memory.get("status"), memory.get("status") or ""),
                "Last node": memory.get("last_node") or "",
                "Resumes at": memory.get("resume_at") or "",
                "Step": "" if step is None else str(step),
                "Updated": _when(memory.get("updated_at")),
            }
        )
    return rows


def flag_lines(convo: dict) -> list[str]:
    """Each flagged tool result in one line: the step, who fetched it, the words found."""
    lines = []
    for flag in convo.get("guardrail_flags") or []:
        where = ", ".join(p for p in (flag.get("node"), flag.get("tool")) if p)
        step = f"Step {flag['step']}" if flag.get("step") is not None else "A tool result"
        excerpt = " ".join((flag.get("excerpt") or "").split())
        lines.append(
            f"{step} ({where}): instructions aimed at the agents found: “{excerpt}” "
            f"(pattern `{flag.get('pattern', '')}`)"
        )
    return lines


def hook_rows(convo: dict) -> list[dict]:
    """Every hook that fired; the error column only when a fallback hook caught one."""
    log = convo.get("hook_log") or []
    errors = any(h.get("error") for h in log)
    return [
        {
            "When": _when(h.get("at")),
            "Event": h.get("event", ""),
            "Node": h.get("node") or "",
            "Target": h.get("target", ""),
            "Resume": "yes" if h.get("resume") else "no",
            "Went to": h.get("goto", ""),
            "Rule": h.get("rule") or "(guardrail switch)",
            "Step": "" if h.get("step") is None else str(h["step"]),
            **({"Error": h.get("error", "")} if errors else {}),
        }
        for h in log
    ]


def is_repeat(last: tuple | None, run_id: str, text: str, now: float) -> bool:
    """Whether ``text`` to ``run_id`` repeats the last message sent (``last``: run id,
    text, monotonic time) within ``REPEAT_S``."""
    if not last or not text.strip():
        return False
    last_run, last_text, sent_at = last
    return last_run == run_id and last_text == text.strip() and now - sent_at < REPEAT_S


def _send(run_id: str, key: str) -> None:
    text = st.session_state.get(f"{key}:chat") or ""
    now = time.monotonic()
    if is_repeat(st.session_state.get(f"{key}:chat-last"), run_id, text, now):
        log.info(
            "run %s: the same follow-up submitted twice within %s s, sent once", run_id, REPEAT_S
        )
        widgets.say(f"{key}:chat-flash", "warning", "This message was just sent; it is sent once.")
        return
    try:
        access.require("run")
        services.service().send_message(run_id, text)
    except (ValueError, KeyError) as exc:
        widgets.say(f"{key}:chat-flash", "error", str(exc))
        return
    st.session_state[f"{key}:chat-last"] = (run_id, text.strip(), now)


def show(view, key: str, chat: bool = True) -> None:
    """The conversation of ``view``'s run; ``chat``: offer the box to send a follow-up."""
    convo = conversation(view.snapshot)
    run_id = view.record.id
    if lines := flag_lines(convo):
        st.warning(
            "**The guardrail flagged tool results**\n\n" + "\n".join(f"- {line}" for line in lines),
            icon=":material/flag:",
        )

    turns = convo.get("turns") or []
    refused = view.refused
    # One question, answered: the conversation only repeats the run's question (its
    # answer is just above), so it is folded, beside the follow-up box (a line of the
    # page, not two); a follow-up or a refusal opens it. The box to send a follow-up stays
    # in the page's flow, never under a tab or a fold.
    alone = len(turns) == 1 and turns[0].get("status") == "answered" and not refused
    place: Any
    box: Any = st
    if alone:
        if chat:
            fold, box = st.columns([1.2, 3], vertical_alignment="center")
        else:
            fold = st.container()
        place = fold.expander("Conversation: 1 message")
    else:
        st.subheader("Conversation")
        place = st.container()
    with place, st.container(key=f"{key}-conversation"):
        if not turns:
            st.caption("This run has no conversation record (it predates conversations).")
        for i, turn in enumerate(turns):
            _turn(turn, answer_below=i == len(turns) - 1)
        for line in refused:
            st.warning(line)
    if chat:
        with box.container(key=f"{key}-chat"):
            st.chat_input(
                "Send a follow-up (same run and thread"
                + (", the guardrail checks it first" if view.record.design.get("guardrail") else "")
                + "; queued while the run works)",
                key=f"{key}:chat",
                on_submit=_send,
                args=(run_id, key),
            )
            widgets.flash(f"{key}:chat-flash")
    else:
        st.caption("Send a follow-up from the Run page.")


def agents_and_hooks(view, key: str) -> None:
    """Folded: a class watches the steps and the answer; who hibernates or resumes where
    is one click away."""
    convo = conversation(view.snapshot)
    rows = agent_rows(convo)
    fired = hook_rows(convo)
    with st.expander(f"Agents ({len(rows)}) and hooks that fired ({len(fired)})"):
        agents, hooks = st.columns(2, gap="large")
    with agents:
        _table(
            "Agents",
            rows,
            f"{key}-agents",
            "No agent has run yet.",
            "An agent hibernates when another takes over, keeping where it stopped: it "
            "resumes at that node and step.",
        )
    with hooks:
        _table("Hooks that fired", fired, f"{key}-hooks", "None.")


def _table(title: str, rows: list[dict], key: str, empty: str, about: str = "") -> None:
    st.markdown(f"**{title}**")
    if about:
        st.caption(about)
    if rows:
        with st.container(key=key):
            st.table(rows, hide_index=True)
    else:
        st.caption(empty)


def _turn(turn: dict, answer_below: bool = False) -> None:
    """One message and what became of it. The latest answer is not repeated here: it is
    shown once, under Answer, with its chart and sources."""
    with st.chat_message("user"):
        st.markdown(turn.get("text") or "")
        st.markdown(turn_badge(turn) + (f" · {_when(turn.get('at'))}" if turn.get("at") else ""))
        if turn.get("checks"):
            with st.expander(f"Guardrail checks ({len(turn['checks'])})"):
                st.table(check_rows(turn), hide_index=True)
    status = turn.get("status")
    if status == "refused":
        with st.chat_message("guardrail", avatar=":material/shield:"):
            st.markdown(f"**Refused:** {turn.get('reason') or 'no reason was recorded.'}")
    elif status == "failed":
        with st.chat_message("assistant", avatar=":material/error:"):
            st.markdown(f"**The run failed on this message:** {turn.get('reason') or ''}")
    elif status == "answered" and turn.get("answer"):
        with st.chat_message("assistant"):
            if answer_below:
                st.caption("Answered: the answer is above, under **Answer**.")
            else:
                model_markdown(turn["answer"])
