"""The Server page's pieces: a LangGraph Server's graph, threads, state, history and the
form that answers an interrupt.

The graphs may be anyone's, so nothing here expects Stepwise's plan fields: the state is
shown field by field whatever its keys (a chat graph's ``messages`` as lines, anything
nested as collapsible JSON), with the whole state as JSON one click away.
"""

from __future__ import annotations

import json
from typing import Any, Callable, TypeVar

import streamlit as st

from graph.service.server_answers import answer_form
from graph.service.server_client import configured_server, sends_key_to
from graph.service.server_console import ServerConsole, ServerError, parse_json
from graph.service.server_records import (
    Assistant,
    Checkpoint,
    Interrupt,
    RunSummary,
    ThreadState,
    ThreadSummary,
)
from ui import services, widgets
from ui.graph_fit import GRAPH_NATURAL_SIZE
from ui.server_review import review_form

T = TypeVar("T")
FLASH = "server:flash"
# Seconds an answer or a new run is followed before the page says "still running".
WAIT_S = 30.0
VALUE_CHARS = 160


def default_url() -> str:
    """The URL the page opens first: STEPWISE_SERVER_URL, else ``langgraph dev``'s."""
    return configured_server(services.settings())


def send_key_choice(url: str) -> bool:
    """Whether the server key goes to ``url``: unasked to the configured server; to any
    other only when the user ticks it (a typed URL could be anyone's)."""
    settings = services.settings()
    if settings.server_api_key is None:
        return False
    if sends_key_to(url, settings):
        return True
    return st.checkbox(
        "Send the server key (STEPWISE_SERVER_API_KEY) to this address",
        value=False,
        key=f"server:send-key:{url.strip()}",
        help=f"The key goes unasked only to the configured server, "
        f"{configured_server(settings)}. Tick this only if this server is yours.",
    )


@st.cache_resource(show_spinner=False, max_entries=8)
def _console(url: str, send_key: bool) -> ServerConsole:
    return ServerConsole(url, settings=services.settings(), send_key=send_key)


def console_or_stop(url: str, send_key: bool) -> tuple[ServerConsole, list[Assistant]]:
    """The console for ``url`` and the graphs its server serves, or the reason in one
    sentence and the end of the page."""
    try:
        console = _console(url.strip(), send_key)
        found = console.assistants()
    except ServerError as exc:
        st.error(str(exc))
        st.caption(
            "Start one with `langgraph dev` in a folder with a `langgraph.json`, or set "
            "`STEPWISE_SERVER_URL` to a deployment's URL."
        )
        st.stop()
    if not found:
        st.info("The server answers but serves no graph.")
        st.stop()
    return console, found


def or_stop(call: Callable[[], T]) -> T:
    """``call()``, or its failure in one sentence and the end of the page."""
    try:
        return call()
    except ServerError as exc:
        st.error(str(exc))
        st.stop()


@st.fragment(run_every=2.0)
def watch(console: ServerConsole, thread_id: str, status: str) -> None:
    """While a thread runs, look every 2 s and redraw the page once it stops."""
    try:
        now = console.state(thread_id).status
    except ServerError:
        return
    if now != status:
        st.rerun(scope="app")
    st.caption(f":material/hourglass_top: The thread is {status}; the page redraws when it stops.")


def graph_drawing(console: ServerConsole, assistant: Assistant, active: str | None) -> None:
    """The graph as the server draws it, in Stepwise's style, the next node marked."""
    from graph.kernel.render import LABEL_PT

    try:
        dot = console.graph_dot(assistant.assistant_id, active=active)
    except ServerError as exc:
        st.warning(f"The graph cannot be drawn: {exc}")
        return
    st.html(GRAPH_NATURAL_SIZE.format(pt=LABEL_PT))
    st.graphviz_chart(dot, width="content")


def thread_label(thread: ThreadSummary) -> str:
    """A thread as the picker lists it: the end of its id (a server's ids are UUIDv7, whose
    first characters are a timestamp shared by every thread made in the same minute)."""
    waits = " · waits on a question" if thread.interrupted else ""
    updated = thread.updated_at[:19].replace("T", " ")
    return f"…{thread.thread_id[-12:]} · {thread.status}{waits} · {updated}"


def thread_rows(threads: list[ThreadSummary]) -> list[dict]:
    return [
        {
            "Thread": t.thread_id,
            "Status": t.status,
            "Waits on a person": "yes" if t.interrupted else "",
            "Updated": t.updated_at[:19].replace("T", " "),
            "Created": t.created_at[:19].replace("T", " "),
        }
        for t in threads
    ]


def run_rows(runs: list[RunSummary]) -> list[dict]:
    started = {"input": "an input", "resume": "an answer", "command": "a command"}
    return [
        {
            "Run": r.run_id,
            "Status": r.status,
            "Started by": started.get(r.started_by, r.started_by),
            "Created": r.created_at[:19].replace("T", " "),
        }
        for r in runs
    ]


def short(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value in one line of text, cut with an ellipsis."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def history_rows(history: list[Checkpoint]) -> list[dict]:
    """One line per checkpoint, oldest first: who ran, what changed, what comes next."""
    return [
        {
            "Step": c.step,
            "Source": c.source,
            "Ran": ", ".join(c.ran),
            "Changed": "; ".join(f"{k} = {short(v, 60)}" for k, v in c.changed.items())
            + ("; removed " + ", ".join(c.removed) if c.removed else ""),
            "Next": ", ".join(c.next) + (" (waits on a question)" if c.interrupts else ""),
            "At": c.created_at[11:19],
        }
        for c in history
    ]


def plan_rows(values: Any) -> list[dict] | None:
    """Stepwise's plan, when the graph keeps one: plan_execute's ``plan`` (steps by number,
    with ``step_status`` and ``current_step``) or hierarchical_teams' ``subtasks``. None for
    any other graph, whose state is then shown field by field only."""
    if not isinstance(values, dict):
        return None
    plan, subtasks = values.get("plan"), values.get("subtasks")
    if isinstance(plan, dict) and plan and all(isinstance(s, dict) for s in plan.values()):
        raw = values.get("step_status")
        status = raw if isinstance(raw, dict) else {}
        current = str(values.get("current_step", ""))
        return [
            {
                "Step": ("▶ " if number == current else "") + number,
                "Agent": str(step.get("agent", "")),
                "Action": str(step.get("action", "")),
                "Status": str(status.get(number, "")),
            }
            for number, step in plan.items()
        ]
    if isinstance(subtasks, list) and subtasks and all(isinstance(s, dict) for s in subtasks):
        return [
            {
                "Subtask": str(s.get("id", "")),
                "Team": str(s.get("team", "")),
                "Instruction": str(s.get("instruction", "")),
                "Status": str(s.get("status", "")),
            }
            for s in subtasks
        ]
    return None


def _messages(value: Any) -> list[str] | None:
    """A chat graph's messages as "who: what" lines; None when ``value`` is not that."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(m, dict) and "content" in m for m in value):
        return None
    return [
        f"**{m.get('type') or m.get('role') or '?'}**: {short(m['content'], 400)}" for m in value
    ]


def state_fields(state: ThreadState) -> None:
    """The state as readable fields, whatever the graph's keys; the whole state as JSON
    one click away."""
    plan = plan_rows(state.values)
    if plan:
        st.markdown("**Plan**")
        st.table(plan, hide_index=True)
    fields = state.fields
    if not fields:
        st.caption("The state is empty.")
    for name, value in fields:
        lines = _messages(value)
        if lines is not None:
            st.markdown(f"**{name}** ({len(lines)})")
            st.markdown("  \n".join(lines))
        elif isinstance(value, (dict, list)) and value:
            st.markdown(f"**{name}**")
            st.json(value, expanded=False)
        else:
            shown = value if isinstance(value, str) else json.dumps(value, default=str)
            st.markdown(f"**{name}**: {_escaped(shown)}")
    with st.popover("JSON", icon=":material/data_object:"):
        st.json(state.values)


def _escaped(text: str) -> str:
    """Markdown-safe text: a value is shown as written, never as formatting."""
    for char in "\\`*_{}[]<>()#+-.!|$~":
        text = text.replace(char, "\\" + char)
    return text


def interrupt_form(
    console: ServerConsole, assistant: Assistant, state: ThreadState, item: Interrupt
) -> None:
    """The question a thread waits on, and the ways to answer it: a text box for a simple
    question, buttons for its choices, a standard human-in-the-loop request's actions and
    decisions (``ui.server_review``), free JSON always."""
    form = answer_form(item.value)
    key = f"server:answer:{item.interrupt_id or state.thread_id}"
    node = f" in **{item.node}**" if item.node else ""
    with st.container(border=True, key=key.replace(":", "-")):
        st.markdown(f":material/front_hand: The thread waits on a person{node}.")
        if form.question is not None:
            st.markdown(f"**{_escaped(form.question)}**")
        if not form.simple:
            st.json(item.value, expanded=True)

        def send(value: Any) -> None:
            _send(console, assistant, state, item, value)

        if form.choices:
            for column, choice in zip(st.columns(len(form.choices)), form.choices):
                column.button(choice, key=f"{key}:choice:{choice}", on_click=send, args=(choice,))
        if form.asked:
            review_form(form, key, send)
        if form.question is not None:
            st.text_input("Answer", key=f"{key}:text")
            st.button(
                "Send answer",
                key=f"{key}:send",
                type="primary",
                icon=":material/send:",
                on_click=lambda: send(st.session_state.get(f"{key}:text") or ""),
            )
        with st.expander("Answer with JSON", expanded=not form.simple):
            st.text_area("Resume value (JSON)", key=f"{key}:json", height=100)
            st.button(
                "Send JSON answer",
                key=f"{key}:send-json",
                on_click=lambda: _send_json(console, assistant, state, item, f"{key}:json"),
            )


def _send_json(console, assistant, state, item, text_key: str) -> None:
    try:
        value = parse_json(st.session_state.get(text_key) or "", "The answer")
    except ServerError as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    _send(console, assistant, state, item, value)


def _send(
    console: ServerConsole, assistant: Assistant, state: ThreadState, item: Interrupt, value
) -> None:
    """Resume the thread with the answer and follow it to its next stop."""
    try:
        stop = console.answer(
            state.thread_id,
            assistant.assistant_id,
            value,
            interrupt_id=item.interrupt_id or None,
            wait_s=WAIT_S,
        )
    except ServerError as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    widgets.say(FLASH, "warning" if stop.run_status == "error" else "success", stop.summary)


def start_form(console: ServerConsole, assistant: Assistant, thread_key: str) -> None:
    """A new thread of this graph, started on an input typed as JSON."""
    with st.expander("Start a new thread", icon=":material/add:"):
        st.text_area("Input (JSON)", value="{}", key="server:input", height=100)

        def start() -> None:
            try:
                value = parse_json(st.session_state.get("server:input") or "")
                stop = console.start(assistant.assistant_id, value, wait_s=WAIT_S)
            except ServerError as exc:
                widgets.say(FLASH, "error", str(exc))
                return
            st.session_state[thread_key] = stop.state.thread_id
            widgets.say(FLASH, "success", stop.summary)

        st.button("Start", key="server:start", icon=":material/play_arrow:", on_click=start)


def continue_button(console: ServerConsole, assistant: Assistant, state: ThreadState) -> None:
    """A thread paused at a breakpoint (nodes to run, no question) runs on from there."""

    def proceed() -> None:
        try:
            stop = console.proceed(state.thread_id, assistant.assistant_id, wait_s=WAIT_S)
        except ServerError as exc:
            widgets.say(FLASH, "error", str(exc))
            return
        widgets.say(FLASH, "warning" if stop.run_status == "error" else "success", stop.summary)

    st.button(
        f"Continue ({', '.join(state.next)} next)",
        key="server:continue",
        icon=":material/skip_next:",
        on_click=proceed,
    )
