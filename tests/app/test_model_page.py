"""The Model page: the settings in use (keys as set/unset only), Test connection against a
server over real HTTP, what has been learnt about it, Forget; and a run's header saying
which modes the run used."""

from __future__ import annotations

import time

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.settings import get_settings
from tests.app.support import button, open_page, texts, wait_status
from tests.support_procs.fake_server import LocalOpenAIServer

PAGE = "app_pages/model.py"


def _point_at(monkeypatch, url: str) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-KEY")
    monkeypatch.setenv("STEPWISE_PLANNER_MODEL", "local-planner")
    monkeypatch.setenv("STEPWISE_WORKER_MODEL", "local-worker")
    monkeypatch.setenv("STEPWISE_MAX_RETRIES", "0")
    get_settings.cache_clear()


def test_on_the_offline_model_the_page_says_why_there_is_nothing_to_test(home):
    at = open_page(PAGE)
    shown = texts(at) + str(at.table[0].value)
    assert "offline scripted model" in shown
    assert not [b for b in at.button if b.label == "Test connection"]  # not a greyed button
    assert "Nothing to test: the offline scripted model answers inside Stepwise" in texts(at)
    assert "Nothing yet" in texts(at)


def finish_check(at):
    """Let the page poll the background test until it shows its report; the report."""
    for _ in range(600):
        at.run()
        shown = [e.value for e in (*at.success, *at.error) if "Profile “" in str(e.value)]
        if shown:
            return shown[0]
        time.sleep(0.1)
    raise AssertionError("the connection test never reported")


def _services():
    """The app's store and run service, made now (after the environment is set)."""
    from ui import services

    return services.store(), services.service()


def test_test_connection_reports_what_the_server_supports_and_remembers_it(home, monkeypatch):
    with LocalOpenAIServer(
        ScriptedChatModel, structured="json_object", tools="ignore", refusal_status=500
    ) as server:
        url = server.base_url
        _point_at(monkeypatch, url)
        at = open_page(PAGE)
        settings_table = str(at.table[0].value)
        assert server.base_url in settings_table and "local-planner" in settings_table
        assert "sk-test-SECRET-KEY" not in texts(at) + settings_table  # the key: "set"
        button(at, "Test connection").click().run()
        report = finish_check(at)
    assert at.success and report == at.success[0].value
    assert f"{url}: reachable" in report
    assert "json_schema: refused (HTTP 500 naming response_format)" in report
    assert "json_object with the schema: accepted" in report
    assert "tool calling: prompted" in report
    learnt = at.dataframe[1].value  # [0]: the profiles
    assert set(learnt["Structured output"]) == {"json_object with the schema"}
    assert "prompted" in " ".join(learnt["Tool calling"])
    _, service = _services()
    assert service.modes.get(url, "local-planner").structured == "json_object"


def test_a_dead_server_is_reported_in_words(home, monkeypatch):
    _point_at(monkeypatch, "http://127.0.0.1:9/v1")
    at = open_page(PAGE)
    button(at, "Test connection").click().run()
    report = finish_check(at)
    assert "not reachable" in report and "is it running?" in report


def test_forget_clears_what_was_learnt(home, services, monkeypatch):
    _, service = services
    service.modes.learn("http://x/v1", "m", structured="none", note="because")
    at = open_page(PAGE)
    assert "http://x/v1" in str(at.dataframe[1].value)  # [0]: the profiles
    button(at, "Forget").click().run()
    assert not service.modes.all() and "Forgotten" in texts(at)


def test_the_run_header_says_which_modes_the_run_used(home, monkeypatch):
    with LocalOpenAIServer(ScriptedChatModel, structured="json_object", tools="ignore") as server:
        _point_at(monkeypatch, server.base_url)
        store, service = _services()
        run_id = service.start("What caused the dot-com crash?", Design())
        wait_status(store, run_id, "done")
        at = open_page("app_pages/run.py", run=run_id)
    header = "\n".join(str(c.value) for c in at.caption)
    assert (
        "Structured output: json_object with the schema — The server refused json_schema "
        "(HTTP 400 naming response_format) · "
    ) in header
    assert (
        header.endswith(
            "Tool calling: tool calls written as JSON in the reply (prompted) — "
            "The model answered in prose where a tool call was needed"
        )
        or "Tool calling: tool calls written as JSON in the reply (prompted) — The model "
        "answered in prose where a tool call was needed"
        in header
    )
    notices = next(e for e in at.expander if e.label.startswith("Notices ("))
    assert "The server refused json_schema" in str(notices.markdown[0].value)
