"""Run: ask a question, watch the plan unfold step by step, read the answer.

Runs live in the run service's worker threads, not in this script: the page starts
one, then reads the store, refreshing only its live part while the run goes.
"""

import streamlit as st

from graph.design import Design
from graph.prompts import PromptError
from ui import services, widgets
from ui.run_view import (POLL_S, filter_messages, load_run_view, message_filters, next_nodes,
                         run_label)

EXAMPLES = (
    "Which stock in the database grew the most between 2005 and 2009? Chart the prices.",
    "What happened to Apple when it launched the iPhone, and how did its stock price change in 2007?",
    "How did Tesla's stock do in 2008?",
    "What caused the dot-com crash and how much did Amazon's price fall from 2000 to 2001?",
)

widgets.require_app()
st.title("Run")
store = widgets.store_or_stop()


def _use_example(question: str) -> None:
    st.session_state["run:question"] = question


def _start() -> None:
    try:
        run_id = services.service().start(st.session_state.get("run:question", ""),
                                          services.run_design())
    except (ValueError, PromptError) as exc:
        st.session_state["run:error"] = str(exc)
        return
    st.session_state["run:selected"] = st.session_state["run:last"] = run_id
    st.query_params["run"] = run_id


def _select() -> None:
    st.session_state["run:last"] = st.session_state["run:selected"]
    st.query_params["run"] = st.session_state["run:selected"]


def _stop(run_id: str) -> None:
    if not services.service().cancel(run_id):
        st.session_state["run:error"] = "That run is not in progress any more."


st.text_area("Question", key="run:question", height=80,
             placeholder="Ask about the stocks in the database (MSFT, AMZN, IBM, GOOG, AAPL, "
             "2000-2010) or about events in the bundled documents.")
st.caption("Or try an example:")
for column, example in zip(st.columns(len(EXAMPLES)), EXAMPLES):
    column.button(example, on_click=_use_example, args=(example,), width="stretch", wrap=True,
                  key=f"run:example:{EXAMPLES.index(example)}")
design = services.current_design()
go, about = st.columns([1, 5], vertical_alignment="center")
go.button("Run", type="primary", on_click=_start, icon=":material/play_arrow:")
about.caption(f"With the saved design: {', '.join(design.enabled_agents) or 'no agents'}; "
              f"at most {design.max_replans} replan(s) per step; "
              f"model: {services.settings().model_label}.")
if problem := st.session_state.pop("run:error", None):
    st.error(problem)

runs = store.runs(limit=50)
labels = {r.id: run_label(r) for r in runs}
wanted = st.query_params.get("run") or st.session_state.get("run:last")
if wanted and wanted not in labels and (found := store.run(wanted)):
    labels = {wanted: run_label(found), **labels}
if not labels:
    st.info("No runs yet: pick an example question above and press Run.")
    st.stop()
if st.session_state.get("run:selected") not in labels:
    st.session_state["run:selected"] = wanted if wanted in labels else next(iter(labels))
st.divider()
run_id = st.selectbox("Run to watch", list(labels), key="run:selected",
                      format_func=labels.get, on_change=_select)
st.session_state["run:last"] = run_id
st.query_params["run"] = run_id


def run_view(run_id: str, polling: bool) -> None:
    view = load_run_view(store, run_id)
    if view is None:
        st.warning("This run is no longer in the store.")
        return
    if polling and not view.live:
        st.rerun()  # it has just ended: redraw the whole page once, and stop polling
    status, stop = st.columns([5, 1], vertical_alignment="center")
    with status:
        widgets.run_status(view)
    if view.live:
        stop.button("Stop", on_click=_stop, args=(run_id,), icon=":material/stop:")

    st.subheader("Steps")
    widgets.step_table(view)
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Answer")
        with st.container(key="run-answer"):
            widgets.final_answer(view)
    with right:
        st.subheader("Graph")
        try:
            compiled = services.compiled_graph(Design.model_validate(view.record.design))
        except Exception as exc:  # a design this version of the app cannot build
            st.caption(f"The graph of this run cannot be drawn: {exc}")
        else:
            active = next_nodes(compiled, run_id) if view.live else ()
            widgets.design_graph(compiled, active=active[0] if active else None, taken=view.taken)
            st.caption("Orange: the node running now and the edges taken so far.")

    st.subheader("Plan history")
    widgets.plan_history(view)

    st.subheader("Messages")
    messages = store.messages(run_id)
    steps, agents = message_filters(messages)
    by_step, by_agent = st.columns(2)
    step = by_step.selectbox("Step", [None, *steps], key="run:msg-step",
                             format_func=lambda s: "all steps" if s is None else f"step {s}")
    agent = by_agent.selectbox("Agent", [None, *agents], key="run:msg-agent",
                               format_func=lambda a: "all agents" if a is None else a)
    widgets.message_list(filter_messages(messages, step, agent))


record = store.run(run_id)
live = bool(record and record.is_live)
st.fragment(run_every=POLL_S if live else None)(run_view)(run_id, live)
