"""Run: ask a question, watch the plan unfold step by step, read the answer.

Runs live in the run service's worker threads, not in this script: the page starts
one, then reads the store, refreshing only its live part while the run goes. A run
that waits for a decision, is paused in step mode or was interrupted is moved on
from here too (approve, next, continue, resume).
"""

import streamlit as st

from ui import lessons_view, page_visits, run_actions, run_panel, services, widgets
from ui.run_view import run_label

st.html(widgets.RUN_PAGE)
st.title("Run")
store = widgets.store_or_stop()
design = services.current_design()
view = services.view_of_design(design)
EXAMPLES = view.examples


# Callbacks and labels come from ui.run_actions: a function defined here would keep this
# page's namespace (the listed runs) in each session Streamlit keeps.
QUESTION_CAP = services.settings().max_question_chars
st.text_area(
    "Question",
    key="run:question",
    height=80,
    max_chars=QUESTION_CAP,
    # The cap is said in the placeholder, not a help icon: its button would share the
    # box's label ("Help for Question") and a label lookup would find two.
    placeholder="Ask about the stocks in the database (MSFT, AMZN, IBM, GOOG, AAPL, "
    "2000-2010) or about events in the bundled documents. At most "
    f"{QUESTION_CAP:,} characters (STEPWISE_MAX_QUESTION_CHARS).",
)
# the caption beside the examples, not above them: a line less at a projector's 720 px
lead, *places = st.columns([0.9] + [3] * len(EXAMPLES), vertical_alignment="center")
lead.caption("Or try one of these:")
for column, example in zip(places, EXAMPLES):
    column.button(
        example,
        on_click=run_actions.use_example,
        args=(example,),
        width="stretch",
        wrap=True,
        key=f"run:example:{EXAMPLES.index(example)}",
    )
# Step mode gets room for its whole label at 1280 px with the sidebar shown ("Step m…").
go, stepping, pacing, about = st.columns([1, 1.5, 2, 4], vertical_alignment="center")
go.button("Run", type="primary", on_click=run_actions.start, icon=":material/play_arrow:")
# Step mode, Pace and Presentation stay as the user left them across page visits.
widgets.restore("run:step-mode")
stepping.checkbox(
    "Step mode",
    key="run:step-mode",
    on_change=widgets.keep,
    args=("run:step-mode",),
    help="Pause before every node: the page shows which node comes next and the "
    "state it will read; Next runs one node, Continue runs to the end.",
)
PACES = run_actions.pace_choices(design.pace_s)
pacing.selectbox(  # type: ignore[call-overload]  # index given only when none is kept
    "Pace",
    PACES,
    # the design's pace unless one chosen in this session is kept
    **({} if widgets.restore("run:pace", PACES) else {"index": PACES.index(design.pace_s)}),
    key="run:pace",
    on_change=widgets.keep,
    args=("run:pace",),
    format_func=run_actions.pace_label,
    help="How long each node's result stays on screen before the next node starts, so "
    "a class can follow the run. The design's pace is the default; pauses are not "
    "counted as work.",
)
about.caption(
    f"With the saved design: {', '.join(design.enabled_agents) or 'no agents'}; "
    f"{view.limits(design)}; model: {services.model_settings().model_label}."
)
if problem := st.session_state.pop("run:error", None):
    st.error(problem)

lessons_view.expanders()

runs = store.runs(limit=50)
wanted = st.query_params.get("run")
if wanted is None and page_visits.arrived():  # a visit with no run named: the last one
    wanted = st.session_state.get(run_actions.WATCHING)
places = store.evals.experiment_places([*(r.id for r in runs), *([wanted] if wanted else [])])
labels = {r.id: run_label(r, places.get(r.id)) for r in runs}
if wanted and wanted not in labels and (found := store.run(wanted)):
    labels = {wanted: run_label(found, places.get(wanted)), **labels}
if not labels:
    st.info("No runs yet: pick an example question above and press Run.")
    st.stop()
run_id = run_actions.watched_run(list(labels), wanted, page_visits.arrived())
watched, presenting = st.columns([4, 1.3], vertical_alignment="bottom")
widgets.restore("run:presentation")
if presenting.toggle(
    "Presentation",
    key="run:presentation",
    on_change=widgets.keep,
    args=("run:presentation",),
    help="For a projector: hides the sidebar, uses the whole width, gives the graph "
    "more room and enlarges the step tables. The graph's fullscreen button is always shown.",
):
    st.html(widgets.PRESENTATION)
st.html(widgets.GRAPH_TOOLBAR_VISIBLE)
chooser = run_actions.selector_key(run_id)
watched.selectbox(
    "Run to watch",
    list(labels),
    index=list(labels).index(run_id),
    key=chooser,
    format_func=labels.__getitem__,
    on_change=run_actions.select,
    args=(chooser,),
)
st.query_params["run"] = run_id
if said := run_actions.said_of(run_id):
    st.success(said)


run_panel.show(store, run_id, key="run")
