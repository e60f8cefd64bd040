"""The Tools page's part of issue 30, points 3 and 4: each tool's policy chosen per tool and
stored (a run's gate reads it), and a stdio server an imported design brought shown with
its command, pending, started by nothing until an admin confirms it."""

from __future__ import annotations

import sys

import pytest

from tests.app.support import button, open_page, texts
from tests.app.test_tools_page import ADMIN, EDITOR, _as, roles  # noqa: F401  (a fixture)
from tests.mcp_support import counting_server
from tests.support import ROOT

PAGE = "app_pages/tools.py"
ECHO = str(ROOT / "tests" / "support_procs" / "echo_env_mcp.py")


@pytest.fixture(scope="module")
def server():
    running = counting_server()
    yield running
    running.stop()


def test_a_tools_policy_is_chosen_on_the_page_and_stored(home, services, server):
    at = open_page(PAGE)
    at.text_input(key="tools:add:name").set_value("counting")
    at.text_input(key="tools:add:url").set_value(server.url)
    button(at, "Add server").click().run()
    button(at, "List tools", "counting").click().run()
    choice = at.radio(key="tools:policy:counting:count_words")
    assert choice.value == "read_only"
    choice.set_value("side_effecting").run()
    assert not at.exception
    assert "“count_words” is now side-effecting: asks a person first." in texts(at)
    store, _ = services
    assert store.mcp_servers.policies("counting")["count_words"] == "side_effecting"
    assert store.mcp_servers.chosen("counting") == {"count_words": "human"}
    titles = [e.label for e in at.expander]
    assert "count_words · side-effecting: asks a person first" in titles
    button(at, "List tools", "counting").click().run()  # listed again: the choice stays
    assert at.radio(key="tools:policy:counting:count_words").value == "side_effecting"


@pytest.mark.usefixtures("roles")
def test_an_imported_stdio_server_waits_for_an_admin_with_its_command_shown(
    home, services, tmp_path
):
    mark = tmp_path / "started"
    store, _ = services
    store.mcp_servers.take_imported(
        [
            {
                "name": "echo",
                "transport": "stdio",
                "command": sys.executable,
                "args": [ECHO, str(mark)],
            }
        ],
        "importer@x.org",
    )
    editor = _as(EDITOR)
    assert f"runs the command `{sys.executable} {ECHO} {mark}`" in texts(editor)
    assert button(editor, "Confirm: let this command run").disabled
    assert not [b for b in editor.button if b.label == "List tools"]
    assert not mark.exists()

    admin = _as(ADMIN)
    button(admin, "Confirm: let this command run").click().run()
    assert "Confirmed the MCP server “echo”" in texts(admin)
    assert not mark.exists()  # confirming starts nothing; listing does
    button(admin, "List tools", "echo").click().run()
    assert "show_env · read-only: runs freely" in [e.label for e in admin.expander]
    assert mark.exists()
    confirmed = [e for e in store.audit.entries() if e["action"] == "MCP server confirmed"]
    assert [(e["by"], e["subject"]) for e in confirmed] == [(ADMIN, "echo")]


def test_the_inbox_shows_a_gated_call_and_its_edited_arguments_reach_the_server(
    home, services, server
):
    """A run of the gated-tools test system waits on its side-effecting call: the Approvals
    inbox shows the tool and its exact arguments, and the arguments edited there are what
    the MCP server receives."""
    import json

    from graph.kernel.design import Design
    from graph.kernel.system import register, unregister
    from graph.tools.mcp_config import make_config
    from tests.gate_system import GATE_SERVER, SYSTEM, question
    from tests.unit.conftest import wait_status

    store, service = services
    store.mcp_servers.add(make_config(GATE_SERVER, "streamable_http", url=server.url))
    register(SYSTEM)
    try:
        before = server.calls["send_note"]
        run_id = service.start(
            question("send_note", to="ada@example.org", body="minutes"),
            Design(system=SYSTEM.name),
        )
        wait_status(service, run_id, "waiting")
        at = open_page("app_pages/approvals.py")
        assert not at.exception, [e.value for e in at.exception]
        page = texts(at)
        assert "approval before the tool **send_note** of the MCP server notes" in page
        (shown,) = [c.value for c in at.code if "ada@example.org" in c.value]
        assert json.loads(shown) == {"to": "ada@example.org", "body": "minutes"}
        (item,) = service.pending_approvals()
        key = f"approvals:{item['id']}"
        edited = json.dumps({"to": "grace@example.org", "body": "minutes"})
        at.text_area(key=f"{key}:query").set_value(edited)
        button(at, "Approve edited query", key).click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert service.wait(run_id, timeout=60).status == "done"
        assert server.calls["send_note"] == before + 1
        assert "sent to grace@example.org" in store.snapshot(run_id)["final_answer"]
    finally:
        unregister(SYSTEM.name)


def test_a_design_imported_on_the_design_page_names_a_stdio_server_and_starts_nothing(
    home, services, tmp_path
):
    import json

    from graph.kernel.design import Design, export_design

    mark = tmp_path / "started"
    document = {
        **export_design(Design()),
        "mcp_servers": [
            {
                "name": "echo",
                "transport": "stdio",
                "command": sys.executable,
                "args": [ECHO, str(mark)],
            }
        ],
    }
    at = open_page()
    at.file_uploader(key="design:import").upload(
        "with-tools.json", json.dumps(document).encode(), "application/json"
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(s.value for s in at.success)
    assert "Imported with-tools.json" in said
    assert f"runs a command on this machine ({sys.executable} {ECHO} {mark})" in said
    assert "stored pending" in said
    store, _ = services
    assert store.mcp_servers.get("echo").pending
    assert not mark.exists()
