"""Model: the model server in use, what it supports, and a *Test connection* button.

Settings come from the environment only (keys are never shown or stored); the page
says which are in force, asks the server what it accepts, and lists what runs have
learnt about each server.
"""

import streamlit as st

from graph.models.probe import check_server
from ui import model_view, services, widgets

st.title("Model")
settings = services.settings()
service = services.service()
scripted = settings.resolved_provider == "scripted"

st.subheader("In use")
st.table(model_view.settings_rows(settings), hide_index=True)
if scripted:
    st.info(
        "Runs use the **offline scripted model**: deterministic rules over the bundled "
        "data, not an LLM. To use a real model, set `OPENAI_BASE_URL` (any "
        "OpenAI-compatible server) or `OPENAI_API_KEY` before starting the app."
    )
st.caption(
    "Settings are read from the environment when the app starts; API keys are never "
    "shown, stored or exported."
)


def _check() -> None:
    with st.spinner("Asking the server what it supports…"):
        st.session_state["model:report"] = check_server(settings, service.modes)


st.subheader("Test connection")
st.button(
    "Test connection",
    on_click=_check,
    type="primary",
    disabled=scripted,
    icon=":material/network_check:",
    key="model:check",
    help="Lists the models, tries json_schema, json_object with the schema and a tool "
    "call, and remembers what works for the runs that follow.",
)
if report := st.session_state.get("model:report"):
    (st.success if report.reachable else st.error)(report.summary().replace("\n", "  \n"))

st.subheader("Learnt about model servers")
learnt = model_view.learnt_rows(service.modes)
if learnt:
    st.dataframe(learnt, hide_index=True, width="stretch")
    if st.button(
        "Forget",
        key="model:forget",
        icon=":material/restart_alt:",
        help="The next run asks each server again, from json_schema and native tools.",
    ):
        service.modes.forget()
        widgets.say("model:flash", "success", "Forgotten: the next run learns again.")
        st.rerun()
else:
    st.caption("Nothing yet: a run or a connection test records what each server accepts.")
widgets.flash("model:flash")

with st.expander("Pointing Stepwise at a local server"):
    st.markdown(
        "Start the app with the variables set, for example "
        "`OPENAI_BASE_URL=http://localhost:11434/v1 streamlit run app.py`. With "
        "`STEPWISE_STRUCTURED_OUTPUT=auto` (the default) the first call tries "
        "json_schema and falls back on a refusal; the same for tools."
    )
    st.table(
        [
            {"Server": name, "Variables": f"`{variables}`", "What auto does": note}
            for name, variables, note in model_view.SERVERS
        ],
        hide_index=True,
    )
