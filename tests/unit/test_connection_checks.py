"""*Test connection* in the background (issue 26, point 1): the check runs on a thread of
its own against a server over real HTTP, says which step it is at, can be cancelled, and
is bounded as a whole; cancelled or out of time it says so at once, with what it found."""

from __future__ import annotations

from graph.models.modes import ModeBook
from graph.models.scripted import ScriptedChatModel
from graph.service.connection_checks import ConnectionCheck
from graph.settings import Settings
from tests.support_procs.fake_server import EchoChatModel, LocalOpenAIServer
from tests.unit.conftest import wait_for


def _settings(url: str) -> Settings:
    return Settings(
        openai_base_url=url,
        planner_model="m",
        worker_model="m",
        max_retries=0,
        request_timeout_s=30,
    )


def test_a_check_in_the_background_reports_what_the_server_supports():
    with LocalOpenAIServer(ScriptedChatModel, structured="json_object", tools="ignore") as server:
        check = ConnectionCheck("local", _settings(server.base_url), ModeBook())
        report = check.wait(60)
    assert report.reachable and not report.stopped
    assert "json_object with the schema: accepted" in report.summary()
    assert "tool calling: prompted" in report.summary()
    assert not check.running


def test_a_check_says_its_step_while_it_waits_and_can_be_cancelled():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("never_answer")  # the first chat request never gets an answer
        check = ConnectionCheck("local", _settings(server.base_url), ModeBook(), bound_s=120)
        wait_for(lambda: check.step == "trying json_schema", what="the json_schema step")
        assert check.running and check.report() is None
        assert check.progress_line().startswith(f"Testing {server.base_url}: trying json_schema… (")
        check.cancel()
        report = check.report()  # at once: the request in flight is not waited for
        assert not check.running
        assert report.reachable and report.stopped == "Cancelled while trying json_schema."
        assert "json_schema: not tried" in report.summary()
        assert report.summary().endswith("Cancelled while trying json_schema.")


def test_a_check_gives_up_at_its_bound_saying_where_it_was():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("never_answer")
        check = ConnectionCheck("local", _settings(server.base_url), ModeBook(), bound_s=1)
        report = check.wait(30)
    assert not check.running
    assert report.reachable
    assert "Gave up after 1 s, while trying json_schema" in report.summary()


def test_a_dead_server_is_reported_in_words():
    check = ConnectionCheck("dead", _settings("http://127.0.0.1:9/v1"), ModeBook())
    report = check.wait(60)
    assert not report.reachable and "is it running?" in report.summary()


def test_a_check_reports_the_servers_speed_from_a_streamed_reply():
    with LocalOpenAIServer(EchoChatModel) as server:
        report = ConnectionCheck("local", _settings(server.base_url), ModeBook()).wait(60)
        speed_request = server.requests[-1]
    assert report.reachable and not report.stopped, report.summary()
    assert speed_request["stream"] is True
    assert report.tokens_per_s is not None and report.tokens_per_s > 0
    assert report.first_token_s is not None and report.first_token_s >= 0
    line = report.summary().splitlines()[-1]
    assert line.startswith("speed: ") and " tokens/s (first token after " in line, line
