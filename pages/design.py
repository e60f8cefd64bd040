"""Design: which agents are on, the settings of a run, and the graph they compile to."""

import streamlit as st

from graph.plan_execute.agents import AGENTS, design_warnings
from ui import services, widgets

widgets.require_app()
st.title("Design")
st.markdown("The **Planner** turns a question into numbered steps; the **Executor** hands each "
            "step to one of the agents below and asks for a new plan when a step fails. Tick the "
            "agents this system may use: the graph on the right is recompiled at once, and the "
            "design is saved for the next run.")

store = widgets.store_or_stop()
saved = services.current_design()

left, right = st.columns([2, 3], gap="large")
with left:
    st.subheader("Agents")
    st.caption("The Planner and the Executor are always on.")
    enabled = []
    for name in AGENTS:
        if st.checkbox(name, value=name in saved.enabled_agents, key=f"agent:{name}"):
            enabled.append(name)
        st.caption(widgets.agent_caption(name))

    st.subheader("Run settings")
    max_replans = st.number_input(
        "Max replans per step", min_value=0, max_value=20, value=saved.max_replans,
        key="max_replans", help="How many times the Executor may send one step back to the "
        "Planner before moving on (the step is then marked skipped).")
    recursion_limit = st.number_input(
        "Recursion limit", min_value=5, max_value=10_000, value=saved.recursion_limit,
        key="recursion_limit", help="The most node runs one run may take; a run that reaches "
        "it stops and says so, keeping what it found.")
    st.caption("Model in use")
    st.markdown(f"**{services.settings().model_label}**")

design = saved.model_copy(update={"enabled_agents": enabled, "max_replans": int(max_replans),
                                  "recursion_limit": int(recursion_limit)})
if design != saved:
    store.save_design(design)

with right:
    st.subheader("Compiled graph")
    for warning in design_warnings(design.enabled_agents):
        st.warning(warning)
    compiled = services.compiled_graph(design)
    widgets.design_graph(compiled)
    widgets.graph_legend(compiled)
    st.page_link("pages/run.py", label="Run a question with this design", icon=":material/play_arrow:")
