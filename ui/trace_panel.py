"""The Run page's messages as a trace (``ui.trace_view``): one collapsed expander per
step, labelled with its calls, time and tokens; inside, per node, each model call and
tool call with small bars for its latency and tokens against the run's largest, its
text, and its raw JSON one click away.

The expanders track their state (``on_change="rerun"``), so a closed step costs the page
nothing and an open one stays open while a live run redraws with new figures.
"""

from __future__ import annotations

import html
import json

import streamlit as st

from graph.service.store import Store
from ui.event_feed import FEED
from ui.trace_builder import TraceBuilder
from ui.trace_view import (
    Trace,
    TraceItem,
    bar_share,
    filter_trace,
    format_ms,
    format_tokens,
)

TEXT_CHARS = 600  # shown in the step; the whole text is in the raw JSON
LATENCY_COLOUR = "#1565c0"
TOKENS_COLOUR = "#2e7d32"

ALL = "all"  # no filter


def show(store: Store, run_id: str, key: str) -> None:
    """The run's trace, with its Step and Agent filters (under a tab named Messages: no
    heading of its own; the filters and their caption on one line)."""
    trace = FEED.built(store, run_id, "trace", TraceBuilder, TraceBuilder.trace)
    steps, agents = trace.filters()
    by_step, by_agent, about = st.columns([1, 1, 2], vertical_alignment="bottom")
    # "all" rather than None: a selectbox holding None draws its placeholder instead
    step = by_step.selectbox(
        "Step",
        [ALL, *steps],
        key=f"{key}:msg-step",
        format_func=lambda s: "all steps" if s == ALL else f"step {s}",
    )
    agent = by_agent.selectbox(
        "Agent",
        [ALL, *agents],
        key=f"{key}:msg-agent",
        format_func=lambda a: "all agents" if a == ALL else a,
    )
    shown = filter_trace(
        trace, step if isinstance(step, int) else None, None if agent == ALL else agent
    )
    if not shown.steps:
        about.caption("No messages yet." if not trace.steps else "No messages match.")
        return
    about.caption(
        "Each step's model calls and tool calls, in order, grouped by the agent that made "
        "them. Bars compare a call's latency (blue) and tokens (green) with the run's "
        "largest; — means none was recorded."
    )
    with st.container(key=f"{key}-trace"):
        for part in shown.steps:
            box = st.expander(part.label, key=f"{key}:trace:{part.key}", on_change="rerun")
            if not box.open:
                continue  # drawn only when opened
            with box:
                for node in part.nodes:
                    st.markdown(f"**{node.agent}**")
                    for item in node.items:
                        _item(item, trace, key)


def _bar(label: str, share: float, colour: str) -> str:
    return (
        f'<span style="display:inline-flex;align-items:center;gap:0.35rem;'
        f'margin-right:1.2rem;white-space:nowrap">{html.escape(label)}'
        f'<span style="display:inline-block;width:90px;height:0.55rem;'
        f'background:rgba(128,128,128,0.18);border-radius:3px;overflow:hidden">'
        f'<span style="display:block;height:100%;width:{share * 100:.1f}%;'
        f'background:{colour}"></span></span></span>'
    )


def figures_html(item: TraceItem, trace: Trace) -> str:
    """The call's title and its two bars, as one line of HTML."""
    line = f"<b>{html.escape(item.title)}</b>"
    if item.is_call:
        line += (
            '<div style="margin-top:0.15rem">'
            + _bar(
                f"latency {format_ms(item.latency_ms)}",
                bar_share(item.latency_ms, trace.max_latency_ms),
                LATENCY_COLOUR,
            )
            + _bar(
                format_tokens(item.tokens)
                + (
                    f" ({item.tokens_in:,} in, {item.tokens_out:,} out)"
                    if item.tokens_in is not None and item.tokens_out is not None
                    else ""
                ),
                bar_share(item.tokens, trace.max_tokens),
                TOKENS_COLOUR,
            )
            + "</div>"
        )
    return f'<div class="stepwise-trace-item">{line}</div>'


def _item(item: TraceItem, trace: Trace, key: str) -> None:
    with st.container(border=item.is_call):
        st.markdown(figures_html(item, trace), unsafe_allow_html=True)
        calls = item.tool_calls
        if calls:
            st.code(
                "\n".join(
                    f"{c['name']}({json.dumps(c['args'], ensure_ascii=False)})" for c in calls
                ),
                language="python",
                wrap_lines=True,
            )
        if item.text:
            text = item.text
            if len(text) > TEXT_CHARS:
                text = text[:TEXT_CHARS] + f" … ({len(item.text):,} characters: all in Raw JSON)"
            st.text(text)
        raw = st.expander(
            "Raw JSON", type="compact", key=f"{key}:raw:{item.key}", on_change="rerun"
        )
        if raw.open:
            with raw:
                st.json(item.raw, expanded=True)
