"""MCP tool servers (issue 30, point 2), over streamable HTTP: a real server written with the
``mcp`` SDK (FastMCP) on loopback, counting its calls, listed and called through
``langchain-mcp-adapters``; every failure one sentence; URLs checked like the teams'
allowlist; the configurations stored on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time

import pytest
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route

from graph.service.store import Store
from graph.settings import Settings
from graph.tools.mcp_config import McpConfigError, make_config
from graph.tools.mcp_servers import (
    READ_ONLY,
    SIDE_EFFECTING,
    McpServerError,
    agent_tools,
    call_tool,
    default_policy,
    list_tools,
)
from tests.mcp_support import counting_server, free_port


@pytest.fixture(scope="module")
def server():
    running = counting_server()
    yield running
    running.stop()


@pytest.fixture
def config(server):
    return make_config("counting", "streamable_http", url=server.url)


def test_the_tools_are_listed_with_descriptions_schemas_and_policies_from_annotations(config):
    tools = {t.name: t for t in list_tools(config)}
    assert set(tools) == {"count_words", "send_note", "unannotated", "slow", "fail"}
    assert "Count the words" in tools["count_words"].description
    assert tools["send_note"].input_schema["required"] == ["to", "body"]
    assert tools["count_words"].annotations["readOnlyHint"] is True
    assert tools["count_words"].policy == READ_ONLY
    assert tools["send_note"].policy == SIDE_EFFECTING  # destructiveHint
    assert tools["unannotated"].policy == SIDE_EFFECTING  # the server says nothing


def test_a_tool_that_says_read_only_and_destructive_is_side_effecting():
    assert default_policy({"readOnlyHint": True, "destructiveHint": True}) == SIDE_EFFECTING
    assert default_policy({"destructiveHint": False}) == SIDE_EFFECTING
    assert default_policy(None) == SIDE_EFFECTING


def test_a_call_with_json_arguments_reaches_the_server_once(config, server):
    before = server.calls["send_note"]
    answer = call_tool(config, "send_note", '{"to": "ana", "body": "hello"}')
    assert answer == f"note {before + 1} sent to ana"
    assert server.calls["send_note"] == before + 1
    assert call_tool(config, "count_words", {"text": "one two three"}) == "3"


@pytest.mark.parametrize(
    "args, words",
    [
        ('{"text": ', "not valid JSON: Expecting value at line 1, column 9"),
        ("[1, 2]", "must be a JSON object (names to values), not list"),
        ('"text"', "must be a JSON object (names to values), not str"),
    ],
)
def test_malformed_arguments_are_a_sentence_and_nothing_is_called(config, server, args, words):
    before = sum(server.calls.values())
    with pytest.raises(McpServerError, match=r"^The arguments ") as caught:
        call_tool(config, "count_words", args)
    assert words in str(caught.value)
    assert sum(server.calls.values()) == before


def test_an_error_the_tool_returns_is_a_sentence_naming_tool_and_server(config):
    with pytest.raises(McpServerError) as caught:
        call_tool(config, "fail", {"why": "the disk is full"})
    text = str(caught.value)
    assert text.startswith("The tool “fail” of the MCP server “counting” returned an error")
    assert "the disk is full" in text and "Traceback" not in text and "\n" not in text


def test_an_unknown_tool_is_named_with_the_tools_there_are(config):
    with pytest.raises(McpServerError, match="has no tool “nope” \\(its tools: count_words"):
        call_tool(config, "nope", {})


def test_an_agents_tool_answers_and_a_failed_call_answers_its_sentence(config, server):
    """The tools an agent binds: a call reaches the server; a call that fails (too slow)
    is a tool error whose text is the sentence, not an exception that would end a run."""
    tools = {t.name: t for t in agent_tools(config, deadline_s=1.5)}
    assert tools["send_note"].metadata["policy"] == SIDE_EFFECTING
    assert tools["count_words"].metadata["mcp_server"] == "counting"
    message = tools["count_words"].invoke(
        {"type": "tool_call", "id": "c1", "name": "count_words", "args": {"text": "a b"}}
    )
    assert message.content == "2" and message.status == "success"
    message = tools["slow"].invoke(
        {"type": "tool_call", "id": "c2", "name": "slow", "args": {"seconds": 30}}
    )
    assert message.status == "error"
    assert message.content.startswith("The MCP server “counting” did not answer within 1.5 s")


def test_a_slow_tool_is_cut_by_the_deadline(config, server):
    started = time.monotonic()
    with pytest.raises(McpServerError) as caught:
        call_tool(config, "slow", {"seconds": 30}, deadline_s=1.5)
    took = time.monotonic() - started
    assert str(caught.value) == (
        "The MCP server “counting” did not answer within 1.5 s, so the call to the tool "
        "“slow” was stopped; it may be slow or stuck."
    )
    assert took < 6, took
    assert server.calls["slow"] >= 1  # it was called, and was too slow


def test_a_server_that_is_down_is_one_sentence():
    url = f"http://127.0.0.1:{free_port()}/mcp"
    down = make_config("gone", "streamable_http", url=url)
    with pytest.raises(McpServerError) as caught:
        list_tools(down, deadline_s=5)
    text = str(caught.value)
    assert text.startswith(f"The MCP server “gone” is down: nothing answers at {url}")
    assert "\n" not in text


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://user:pw@127.0.0.1:8000/mcp", "user name or password before the host"),
        ("http://tok@127.0.0.1:8000/mcp", "user name or password before the host"),
        ("ftp://127.0.0.1/mcp", "not an http or https URL"),
        ("http://127.0.0.1:99999/mcp", "not valid"),
        ("http://127.0.0.1/m cp", "a space"),
        ("", "Give the server's URL"),
    ],
)
def test_urls_are_checked_like_the_teams_allowlist(url, words):
    with pytest.raises(McpConfigError, match=words) as caught:
        make_config("x", "streamable_http", url=url)
    assert "pw@" not in str(caught.value) and "tok@" not in str(caught.value)


def test_a_redirect_on_the_same_host_is_followed(server):
    moved = make_config("moved", "streamable_http", url=server.url.replace("/mcp", "/moved"))
    assert call_tool(moved, "count_words", {"text": "still here"}) == "2"


def test_a_redirect_off_the_host_is_refused(server):
    """A server on 127.0.0.1 that redirects to localhost (another host): refused, and the
    counting server behind it is never called."""
    import threading

    import uvicorn

    app = Starlette(
        routes=[
            Route(
                "/mcp",
                lambda request: RedirectResponse(server.url.replace("127.0.0.1", "localhost"), 307),
                methods=["GET", "POST", "DELETE"],
            )
        ]
    )
    port = free_port()
    redirector = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=redirector.run, daemon=True)
    thread.start()
    while not redirector.started:
        time.sleep(0.02)
    try:
        before = sum(server.calls.values())
        redirecting = make_config("hop", "streamable_http", url=f"http://127.0.0.1:{port}/mcp")
        with pytest.raises(McpServerError, match="redirected to localhost, off its host"):
            list_tools(redirecting, deadline_s=5)
        assert sum(server.calls.values()) == before
    finally:
        redirector.should_exit = True
        thread.join(timeout=10)


# ------------------------------------------------------------------ the store


@pytest.fixture
def store(tmp_path, database_url):
    opened = Store.open(Settings(home=tmp_path, provider="scripted", database_url=database_url))
    yield opened
    opened.close()


def test_servers_and_their_tools_policies_are_stored(store, server):
    http = make_config("counting", "streamable_http", url=server.url)
    store.mcp_servers.add(http, added_by="ana")
    assert store.mcp_servers.get("counting") == http
    with pytest.raises(McpConfigError, match="already an MCP server named “counting”"):
        store.mcp_servers.add(http)
    store.mcp_servers.remember_tools("counting", list_tools(http))
    policies = store.mcp_servers.policies("counting")
    assert policies["count_words"] == READ_ONLY and policies["send_note"] == SIDE_EFFECTING
    store.mcp_servers.delete("counting")
    assert store.mcp_servers.get("counting") is None
    assert store.mcp_servers.policies("counting") == {}


def test_no_typed_environment_value_reaches_the_store(tmp_path, store):
    """A typed value lives in memory; the store keeps its name and ``${VAR}`` references."""
    secret = "canary-mcp-env-3f9a1c7e55"
    config = make_config(
        "tokened",
        "stdio",
        command="python",
        args=["-m", "mcp_server_time"],
        env={"API_TOKEN": secret, "HOME_DIR": "${HOME}"},
    )
    store.mcp_servers.add(config)
    rows = store.database.query("SELECT * FROM mcp_servers")
    assert json.loads(rows[0]["env_json"]) == {"API_TOKEN": None, "HOME_DIR": "${HOME}"}
    assert secret not in json.dumps([dict(r) for r in rows])
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    # this process still has it, for the server's start
    assert store.mcp_servers.get("tokened").env["API_TOKEN"] == secret
    # a second server of the same name is refused, and leaves the first one's values be
    with pytest.raises(McpConfigError, match="already an MCP server named “tokened”"):
        store.mcp_servers.add(
            make_config("tokened", "stdio", command="x", env={"API_TOKEN": "other-value"})
        )
    assert store.mcp_servers.get("tokened").env["API_TOKEN"] == secret
    assert store.mcp_servers.missing("tokened") == []
    assert secret not in store.mcp_servers.get("tokened").described()


def test_a_typed_value_gone_after_a_restart_is_named(store):
    from graph.tools.mcp_config import forget_typed_env

    store.mcp_servers.add(make_config("t", "stdio", command="python", env={"TOKEN": "s3cret-xyz"}))
    forget_typed_env("t")  # as a restart of the app would
    assert store.mcp_servers.missing("t") == [("TOKEN", None)]  # typed, gone
    with pytest.raises(McpConfigError, match="has no typed environment variable OTHER"):
        store.mcp_servers.type_env("t", {"OTHER": "x"})
    store.mcp_servers.type_env("t", {"TOKEN": "s3cret-again"})
    assert store.mcp_servers.missing("t") == []
    assert store.mcp_servers.get("t").env == {"TOKEN": "s3cret-again"}


def test_a_reference_to_an_unset_variable_is_named_with_that_variable(store, monkeypatch):
    monkeypatch.delenv("STEPWISE_TEST_UNSET_TOKEN", raising=False)
    store.mcp_servers.add(
        make_config("r", "stdio", command="python", env={"TOKEN": "${STEPWISE_TEST_UNSET_TOKEN}"})
    )
    assert store.mcp_servers.missing("r") == [("TOKEN", "STEPWISE_TEST_UNSET_TOKEN")]
    monkeypatch.setenv("STEPWISE_TEST_UNSET_TOKEN", "set-now")
    assert store.mcp_servers.missing("r") == []
