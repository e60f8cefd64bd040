"""Model: the model profiles (the environment's settings first, the offline scripted model,
and any added here), which one is active, *Test connection* in the background, the
settings in use, and what runs have learnt about each server.

Profiles are added, tested, made active and deleted without restarting the app; keys are
never shown, and a key typed here is kept in the app's memory only.
"""

import streamlit as st

from ui import model_profiles, model_view, services, widgets

st.title("Model")
service = services.service()
active = service.profiles.active()
settings = service.model_settings()

st.subheader("Profiles")
st.caption(
    f"Active: **{active.name}**. New runs, experiments (their “model in use”) and the judge "
    "use the active profile; runs already made keep the one they were made with."
)
model_profiles.profile_list()
model_profiles.actions()
model_profiles.check_panel()
with st.expander("Add a profile", expanded=len(service.profiles.all()) <= 2):
    model_profiles.add_form()

st.subheader("In use")
st.table(model_view.settings_rows(settings), hide_index=True)
if settings.resolved_provider == "scripted":
    st.info(
        "Runs use the **offline scripted model**: deterministic rules over the bundled "
        "data, not an LLM. To use a real model, add a profile for any OpenAI-compatible "
        "server above and make it active (or start the app with `OPENAI_BASE_URL` or "
        "`OPENAI_API_KEY` set)."
    )
st.caption(
    "API keys are never shown, stored or exported. The other settings (timeouts, tokens "
    "per reply) are read from the environment when the app starts."
)

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
        widgets.say("model:forget-flash", "success", "Forgotten: the next run learns again.")
        st.rerun()
else:
    st.caption("Nothing yet: a run or a connection test records what each server accepts.")
widgets.flash("model:forget-flash")

with st.expander("Pointing Stepwise at a local server"):
    st.markdown(
        "Add a profile with the server's base URL and model name, or start the app with "
        "the variables set, for example "
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
