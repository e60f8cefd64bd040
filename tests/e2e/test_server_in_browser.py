"""The Server page in a real browser, attached to a real ``langgraph dev`` serving a graph
Stepwise did not define: open a thread that waits on a question, answer it, and see the
answer in the thread's state.

Screenshot: server.png (in ``SHOTS``).
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from graph.service.server_console import ServerConsole
from tests.e2e.conftest import serve
from tests.e2e.test_app_in_browser import _shoot


def test_answering_a_foreign_graphs_interrupt_from_the_server_page(
    page, tmp_path, foreign_graphs_server
):
    console = ServerConsole(foreign_graphs_server.url)
    assistant = next(a for a in console.assistants() if a.graph_id == "ask_and_write")
    thread_id = console.start(assistant.assistant_id, {"topic": "herons"}).state.thread_id
    assert console.state(thread_id).interrupts  # it waits on a person before the page opens

    with serve(tmp_path, env={"STEPWISE_SERVER_URL": foreign_graphs_server.url}) as app_url:
        page.goto(app_url + "/server")
        expect(page.get_by_role("heading", name="Server")).to_be_visible()
        expect(page.get_by_label("Server URL")).to_have_value(foreign_graphs_server.url)
        page.get_by_role("combobox", name="Graph").click()
        page.get_by_role("option", name="ask_and_write", exact=True).click()
        # the foreign graph is drawn, in Stepwise's style
        expect(page.locator('[data-testid="stGraphVizChart"] svg')).to_contain_text("write")

        page.get_by_role("combobox", name="Open a thread").click()
        page.get_by_role("option", name=re.compile(re.escape(thread_id[-12:]))).click()
        expect(page.get_by_text("What should be said about herons?")).to_be_visible()
        expect(page.locator('[data-testid="stGraphVizChart"] svg')).to_contain_text("waiting")
        _shoot(page, "server.png", height=1400)

        box = page.get_by_label("Answer", exact=True)
        box.fill("they stand very still")
        box.press("Enter")  # commits the text before the click reads it
        page.get_by_role("button", name="Send answer").click()

        expect(page.get_by_text("The run finished.")).to_be_visible()
        expect(page.get_by_text("Noted: they stand very still")).to_be_visible()
        expect(page.get_by_text("What should be said about herons?")).to_have_count(0)

    # the server holds the answer too: the page resumed the thread, not a copy of it
    assert console.state(thread_id).values["note"] == "Noted: they stand very still"
