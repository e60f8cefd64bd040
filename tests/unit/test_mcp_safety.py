"""Safety of MCP configuration (issue 30, point 4): a stdio server named by an imported
design file is stored pending and never started before an admin confirms it (a real stdio
server written with the ``mcp`` SDK, tests/support_procs/echo_env_mcp.py, touches a file
when it starts); HTTP URLs from a file pass the same checks as typed ones; a typed
environment value is in no export, log, trace, stored file or tool result, even when the
server echoes it."""

from __future__ import annotations

import io
import json
import sys

import pytest

from graph.kernel.design import DESIGN_FORMAT, Design
from graph.kernel.system import register, unregister
from graph.logs import configure_logging
from graph.service.run_service import RunService
from graph.service.run_spans import stored_trace
from graph.tools.mcp_config import make_config
from graph.tools.mcp_servers import McpServerError, agent_tools, call_tool, list_tools
from tests.gate_system import GATE_SERVER, SYSTEM, question
from tests.support import ROOT
from ui.design_io import design_file

ECHO = str(ROOT / "tests" / "support_procs" / "echo_env_mcp.py")
CANARY = "canary-mcp-env-5f0c2e9a"


def _imported_stdio(tmp_path) -> tuple[dict, object]:
    mark = tmp_path / "started"
    item = {
        "name": "echo",
        "transport": "stdio",
        "command": sys.executable,
        "args": [ECHO, str(mark)],
        "env": {"TOKEN": CANARY, "HOME_DIR": "${HOME}", "OTHER": None},
    }
    return item, mark


def test_an_imported_stdio_server_is_not_started_until_an_admin_confirms_it(store, tmp_path):
    item, mark = _imported_stdio(tmp_path)
    (note,) = store.mcp_servers.take_imported([item], "importer@x.org")
    assert "stored pending" in note and f"{sys.executable} {ECHO}" in note  # the command shown
    config = store.mcp_servers.get("echo")
    assert config.pending
    for attempt in (
        lambda: list_tools(config),
        lambda: call_tool(config, "show_env", {"name": "TOKEN"}),
        lambda: agent_tools(config),
    ):
        with pytest.raises(McpServerError, match="not confirmed: its command .* runs only once"):
            attempt()
    assert not mark.exists()  # no process was started
    # a value in the file is never taken: it is to be typed; a reference is kept
    assert store.mcp_servers.exported()[0]["env"] == {
        "HOME_DIR": "${HOME}",
        "OTHER": None,
        "TOKEN": None,
    }
    assert CANARY not in json.dumps(store.mcp_servers.exported())

    store.mcp_servers.confirm("echo")
    config = store.mcp_servers.get("echo")
    assert not config.pending
    assert {t.name for t in list_tools(config)} == {"show_env", "fail_env"}
    assert mark.exists()  # started once confirmed


def test_an_imported_server_never_replaces_one_here(store, tmp_path, monkeypatch):
    here = make_config("echo", "streamable_http", url="http://127.0.0.1:9/mcp")
    store.mcp_servers.add(here)
    item, mark = _imported_stdio(tmp_path)
    (note,) = store.mcp_servers.take_imported([item], "importer@x.org")
    assert "ours was kept" in note
    assert store.mcp_servers.get("echo").url == here.url


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://user:pw@127.0.0.1:8000/mcp", "user name or password"),
        ("file:///etc/passwd", "not an http or https URL"),
    ],
)
def test_an_imported_http_url_is_checked_like_a_typed_one(store, url, words):
    item = {"name": "remote", "transport": "streamable_http", "url": url}
    (note,) = store.mcp_servers.take_imported([item], "importer@x.org")
    assert "was not taken" in note and words in note
    assert store.mcp_servers.get("remote") is None


def test_a_design_file_carries_the_servers_but_no_typed_value(store, settings):
    store.mcp_servers.add(
        make_config("echo", "stdio", command="python", env={"TOKEN": CANARY, "H": "${HOME}"})
    )
    text = design_file(store, Design())
    assert CANARY not in text
    document = json.loads(text)
    assert document["format"] == DESIGN_FORMAT
    (server,) = document["mcp_servers"]
    assert server["env"] == {"TOKEN": None, "H": "${HOME}"} and server["command"] == "python"


@pytest.fixture
def echo(store, tmp_path):
    """The echo server, added with a typed TOKEN, as the gate system's server."""
    config = make_config(
        GATE_SERVER, "stdio", command=sys.executable, args=[ECHO], env={"TOKEN": CANARY}
    )
    store.mcp_servers.add(config)
    return store.mcp_servers.get(GATE_SERVER)


def test_a_tool_echoing_a_typed_value_is_redacted_in_its_result_error_and_log(echo):
    assert call_tool(echo, "show_env", {"name": "TOKEN"}) == "TOKEN is [redacted]"
    stream = io.StringIO()
    configure_logging("WARNING")
    before = sys.stderr
    sys.stderr = stream  # the app's own log handler writes to whatever stderr is
    try:
        with pytest.raises(McpServerError) as failed:
            call_tool(echo, "fail_env", {"name": "TOKEN"})
    finally:
        sys.stderr = before
    assert "refused with token [redacted]" in str(failed.value)
    logged = stream.getvalue()
    assert "Traceback" in logged and "refused with token [redacted]" in logged, logged
    assert CANARY not in logged and CANARY not in str(failed.value)


def test_a_run_using_an_echoing_tool_keeps_the_typed_value_out_of_every_file_and_trace(
    store, settings, echo
):
    register(SYSTEM)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(question("show_env", name="TOKEN"), Design(system=SYSTEM.name))
        done = service.wait(run_id, timeout=60)
        assert done.status == "done", done.reason
        assert store.snapshot(run_id)["final_answer"] == "TOKEN is [redacted]"
        trace = stored_trace(store, run_id, content=True)
        assert CANARY not in json.dumps(trace, default=str)
        exported = store.export_run(run_id)
        assert CANARY not in json.dumps(exported, default=str)
    finally:
        service.shutdown()
        unregister(SYSTEM.name)
    for path in settings.home.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


def test_a_run_export_naming_a_stdio_server_adds_none(store, settings, tmp_path, echo):
    """A run export carries no MCP server, and one that names a server (written by hand, or
    by a newer build) adds nothing on import: only a design file's import takes servers,
    pending."""
    register(SYSTEM)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(question("show_env", name="TOKEN"), Design(system=SYSTEM.name))
        assert service.wait(run_id, timeout=60).status == "done"
        exported = store.export_run(run_id)
        assert "mcp_servers" not in json.dumps(exported)
        item, mark = _imported_stdio(tmp_path)
        store.mcp_servers.delete(GATE_SERVER)
        store.delete_run(run_id)
        store.import_run_noting({**exported, "mcp_servers": [item]})
        assert store.mcp_servers.all() == [] and not mark.exists()
    finally:
        service.shutdown()
        unregister(SYSTEM.name)
