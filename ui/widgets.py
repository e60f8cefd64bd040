"""Streamlit pieces more than one page uses: the sidebar, and the parts of a run's view."""

from __future__ import annotations

import json
import logging
import time

import streamlit as st

from ui import services, table_flow
from ui.model_text import model_markdown
from ui.run_view import RunView, message_title, modes_text
from ui.view_models import Panel

log = logging.getLogger(__name__)

MESSAGES_SHOWN = 40
# The graph's fullscreen button shows only on hover in Streamlit; a teacher at a
# projector should see it. Presentation mode also hides the sidebar and enlarges the
# step tables, for a room to read.
GRAPH_TOOLBAR_VISIBLE = """<style>
.st-key-run-graph [data-testid="stElementToolbar"] { opacity: 1 !important; }
[data-testid="stMainBlockContainer"] { padding-bottom: 2rem; }
</style>"""  # and the Run page ends at its last part: Streamlit leaves 10 rem blank below
PRESENTATION = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100% !important; padding-left: 2rem;
  padding-right: 2rem; }
[data-testid="stTable"] td, [data-testid="stTable"] th { font-size: 1.15rem; }
</style>"""
# The Run page at a projector's 1280x720: Streamlit's 6rem above the title is halved.
RUN_PAGE = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 3rem; }
</style>"""
MESSAGE_CHARS = 1200
# A run's table of more rows than this scrolls inside a box of this height (about half
# a 720 px projector screen, with the status line and the answer's top in view), so the graph beside it is not left over empty space.
PANEL_ROWS_SHOWN = 6
PANEL_CHARS_SHOWN = 800  # or fewer rows of long texts (a subtask's result, say)
PANEL_BOX_PX = 340
# The wordiest column of a table (a step's action, a subtask's instruction) keeps a
# readable width in a half-width column; the table scrolls sideways instead.
WORDY_COLUMN = """<style>
.st-key-{box} [data-testid="stTable"] tr > :nth-child({nth}) {{ min-width: 15em; }}
</style>"""


def keep(key: str) -> None:
    """Copy widget ``key``'s value where it outlives the page (an on_change callback).
    Streamlit drops a widget's state when a page without it runs, so a teacher's Pace or
    Presentation would be back to its default after a look at History."""
    st.session_state[f"kept:{key}"] = st.session_state.get(key)


def restore(key: str, allowed: list | None = None) -> bool:
    """Give widget ``key`` the value kept by ``keep`` if the page dropped it (and it is
    still one of ``allowed``); True when the widget has a value in the session state
    already, so the page must not pass it a default as well."""
    kept = f"kept:{key}"
    if key not in st.session_state and kept in st.session_state:
        value = st.session_state[kept]
        if allowed is None or value in allowed:
            st.session_state[key] = value
    return key in st.session_state


def wordiest_column(rows: list[dict]) -> int | None:
    """The position of the column with the longest texts, when they are long enough to be
    squeezed to a word per line (over 40 characters at their longest)."""
    if not rows:
        return None
    columns = list(rows[0])
    longest = [max(len(str(r.get(c) or "")) for r in rows) for c in columns]
    best = max(range(len(columns)), key=longest.__getitem__)
    return best if longest[best] > 40 else None


def sidebar() -> None:
    """The model in use and where everything is kept, on every page."""
    with st.sidebar:
        st.caption("Model in use")
        try:
            settings = services.model_settings()
            profile = services.service().profiles.active().name
        except Exception as exc:  # the store cannot be opened: said below
            settings, profile = services.settings(), ""
            log.warning("the active model profile could not be read: %s", exc)
        st.markdown(f"**{settings.model_label}**")
        if profile:
            st.caption(f"profile: {profile}")
        if settings.resolved_provider == "scripted":
            st.caption(
                "Deterministic rules over the bundled data: no API key or network. "
                "Add a model profile on the Model page to use a real model."
            )
        st.page_link("app_pages/model.py", icon=":material/memory:", label="Model settings")
        st.caption("Store")
        failure: Exception | None
        try:
            store = services.store()
            live = services.service().live_runs()
        except Exception as exc:  # an unwritable STEPWISE_HOME, a PostgreSQL server down...
            st.error(f"The store cannot be opened: {exc}")
            failure = exc
        else:
            failure = None
    if failure is not None:
        # Every page reads the store: say why on the page, not with a traceback.
        st.error(f"The store cannot be opened: {failure}")
        st.stop()
    with st.sidebar:
        st.markdown(f"`{store.location}`")
        st.caption(
            f"open · {len(live)} run(s) in progress" if live else "open · no run in progress"
        )
        if settings.server_url:
            st.caption("Runs execute on the LangGraph Server")
            st.markdown(f"`{settings.server_url}`")
            problem = services.server_problem()
            if problem:
                st.warning(problem, icon=":material/cloud_off:")
        waiting = store.count_runs("waiting")  # every page: counted, not read (issue 33)
        if waiting:
            st.page_link(
                "app_pages/approvals.py",
                icon=":material/front_hand:",
                label=f"{waiting} run(s) waiting for a decision",
            )


def notices(view: RunView) -> None:
    """The engine's and the model adapter's notes on the run: repairs, fallbacks, guards."""
    if view.notices:
        with st.expander(f"Notices ({len(view.notices)})"):
            st.markdown("\n".join(f"- {n}" for n in view.notices))


def say(flash_key: str, kind: str, text: str) -> None:
    """Leave a message ("success", "warning" or "error") for the page's next run to show:
    a callback's outcome, shown by ``flash`` where the page wants it. The one way the
    pages report what a button did."""
    st.session_state[flash_key] = (kind, text, time.time())


def flash(flash_key: str, keep_s: float = 0) -> None:
    """Show the message left by the last action: once, or (``keep_s``) for that many
    seconds, so a page redrawn by its watcher does not take it away before it is read."""
    found = st.session_state.get(flash_key)
    if not found:
        return
    kind, text, said_at = found
    if not keep_s or time.time() - said_at > keep_s:
        del st.session_state[flash_key]
        if keep_s:
            return
    {"success": st.success, "warning": st.warning}.get(kind, st.error)(text)


def store_or_stop():
    """The store, or a readable error and the end of the page."""
    try:
        return services.store()
    except Exception as exc:
        st.error(f"The store under STEPWISE_HOME cannot be opened: {exc}")
        st.stop()


def profile_name(design: dict) -> str:
    """The model profile a run was made on, as its design records it ("" when it ran on
    the environment's settings, as every run did before profiles)."""
    return str(((design or {}).get("model") or {}).get("profile") or "")


def run_status(view: RunView) -> None:
    """The run's state in words; a failure says why, never with a traceback."""
    record = view.record
    from ui.run_times import format_duration

    took = format_duration(view.work_s if view.work_s is not None else record.duration_s)
    facts = [f"status **{record.status}**", *view.header]
    if record.parent_run:
        facts.append(f"fork of run {record.parent_run[:8]}")
    if took:
        facts.append(f"{took} of work")
    facts += view.idle
    facts.append(record.model_label)
    if profile := profile_name(record.design):
        facts.append(f"profile “{profile}”")
    st.markdown(" · ".join(facts))
    if modes := modes_text(view.modes):
        st.caption(modes)
    if record.status == "failed":
        st.error(f"The run failed: {record.reason or 'no reason was recorded.'}")
    elif record.status in ("cancelled", "interrupted"):
        st.warning(f"The run was {record.status}: {record.reason}")
    elif record.status == "queued":
        st.info("Queued: it starts as soon as a worker is free.")
    # waiting / paused: the run panel shows what it waits for and the buttons to go on


STATUS_STYLE = {
    "pending": ":gray[pending]",
    "running": ":blue[**running**]",
    "waiting": ":violet[**waiting**]",
    "delegated": ":blue[**delegated**]",
    "done": ":green[done]",
    "replanned": ":orange[**replanned**]",
    "skipped": ":gray[skipped]",
    "failed": ":red[**failed**]",
    "cancelled": ":orange[**cancelled**]",
}


def panel(part: Panel, key: str, folded: bool = False) -> None:
    """One part of a run's page, as its system laid it out: a table, or collapsible items
    (each a few lines, a table and messages). ``folded``: under a closed expander that
    says how many rows or items it holds (a part a class does not need to read). A long
    table is drawn in a box of its own height that scrolls down, the newest row in view:
    beside the graph it would otherwise run screens below it (a bus of 16 messages made
    the Run page 7 screens long)."""
    if folded:
        count = len(part.rows) or len(part.items)
        with st.expander(f"{part.title} ({count})"):
            _panel_body(part, key)
        return
    # Beside the graph its caption is the title's help: three lines there pushed the table
    # below the graph's top.
    st.subheader(part.title, help=part.caption or None)
    _panel_body(part, key, caption=False)


def _panel_body(part: Panel, key: str, caption: bool = True) -> None:
    if part.caption and caption:
        st.caption(part.caption)
    words = sum(len(str(v)) for r in part.rows for v in r.values())
    long = len(part.rows) > PANEL_ROWS_SHOWN or words > PANEL_CHARS_SHOWN
    with st.container(
        key=f"{key}-{part.key}",
        **({"height": PANEL_BOX_PX, "autoscroll": True} if long else {}),  # type: ignore[arg-type]
    ):
        if part.rows:
            rows = part.rows
            if part.status_column:
                rows = [
                    {
                        **r,
                        part.status_column: STATUS_STYLE.get(
                            r[part.status_column], r[part.status_column]
                        ),
                    }
                    for r in rows
                ]
            if part.lead_columns:
                st.html(
                    table_flow.flow_css(
                        f"{key}-{part.key}", part.rows, part.lead_columns, _wordiest(part)
                    )
                )
            elif (wordy := wordiest_column(rows)) is not None:
                st.html(WORDY_COLUMN.format(box=f"{key}-{part.key}", nth=wordy + 1))
            st.table(rows, hide_index=True)
        for item in part.items:
            with st.expander(item["label"], expanded=bool(item.get("open"))):
                if item.get("text"):
                    model_markdown(item["text"])
                if item.get("rows"):
                    st.table(item["rows"], hide_index=True)
                if "messages" in item:
                    message_list(item["messages"])
        if not part.rows and not part.items and part.empty:
            (st.info if part.empty.endswith("…") else st.caption)(part.empty)


def _wordiest(part: Panel) -> str | None:
    """The column with the longest texts that is not a lead column: it gets a line of its
    own under each row."""
    others = [c for c in part.rows[0] if c not in part.lead_columns]
    if not others:
        return None
    return max(others, key=lambda c: max(len(str(r.get(c) or "")) for r in part.rows))


def message_list(messages: list[dict]) -> None:
    """Each message: who sent it and what kind, its text, its tool calls."""
    if not messages:
        st.caption("No messages match.")
        return
    if len(messages) > MESSAGES_SHOWN:
        st.caption(
            f"Showing the last {MESSAGES_SHOWN} of {len(messages)} messages; pick a "
            "step or an agent to narrow them down."
        )
        messages = messages[-MESSAGES_SHOWN:]
    for message in messages:
        with st.container(border=True):
            st.markdown(f"**{message_title(message)}**")
            content = message.get("content") or ""
            if len(content) <= MESSAGE_CHARS:
                if content:
                    st.text(content)
            else:
                st.text(content[:MESSAGE_CHARS] + " …")
                with st.expander(f"The whole message ({len(content):,} characters)"):
                    st.text(content)
            for call in message.get("tool_calls") or []:
                st.code(
                    f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)})",
                    language="python",
                    wrap_lines=True,
                )


def final_answer(view: RunView) -> None:
    """The answer with its sources and, beside it, its chart (one screen, not two)."""
    snapshot = view.snapshot
    spec = snapshot.get("chart_spec")
    words, drawing = st.columns(2, gap="medium") if spec else (st.container(), None)
    with words:
        _answer_text(view, snapshot)
    if drawing is not None:
        with drawing:
            st.vega_lite_chart(spec=spec, width="stretch")
            if caption := snapshot.get("chart_caption"):
                st.caption(caption)


def _answer_text(view: RunView, snapshot: dict) -> None:
    answer = snapshot.get("final_answer") or view.record.final_answer
    if answer:
        model_markdown(answer)
    elif view.live or view.record.status in ("waiting", "paused"):
        st.caption(view.system.answer_pending)
    else:
        st.caption("This run ended without a final answer.")
    citations = snapshot.get("citations") or []
    if citations:
        with st.expander(f"Sources cited ({len(citations)})"):
            st.markdown("\n".join(_citation(c) for c in citations))


def _citation(citation: dict) -> str:
    title = citation.get("title") or ""
    url = citation.get("url")
    if title.startswith("SQL: "):
        title = f"SQL `{title.removeprefix('SQL: ')}`"
    text = f"[{citation['id']}] {title}".strip()
    return f"- {text} ({url})" if url else f"- {text}"
