"""The Server page's form for a standard human-in-the-loop request of any graph
(LangChain's ``HITLRequest``, or agent-inbox's older ``HumanInterrupt``): each action's
name, description and arguments, the arguments editable as a form built from them (text,
numbers, switches; nested values as JSON) with the whole as JSON one click away, and the
decisions the request allows: approve, edit, reject with a message, respond with text."""

from __future__ import annotations

import json
from typing import Any, Callable

import streamlit as st

from graph.service.server_answers import AnswerForm, decisions_answer
from graph.service.server_console import ServerError, parse_json
from ui import widgets

LABELS = {
    "approve": "Approve",
    "edit": "Send edited",
    "reject": "Reject",
    "respond": "Respond",
}


def _arg_input(key: str, name: str, value: Any) -> None:
    """One argument's widget, filled with its value the first time it is drawn."""
    if isinstance(value, bool):
        st.checkbox(name, value=value, key=key)
    elif isinstance(value, (int, float)):
        st.number_input(name, value=value, key=key)
    elif isinstance(value, str):
        if "\n" in value or len(value) > 80:
            st.text_area(name, value=value, key=key)
        else:
            st.text_input(name, value=value, key=key)
    else:  # nested (or null): JSON
        st.text_area(f"{name} (JSON)", value=json.dumps(value, indent=1), key=key, height=90)


def _edited_args(key: str, args: dict) -> dict:
    """An action's args as the person left them: the JSON box when it is on, else the form
    (a nested field's JSON read back). ``ServerError`` says which field is wrong."""
    if st.session_state.get(f"{key}:as-json"):
        value = parse_json(st.session_state.get(f"{key}:json") or "", "The arguments")
        if not isinstance(value, dict):
            raise ServerError('The arguments must be a JSON object, e.g. {"to": "a@b.c"}.')
        return value
    edited: dict = {}
    for name, value in args.items():
        given = st.session_state.get(f"{key}:arg:{name}", value)
        if isinstance(value, (bool, int, float, str)):
            edited[name] = given
        else:
            edited[name] = parse_json(given or "null", f"The argument {name!r}")
    return edited


def review_form(form: AnswerForm, key: str, send: Callable[[Any], None]) -> None:
    """Each asked action with its arguments (editable when the request allows ``edit``)
    and one button per allowed decision; a decision applies to every action."""
    can_edit = "edit" in form.decisions
    for index, asked in enumerate(form.asked):
        at = f"{key}:action:{index}"
        st.markdown(f"Action **{asked.name or '?'}**")
        if asked.description:
            st.caption(asked.description)
        if not can_edit:
            st.json(asked.args, expanded=True)
            continue
        if st.toggle("Edit as JSON", key=f"{at}:as-json"):
            st.text_area(
                "Arguments (JSON)", value=json.dumps(asked.args, indent=1), key=f"{at}:json"
            )
        else:
            for name, value in asked.args.items():
                _arg_input(f"{at}:arg:{name}", name, value)
    if {"reject", "respond"} & set(form.decisions):
        words = {
            ("reject", "respond"): "Message (sent with a rejection, or as the response)",
            ("reject",): "Message (sent with a rejection)",
            ("respond",): "Response (sent as the answer)",
        }
        which = tuple(d for d in ("reject", "respond") if d in form.decisions)
        st.text_area(words[which], key=f"{key}:message", height=70)

    def decide(decision: str) -> None:
        try:
            edited = (
                [_edited_args(f"{key}:action:{i}", a.args) for i, a in enumerate(form.asked)]
                if decision == "edit"
                else None
            )
            value = decisions_answer(
                form, decision, st.session_state.get(f"{key}:message") or "", edited
            )
        except ServerError as exc:
            widgets.say("server:flash", "error", str(exc))
            return
        send(value)

    for column, decision in zip(st.columns(len(form.decisions)), form.decisions):
        column.button(
            LABELS.get(decision, decision.capitalize()),
            key=f"{key}:{decision}",
            type="primary" if decision == "approve" else "secondary",
            on_click=decide,
            args=(decision,),
        )
