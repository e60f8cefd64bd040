"""The browser steps of defining the user agent "clock" on the Design page, shared by the
browser tests of user agents (on the offline model, and on the real llama.cpp server):
*New agent* with mcp-server-time's ``get_current_time`` (the server registered and its
tools listed beforehand), ticked, and drawn in the compiled graph."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from graph.service.store import Store
from graph.settings import Settings
from graph.tools.mcp_servers import list_tools
from tests.e2e.conftest import SHOTS
from tests.e2e.test_app_in_browser import _click_run
from tests.user_agent_support import time_server


def register_time_server(home: Path) -> None:
    """mcp-server-time registered in ``home``'s store and its tools listed, as the Tools
    page does, before the app is served."""
    store = Store.open(Settings(home=home))
    try:
        server = time_server()
        store.mcp_servers.add(server)
        store.mcp_servers.remember_tools("time", list_tools(server))
    finally:
        store.close()


def graph_node(page, name: str):
    """The drawn graph's node ``name`` (none, or one)."""
    titles = page.locator('[data-testid="stGraphVizChart"] svg g.node title')
    return titles.filter(has_text=re.compile(rf"^{name}$"))


def choose_option(page, label: str, option_name: str, typed: str) -> None:
    """Choose one option of a multiselect as a user does: type to filter, click the
    option, see its chip. On the loaded two-core machine a click could land while the
    list was still being filtered and choose nothing (seen twice in the browser tier;
    Enter, earlier, made the agent with no tool): the user sees no chip and chooses again,
    and so does this, three times at most."""
    box = page.get_by_label(label, exact=True)
    chosen = page.locator('[data-testid="stMultiSelect"]').filter(has_text=typed)
    for _ in range(3):
        box.click()
        box.press_sequentially(typed)
        option = page.get_by_role("option", name=option_name)
        expect(option).to_be_visible()
        option.click()
        page.get_by_label("Name", exact=True).click()  # closes the list
        try:
            expect(chosen).to_have_count(1, timeout=5000)
            return
        except AssertionError:
            box.fill("")  # what was typed, if it is still there
    expect(chosen).to_have_count(1)


def define_and_tick_clock(page, shot: str) -> None:
    """On the open Design page: define "clock" in the *New agent* form, see it listed
    but not drawn, tick it, see it drawn; a screenshot named ``shot`` in SHOTS."""
    page.get_by_text("New agent").click()
    page.get_by_label("Name", exact=True).fill("clock")
    page.get_by_label("Description (what the Planner reads to choose it)").fill(
        "Tells the current time in a timezone."
    )
    choose_option(page, "Tools", "time · get_current_time (read-only)", "get_current_time")
    page.get_by_role("button", name="Create agent").click()
    tick = page.locator('[data-testid="stCheckbox"]').filter(has_text=re.compile("^clock$"))
    expect(tick).to_have_count(1)
    expect(graph_node(page, "clock")).to_have_count(0)  # defined, not ticked yet
    tick.click()
    expect(graph_node(page, "clock")).to_have_count(1)
    SHOTS.mkdir(parents=True, exist_ok=True)
    tick.scroll_into_view_if_needed()
    page.wait_for_timeout(600)  # let the graph finish drawing
    page.screenshot(path=str(SHOTS / shot))


def ask(page, url: str, question: str) -> str:
    """Type ``question`` on the Run page and press Run; the new run's id."""
    page.goto(url + "/run")
    box = page.get_by_label("Question")
    box.fill(question)
    box.press("Control+Enter")
    expect(box).to_have_value(question)
    return _click_run(page)
