"""supervisor_bus in a real browser: chosen on the Design page, a question run on the
Run page (the writer's approval given on the page), the message bus table read."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import SHOTS
from tests.e2e.test_app_in_browser import _click_run, _graph_node

QUESTION = "What caused the dot-com crash?"


def _bus_cells(page) -> list[list[str]]:
    rows = page.locator(".st-key-run-bus").last.locator("[data-testid='stTable'] tbody tr")
    return [[c.strip() for c in row.locator("td").all_inner_texts()] for row in rows.all()]


def test_the_bus_system_chosen_in_the_browser_runs_and_its_bus_table_reads_right(
    page, fresh_app_url
):
    page.goto(fresh_app_url)
    expect(_graph_node(page, "web_researcher")).to_have_count(1)
    expect(_graph_node(page, "supervisor")).to_have_count(0)
    page.get_by_text("Supervisor + message bus", exact=True).click()
    expect(_graph_node(page, "supervisor")).to_have_count(1)
    expect(_graph_node(page, "web_researcher")).to_have_count(0)
    # the agents' checkboxes (the page's switches, st.toggle, share the test id)
    checkboxes = page.locator('[data-testid="stCheckbox"]:not(:has([role="switch"]))')
    expect(checkboxes).to_have_count(3)
    expect(checkboxes).to_have_text(
        [re.compile("researcher"), re.compile("writer"), re.compile("reviewer")]
    )
    expect(page.get_by_text("a supervisor with a message bus fits", exact=False)).to_be_visible()

    page.goto(f"{fresh_app_url}/run")
    page.get_by_role("button", name=QUESTION, exact=True).click()
    expect(page.get_by_label("Question")).to_have_value(QUESTION)
    _click_run(page)
    # the writer has side effects: by default the supervisor asks before sending it work
    card = page.locator("[class*='st-key-approval-']").first
    expect(card).to_contain_text("approval before the supervisor sends the request")
    card.get_by_role("button", name="Approve", exact=True).click()
    # the last message: the supervisor's answer to the user (the run has finished)
    expect(page.locator(".st-key-run-bus tbody tr").last).to_contain_text("user", timeout=30_000)
    expect(page.locator(".st-key-run-answer").last).to_contain_text("Findings")
    page.wait_for_timeout(1000)  # the page redraws once when the run ends

    expect(page.locator(".st-key-run-bus [data-testid='stTable']").last).to_be_visible()
    cells = _bus_cells(page)
    header = (
        page.locator(".st-key-run-bus")
        .last.locator("[data-testid='stTable'] thead th")
        .all_inner_texts()
    )
    columns = [h.strip() for h in header if h.strip()]
    assert columns == ["Id", "From", "To", "Type", "Payload", "Consumed by", "Time to answer"]
    start = len(cells[0]) - 7  # a leading index cell, if the table draws one
    rows = [r[start:] for r in cells]
    assert rows[0][1:4] == ["user", "supervisor", "request"]
    assert rows[0][5] == "supervisor"
    assert any(
        r[1:4] == ["supervisor", "researcher", "request"] and r[6].endswith(" s") for r in rows
    )
    assert any(r[1:4] == ["researcher", "supervisor", "result"] for r in rows)
    assert any(r[1:4] == ["supervisor", "human", "request"] for r in rows)  # the approval
    assert any(r[1:4] == ["writer", "supervisor", "result"] for r in rows)
    assert rows[-1][1:4] == ["supervisor", "user", "result"]
    # the other parts, folded, under "More about this run" (a class reads the bus)
    page.get_by_role("tab", name="More about this run").click()
    expect(page.get_by_text(re.compile(r"^Supervisor's decisions"))).to_be_visible()

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 1700})
    page.get_by_text("Message bus", exact=True).scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    page.screenshot(path=str(SHOTS / "bus.png"))
