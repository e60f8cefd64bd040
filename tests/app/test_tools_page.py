"""The Tools page (issue 30, point 2): add a streamable HTTP MCP server (a real one written
with the ``mcp`` SDK, on loopback), see its tools with their descriptions, schemas and
policies, test one with JSON arguments (the server counts the call), and see bad input and
a server that is down each as one sentence."""

from __future__ import annotations

import pytest

from tests.app.support import button, open_page, texts
from tests.mcp_support import counting_server, free_port

PAGE = "app_pages/tools.py"


@pytest.fixture(scope="module")
def server():
    running = counting_server()
    yield running
    running.stop()


def _add_http(at, name: str, url: str):
    at.text_input(key="tools:add:name").set_value(name)
    at.text_input(key="tools:add:url").set_value(url)
    button(at, "Add server").click().run()
    return at


def test_an_http_server_is_added_its_tools_listed_and_one_tested(home, services, server):
    at = open_page(PAGE)
    assert "No MCP server yet" in texts(at)
    _add_http(at, "counting", server.url)
    assert "Added the MCP server “counting”" in texts(at)
    assert f"**counting** · HTTP · `{server.url}`" in texts(at)

    button(at, "List tools", "counting").click().run()
    titles = [e.label for e in at.expander]
    assert "count_words · read-only: runs freely" in titles
    assert "send_note · side-effecting: asks a person first" in titles
    assert "unannotated · side-effecting: asks a person first" in titles
    assert "Count the words of a text" in texts(at)
    schemas = [j.value for j in at.json]
    assert any('"required": ["to", "body"]' in str(s).replace("'", '"') for s in schemas)
    store, _ = services
    assert store.mcp_servers.policies("counting")["send_note"] == "side_effecting"
    added = [e for e in store.audit.entries() if e["action"] == "MCP server added"]
    assert [(e["by"], e["subject"], e["detail"]) for e in added] == [
        ("human", "counting", server.url)
    ]

    before = server.calls["count_words"]
    at.selectbox(key="tools:test:tool:counting").set_value("count_words")
    at.text_area(key="tools:test:args:counting").set_value('{"text": "one two three four"}')
    button(at, "Call the tool", "counting").click().run()
    assert not at.exception
    assert "The tool answered:" in texts(at)
    assert [c.value for c in at.code] == ["4"]
    assert server.calls["count_words"] == before + 1

    at.text_area(key="tools:test:args:counting").set_value('{"text": ')
    button(at, "Call the tool", "counting").click().run()
    assert "The arguments are not valid JSON: Expecting value at line 1, column 9" in texts(at)
    assert server.calls["count_words"] == before + 1


def test_a_url_with_a_password_is_refused_and_nothing_is_stored(home, services):
    at = _add_http(open_page(PAGE), "leaky", "http://me:hunter22@127.0.0.1:9/mcp")
    assert "carries a user name or password before the host" in texts(at)
    assert "hunter22" not in texts(at)  # the refusal does not show the password either
    store, _ = services
    assert store.mcp_servers.all() == []


def test_a_server_that_is_down_says_so_in_a_sentence(home, services):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    at = _add_http(open_page(PAGE), "gone", url)
    button(at, "List tools", "gone").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(
        f"The MCP server “gone” is down: nothing answers at {url}"
    )


EDITOR, ADMIN = "eda@example.org", "ada@example.org"


@pytest.fixture
def roles(home, tmp_path, monkeypatch):
    from graph.settings import get_settings

    path = tmp_path / "roles.toml"
    path.write_text(f'[emails]\n"{EDITOR}" = "editor"\n"{ADMIN}" = "admin"\n')
    monkeypatch.setenv("STEPWISE_ROLES_FILE", str(path))
    get_settings.cache_clear()
    return path


def _as(email: str):
    from streamlit.testing.v1 import AppTest

    from tests.app.support import APP, TIMEOUT
    from tests.app.test_sign_in_roles import AUTH

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.secrets["auth"] = dict(AUTH)
    at.user = {"is_logged_in": True, "email": email}
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _add_stdio_directly() -> None:
    """The page's Add callback with a stdio server filled in, called by a script of its
    own: what a forged or stale click would reach."""
    import streamlit as st

    from ui import tools_view

    st.session_state.update(
        {
            "tools:add:transport": "stdio",
            "tools:add:name": "sneaky",
            "tools:add:command": "sh",
            "tools:add:args": "-c 'echo owned'",
        }
    )
    tools_view._add()
    kind, text, _ = st.session_state[tools_view.FLASH]
    st.text(f"{kind}: {text}")


def test_adding_a_stdio_server_is_an_admins_action(home, services, roles):
    from streamlit.testing.v1 import AppTest

    from tests.app.support import TIMEOUT
    from tests.app.test_sign_in_roles import AUTH

    editor = _as(EDITOR)
    editor.radio(key="tools:add:transport").set_value("stdio").run()
    assert "an admin's action, and eda@example.org is a editor" in texts(editor)
    assert not [t for t in editor.text_input if t.key == "tools:add:command"]

    direct = AppTest.from_function(_add_stdio_directly, default_timeout=TIMEOUT)
    direct.secrets["auth"] = dict(AUTH)
    direct.user = {"is_logged_in": True, "email": EDITOR}
    direct.run()
    assert [t.value for t in direct.text] == [
        f"error: {EDITOR} is signed in as a editor: adding a stdio MCP server (a program run "
        "on the app's machine) needs the admin role. An admin gives roles in the roles file."
    ]
    store, _ = services
    assert store.mcp_servers.all() == []

    admin = _as(ADMIN)
    admin.radio(key="tools:add:transport").set_value("stdio").run()
    assert [t for t in admin.text_input if t.key == "tools:add:command"]
