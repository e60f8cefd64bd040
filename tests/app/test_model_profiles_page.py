"""The Model page's profiles (issue 26, point 1): add one (a typed key never shown again,
kept in memory only), make it active without a restart, test it in the background with a
progress line and Cancel, type a key again after a restart, delete it; bad input refused
in words with nothing lost."""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.models.keys import forget_typed_key
from graph.models.scripted import ScriptedChatModel
from graph.service.model_profiles import ENVIRONMENT, OFFLINE
from tests.app.support import button, open_page, texts, wait_status
from tests.app.test_model_page import finish_check
from tests.support_procs.fake_server import LocalOpenAIServer

PAGE = "app_pages/model.py"
CANARY = "canary-typed-in-the-page-4e1d"


@pytest.fixture(autouse=True)
def _forget_keys():
    yield
    forget_typed_key("local")


@pytest.fixture
def server():
    with LocalOpenAIServer(ScriptedChatModel, model_name="served-model") as running:
        yield running


def _fill(at, **fields):
    for label, value in fields.items():
        next(t for t in at.text_input if t.key == f"model:new-{label}").set_value(value)


def _add(at, url: str, typed: str = ""):
    _fill(at, name="local", endpoint=url, planner="served-model")
    if typed:
        at.radio(key="model:new-key-from").set_value("typed").run()
        _fill(at, key=typed)
    button(at, "Add profile").click().run()


def _rows(at) -> list[dict]:
    return at.dataframe[0].value.to_dict("records")


def test_a_profile_added_with_a_typed_key_is_listed_without_it(home, services, server):
    at = open_page(PAGE)
    assert [r["Profile"] for r in _rows(at)] == [ENVIRONMENT, OFFLINE]
    at.radio(key="model:new-key-from").set_value("typed").run()
    assert "never written to the store, a log, an export or a checkpoint" in texts(at)
    assert "gone when the app restarts" in texts(at)
    _add(at, server.base_url, typed=CANARY)
    assert "Added “local”" in texts(at)
    row = _rows(at)[2]
    assert (row["Profile"], row["Endpoint"], row["Planner model"], row["Worker model"]) == (
        "local",
        server.base_url,
        "served-model",
        "served-model",
    )
    assert row["API key"] == "typed here: in memory"
    assert at.text_input(key="model:new-key").value == ""  # not left in the form
    assert CANARY not in texts(at) + str(_rows(at))
    assert at.selectbox(key="model:pick").value == "local"


def test_making_a_profile_active_moves_the_next_run_to_it_without_a_restart(home, services, server):
    store, service = services
    at = open_page(PAGE)
    _add(at, server.base_url)
    button(at, "Make active").click().run()
    assert "“local” is active" in texts(at)
    assert [r["Profile"] for r in _rows(at) if r["Active"]] == ["local"]
    in_use = dict(at.table[0].value.itertuples(index=False))
    assert in_use["Endpoint"] == server.base_url
    assert in_use["Planner / Executor / supervisors"] == "served-model"
    assert any(f"served-model @ {server.base_url}" in str(m.value) for m in at.sidebar.markdown)
    run_id = service.start("How did Tesla's stock do in 2008?", Design())
    record = wait_status(store, run_id, "done", "failed")
    assert record.status == "done" and record.design["model"]["profile"] == "local"
    assert server.requests
    run_page = open_page("app_pages/run.py", run=run_id)
    assert "profile “local”" in texts(run_page)


def test_a_bad_profile_is_refused_in_words_and_the_form_keeps_what_was_typed(home, services):
    at = open_page(PAGE)
    _fill(at, name="local", endpoint="localhost:8000", planner="m")
    button(at, "Add profile").click().run()
    assert "Not added: " in texts(at) and "not an http(s) URL" in texts(at)
    assert at.text_input(key="model:new-name").value == "local"
    assert at.text_input(key="model:new-endpoint").value == "localhost:8000"
    assert [r["Profile"] for r in _rows(at)] == [ENVIRONMENT, OFFLINE]


def test_a_test_in_the_background_shows_its_step_and_can_be_cancelled(home, services, server):
    at = open_page(PAGE)
    _add(at, server.base_url)
    server.inject("never_answer")
    button(at, "Test connection").click().run()
    for _ in range(100):
        progress = [i.value for i in at.info if str(i.value).startswith("Testing ")]
        if progress and "trying json_schema" in progress[0]:
            break
        at.run()
    assert progress[0].startswith(f"Testing {server.base_url}: trying json_schema… (")
    assert "gives up after 15 s" in progress[0]
    button(at, "Cancel").click().run()
    report = finish_check(at)
    assert report.startswith("Profile “local”: ")
    assert f"{server.base_url}: reachable" in report
    assert report.endswith("Cancelled while trying json_schema.")


def test_a_typed_key_gone_after_a_restart_is_asked_again(home, services, server):
    at = open_page(PAGE)
    _add(at, server.base_url, typed=CANARY)
    forget_typed_key("local")  # what a restart of the app leaves behind
    at.run()
    assert "type it again to use the profile" in texts(at)
    assert _rows(at)[2]["API key"] == "typed here: gone (type it again)"
    at.text_input(key="model:retype-key").set_value("another-typed-key").run()
    button(at, "Keep this key").click().run()
    assert "is kept in memory again" in texts(at)
    assert _rows(at)[2]["API key"] == "typed here: in memory"


def test_a_deleted_active_profile_gives_way_to_the_environment(home, services, server):
    at = open_page(PAGE)
    _add(at, server.base_url)
    button(at, "Make active").click().run()
    button(at, "Delete").click().run()
    assert "Deleted “local”" in texts(at)
    assert [r["Profile"] for r in _rows(at)] == [ENVIRONMENT, OFFLINE]
    assert [r["Profile"] for r in _rows(at) if r["Active"]] == [ENVIRONMENT]
    at.selectbox(key="model:pick").set_value(OFFLINE).run()
    assert button(at, "Delete").disabled  # built in
