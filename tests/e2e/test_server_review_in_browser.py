"""The Server page in a real browser answers a foreign graph's standard human-in-the-loop
request (LangChain's ``HITLRequest``, ``tests/server_graphs/review_edit.py``) with *edit*
(the action's args in a form built from them) and with *respond* (text), and the graph on
the real ``langgraph dev`` goes on as decided.

Screenshot: server_review.png (in ``SHOTS``).
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from graph.service.server_console import ServerConsole
from tests.e2e.conftest import serve
from tests.e2e.test_app_in_browser import _shoot

EMAIL = {"to": "ann@example.org", "subject": "Hi", "urgent": False}


def _open(page, thread_id: str) -> None:
    page.get_by_role("combobox", name="Open a thread").click()
    page.get_by_role("option", name=re.compile(re.escape(thread_id[-12:]))).click()
    expect(page.get_by_text("Send it?")).to_be_visible()


def test_a_standard_request_is_edited_and_responded_to_from_the_server_page(
    page, tmp_path, foreign_graphs_server
):
    console = ServerConsole(foreign_graphs_server.url)
    assistant = next(a for a in console.assistants() if a.graph_id == "review_edit")
    edited, responded = (
        console.start(assistant.assistant_id, {"email": EMAIL}).state.thread_id for _ in range(2)
    )

    with serve(tmp_path, env={"STEPWISE_SERVER_URL": foreign_graphs_server.url}) as app_url:
        page.goto(app_url + "/server")
        expect(page.get_by_role("heading", name="Server")).to_be_visible()
        page.get_by_role("combobox", name="Graph").click()
        page.get_by_role("option", name="review_edit", exact=True).click()

        _open(page, edited)
        to = page.get_by_label("to", exact=True)
        expect(to).to_have_value("ann@example.org")
        to.fill("cy@example.org")
        to.press("Enter")  # commits the text before the click reads it
        page.get_by_label("urgent", exact=True).check(force=True)
        _shoot(page, "server_review.png", height=1400)
        page.get_by_role("button", name="Send edited").click()
        expect(page.get_by_text("The run finished.")).to_be_visible()

        _open(page, responded)
        box = page.get_by_label("Message (sent with a rejection, or as the response)")
        box.fill("She is on leave until Monday.")
        box.press("Control+Enter")
        page.get_by_role("button", name="Respond").click()
        expect(page.get_by_text("The run finished.")).to_be_visible()

    after_edit = console.state(edited).values
    assert after_edit["decision"] == "edit"
    assert after_edit["sent"] == {**EMAIL, "to": "cy@example.org", "urgent": True}
    after_respond = console.state(responded).values
    assert (after_respond["decision"], after_respond["message"], after_respond["sent"]) == (
        "respond",
        "She is on leave until Monday.",
        None,
    )
