"""An agent defined in the browser (issue 30.1 and 30.5), in Chromium at 1280×720: on the
Design page *New agent* defines "clock" with mcp-server-time's ``get_current_time`` (the
server connected and its tools listed beforehand, as the Tools page does), the agent is
ticked and drawn in the compiled graph, and a question about the time runs on the offline
scripted model, which routes the step to clock and really calls the tool."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.conftest import serve
from tests.e2e.user_agent_steps import ask, define_and_tick_clock, graph_node, register_time_server
from tests.user_agent_support import CLOCK_QUESTION


def test_clock_is_defined_ticked_drawn_and_answers_a_question_about_the_time(small_page, tmp_path):
    page = small_page
    register_time_server(tmp_path)
    with serve(tmp_path) as url:
        page.goto(url)
        expect(graph_node(page, "web_researcher")).to_have_count(1)
        define_and_tick_clock(page, "user-agent.png")

        ask(page, url, CLOCK_QUESTION)
        table = page.locator('[data-testid="stTable"]').first
        expect(table).to_contain_text("clock", timeout=60_000)
        statuses = table.locator("tbody tr td:nth-child(4)")
        expect(statuses).to_have_text(["done", "done"], timeout=60_000)
        answer = page.locator(".st-key-run-answer")
        expect(answer).to_contain_text(  # Markdown shows the backticks as code
            "offline scripted model: called get_current_time with arguments from the step"
        )
        expect(answer).to_contain_text('"timezone": "Europe/Rome"')  # the tool's own reply
