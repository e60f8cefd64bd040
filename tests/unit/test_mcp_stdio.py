"""MCP tool servers over stdio (issue 30, point 2): ``mcp-server-time`` from PyPI started
by its command, listed and called through ``langchain-mcp-adapters``; a command that is
not there, one that is no MCP server, and one that never answers, each one sentence.
(Tier ``processes``: every test starts a program.)"""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest

from graph.tools.mcp_config import make_config
from graph.tools.mcp_servers import READ_ONLY, McpServerError, call_tool, explain, list_tools
from tests.mcp_support import TIME_COMMAND


def _time_server(**env):
    command, args = TIME_COMMAND
    return make_config("time", "stdio", command=command, args=args, env=env)


def test_the_time_servers_tools_are_listed_read_only_from_its_annotations():
    tools = {t.name: t for t in list_tools(_time_server())}
    assert set(tools) == {"get_current_time", "convert_time"}
    current = tools["get_current_time"]
    assert "current time" in current.description.lower()
    assert current.input_schema["required"] == ["timezone"]
    assert current.annotations["readOnlyHint"] is True
    assert current.policy == READ_ONLY


def test_the_time_tool_answers_a_call_with_json_arguments():
    answer = json.loads(call_tool(_time_server(), "get_current_time", '{"timezone": "Asia/Tokyo"}'))
    assert answer["timezone"] == "Asia/Tokyo"
    assert answer["datetime"].endswith("+09:00")


def test_an_error_of_the_time_tool_is_a_sentence():
    with pytest.raises(McpServerError) as caught:
        call_tool(_time_server(), "get_current_time", {"timezone": "Mars/Olympus"})
    text = str(caught.value)
    assert text.startswith("The tool “get_current_time” of the MCP server “time” returned an")
    assert "Mars/Olympus" in text and "\n" not in text


def test_a_command_that_is_not_there_is_one_sentence():
    config = make_config("nowhere", "stdio", command="stepwise-no-such-mcp-server")
    with pytest.raises(McpServerError) as caught:
        list_tools(config, deadline_s=10)
    assert str(caught.value) == (
        "The MCP server “nowhere” could not start: the command “stepwise-no-such-mcp-server” "
        "was not found on this machine."
    )


def test_a_program_that_is_no_mcp_server_is_one_sentence():
    config = make_config("mute", "stdio", command=sys.executable, args=["-c", "pass"])
    with pytest.raises(McpServerError, match="ran but did not speak MCP over stdio"):
        list_tools(config, deadline_s=10)


def test_a_program_that_ended_before_the_first_message_gets_the_same_sentence():
    """On a loaded machine such a program can end before the client writes its first
    message: the write finds the pipe broken (anyio's BrokenResourceError in the session's
    task group), which read "failed: BrokenResourceError: no message" before."""
    config = make_config("mute", "stdio", command=sys.executable, args=["-c", "pass"])
    broken = BaseExceptionGroup("unhandled errors in a TaskGroup", [anyio.BrokenResourceError()])
    assert explain(config, broken, 10) == (
        "The MCP server “mute” stopped before answering: the command "
        f"“{sys.executable}” ran but did not speak MCP over stdio (check its arguments)."
    )


def _running(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended while being read
            continue
        if marker in text:
            found.append(text)
    return found


def test_a_server_that_never_answers_is_cut_by_the_deadline_and_stopped():
    marker = f"stepwise-stuck-{uuid.uuid4().hex}"
    config = make_config(
        "stuck",
        "stdio",
        command=sys.executable,
        args=["-c", f"import time; time.sleep(60)  # {marker}"],
    )
    started = time.monotonic()
    with pytest.raises(McpServerError) as caught:
        list_tools(config, deadline_s=2)
    assert str(caught.value) == (
        "The MCP server “stuck” did not answer within 2 s, so the listing of its tools was "
        "stopped; it may be slow or stuck."
    )
    assert time.monotonic() - started < 8
    deadline = time.monotonic() + 10
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running(marker) == [], "the stuck server was left running"


def test_a_reference_in_the_environment_is_read_from_the_apps_and_reaches_the_program(
    monkeypatch,
):
    """``TZ=${STEPWISE_TEST_ZONE}``: the app's variable is read when the server starts, and
    the time server (whose local zone comes from TZ) says so in its tool's schema."""
    monkeypatch.setenv("STEPWISE_TEST_ZONE", "Asia/Kolkata")
    command, _ = TIME_COMMAND
    config = make_config(
        "zoned",
        "stdio",
        command=command,
        args=["-m", "mcp_server_time"],
        env={"TZ": "${STEPWISE_TEST_ZONE}"},
    )
    tools = {t.name: t for t in list_tools(config)}
    assert "Asia/Kolkata" in json.dumps(tools["get_current_time"].input_schema)
