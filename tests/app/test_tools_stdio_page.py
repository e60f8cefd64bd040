"""The Tools page with a stdio server (issue 30, points 2 and 4): ``mcp-server-time`` from
PyPI added with a command, arguments and a typed environment value, its tools listed and
one called; the typed value is found in no file under the app's home, and after a restart
(the value gone from memory) the page asks for it again. (Tier ``processes``: the page
starts the server.)"""

from __future__ import annotations

import json

from graph.tools.mcp_config import forget_typed_env
from tests.app.support import button, open_page, texts
from tests.mcp_support import TIME_COMMAND

PAGE = "app_pages/tools.py"
CANARY = "canary-mcp-page-env-9b2e41d7"


def test_a_stdio_server_with_a_typed_secret_is_added_listed_and_called(home, services):
    at = open_page(PAGE)
    at.radio(key="tools:add:transport").set_value("stdio").run()
    command, args = TIME_COMMAND
    at.text_input(key="tools:add:name").set_value("clock")
    at.text_input(key="tools:add:command").set_value(command)
    at.text_input(key="tools:add:args").set_value(" ".join(args))
    at.text_area(key="tools:add:env").set_value(f"CLOCK_TOKEN={CANARY}\nUNUSED=${{HOME}}")
    button(at, "Add server").click().run()
    assert "Added the MCP server “clock”" in texts(at)
    assert CANARY not in texts(at)
    assert "(environment: CLOCK_TOKEN, UNUSED)" in texts(at)

    button(at, "List tools", "clock").click().run()
    assert not at.exception
    titles = [e.label for e in at.expander]
    assert "get_current_time · read-only: runs freely" in titles
    at.selectbox(key="tools:test:tool:clock").set_value("get_current_time")
    at.text_area(key="tools:test:args:clock").set_value('{"timezone": "Asia/Tokyo"}')
    button(at, "Call the tool", "clock").click().run()
    assert json.loads(at.code[0].value)["timezone"] == "Asia/Tokyo"

    for path in home.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path

    forget_typed_env("clock")  # what a restart of the app does to a typed value
    at = open_page(PAGE)
    assert "CLOCK_TOKEN (typed, gone since the app restarted: type it again)" in texts(at)
    at.text_input(key="tools:env:clock:CLOCK_TOKEN").set_value(CANARY)
    button(at, "Keep these values").click().run()
    assert "Kept the typed values of “clock” in memory." in texts(at)
    assert "gone since the app restarted" not in texts(at)
    store, _ = services
    assert store.mcp_servers.get("clock").env["CLOCK_TOKEN"] == CANARY
