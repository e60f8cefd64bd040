"""The Model page's profiles: the list, adding one, making one active, deleting it, typing
a key again, and *Test connection* running in the background while the page polls it."""

from __future__ import annotations

import streamlit as st

from graph.service.connection_checks import DEFAULT_BOUND_S, ConnectionCheck
from graph.service.model_profiles import BUILT_IN, ProfileError
from ui import access, model_view, services, widgets

FLASH = "model:flash"
CHECK = "model:check-job"
POLL_S = 0.5  # how often the progress line is redrawn while a check runs
KEY_SOURCES = {
    "none": "No key (a local server)",
    "env": "From an environment variable of the app",
    "typed": "Typed here (kept in this app's memory only)",
}
TYPED_KEY_NOTE = (
    "A key typed here is kept in the memory of this app's process only: it is never "
    "written to the store, a log, an export or a checkpoint, and it is gone when the app "
    "restarts (the page then asks for it again)."
)


def profile_list() -> None:
    """The profiles as a table, the active one marked."""
    profiles = services.service().profiles
    st.dataframe(model_view.profile_rows(profiles), hide_index=True, width="stretch")


def actions() -> None:
    """Pick a profile; make it active, test it, delete it, or type its key again."""
    profiles = services.service().profiles
    names = [p.name for p in profiles.all()]
    active = profiles.active().name
    if st.session_state.get("model:pick") not in names:
        st.session_state["model:pick"] = active
    name = st.selectbox("Profile", names, key="model:pick")
    profile = profiles.get(name)
    assert profile is not None  # picked from the profiles listed
    left, middle, right = st.columns(3)
    left.button(
        "Make active",
        key="model:activate",
        icon=":material/check_circle:",
        on_click=_activate,
        args=(name,),
        disabled=name == active,
        help="This one is active already." if name == active else None,
        type="primary",
    )
    if not profile.scripted:  # the offline model gets a sentence instead (below)
        middle.button(
            "Test connection",
            key="model:test",
            icon=":material/network_check:",
            on_click=_test,
            args=(name,),
            disabled=_running(),
            help="A test is running: wait for it or cancel it."
            if _running()
            else "Lists the models, tries json_schema, json_object with the schema and a "
            "tool call, and remembers what works for the runs that follow.",
        )
    right.button(
        "Delete",
        key="model:delete",
        icon=":material/delete:",
        on_click=_delete,
        args=(name,),
        disabled=name in BUILT_IN,
        help="Built in: it cannot be deleted." if name in BUILT_IN else None,
    )
    if profile.scripted:
        st.caption(
            "Nothing to test: the offline scripted model answers inside Stepwise, with "
            "rules over the bundled data; there is no server to reach."
        )
    else:
        st.number_input(
            "Give up after (seconds)",
            min_value=1.0,
            max_value=600.0,
            value=DEFAULT_BOUND_S,
            step=5.0,
            key="model:bound",
            help="The whole test, every request included.",
        )
    if profile.key_from == "typed" and profile.choice().key_problem():
        with st.container(key="model-retype"):
            st.warning(
                f"The key of “{name}” was typed in the browser and the app has restarted "
                "since: type it again to use the profile."
            )
            st.text_input("API key", type="password", key="model:retype-key")
            st.button("Keep this key", key="model:retype", on_click=_retype, args=(name,))
    widgets.flash(FLASH)


def check_panel() -> None:
    """The running test's progress line and Cancel button, or its last report."""
    check: ConnectionCheck | None = st.session_state.get(CHECK)
    if check is None:
        return
    if check.running:
        st.fragment(run_every=POLL_S)(_progress)()
        return
    report = check.report()
    assert report is not None  # the check has ended
    text = f"Profile “{check.profile}”: " + report.summary().replace("\n", "  \n")
    (st.success if report.reachable and not report.stopped else st.error)(text)


def _progress() -> None:
    check: ConnectionCheck | None = st.session_state.get(CHECK)
    if check is None or not check.running:
        st.rerun()  # ended: the whole page shows the report
    with st.container(key="model-check-progress"):
        st.info(check.progress_line(), icon=":material/hourglass_top:")
        st.button("Cancel", key="model:cancel", on_click=check.cancel, icon=":material/cancel:")


def add_form() -> None:
    """Add a profile: name, endpoint, models, where its key comes from."""
    st.text_input("Name", key="model:new-name", placeholder="local llama")
    st.text_input(
        "Endpoint (base URL)",
        key="model:new-endpoint",
        placeholder="http://localhost:8000/v1",
        help="Any OpenAI-compatible server: Ollama, vLLM, llama.cpp, LM Studio, OpenAI.",
    )
    left, right = st.columns(2)
    left.text_input(
        "Planner model",
        key="model:new-planner",
        help="For the Planner, the Executor and the supervisors.",
    )
    right.text_input(
        "Worker model", key="model:new-worker", help="For the agents with tools; empty: the same."
    )
    source = st.radio(
        "Where the key comes from",
        list(KEY_SOURCES),
        format_func=KEY_SOURCES.get,
        key="model:new-key-from",
        horizontal=True,
    )
    if source == "env":
        st.text_input("Variable name", key="model:new-key-env", placeholder="MY_SERVER_KEY")
    elif source == "typed":
        st.text_input("API key", type="password", key="model:new-key")
        st.caption(TYPED_KEY_NOTE)
    st.button("Add profile", key="model:add", icon=":material/add:", on_click=_add)


def _running() -> bool:
    check = st.session_state.get(CHECK)
    return bool(check and check.running)


def _activate(name: str) -> None:
    if not access.permitted("model_profiles", FLASH):
        return
    try:
        services.service().profiles.activate(name)
    except ProfileError as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    widgets.say(
        FLASH, "success", f"“{name}” is active: new runs, experiments and the judge use it."
    )


def _test(name: str) -> None:
    service = services.service()
    profile = service.profiles.get(name)
    if profile is None:
        widgets.say(FLASH, "error", f"There is no profile named “{name}” any more.")
        return
    if problem := profile.choice().key_problem():
        widgets.say(FLASH, "warning", problem)
    st.session_state[CHECK] = ConnectionCheck(
        name,
        service.profiles.settings_of(profile),
        service.modes,
        bound_s=float(st.session_state.get("model:bound") or DEFAULT_BOUND_S),
    )


def _delete(name: str) -> None:
    if not access.permitted("model_profiles", FLASH):
        return
    try:
        services.service().profiles.delete(name)
    except ProfileError as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    st.session_state.pop("model:pick", None)
    widgets.say(FLASH, "success", f"Deleted “{name}”; runs made on it keep their record of it.")


def _retype(name: str) -> None:
    if not access.permitted("model_profiles", FLASH):
        return
    try:
        services.service().profiles.type_key(name, st.session_state.get("model:retype-key", ""))
    except ProfileError as exc:
        widgets.say(FLASH, "error", str(exc))
        return
    st.session_state["model:retype-key"] = ""
    widgets.say(FLASH, "success", f"The key of “{name}” is kept in memory again.")


def _add() -> None:
    if not access.permitted("model_profiles", FLASH):
        return
    state = st.session_state
    try:
        profile = services.service().profiles.add(
            state.get("model:new-name", ""),
            state.get("model:new-endpoint", ""),
            state.get("model:new-planner", ""),
            state.get("model:new-worker", ""),
            key_from=state.get("model:new-key-from", "none"),
            key_env=state.get("model:new-key-env", ""),
            key=state.get("model:new-key", ""),
        )
    except ProfileError as exc:  # everything typed stays in the form, to be corrected
        widgets.say(FLASH, "error", f"Not added: {exc}")
        return
    for field in ("name", "endpoint", "planner", "worker", "key-env", "key"):
        state[f"model:new-{field}"] = ""
    state["model:pick"] = profile.name
    widgets.say(
        FLASH,
        "success",
        f"Added “{profile.name}”: test it, then make it active for the runs that follow.",
    )
