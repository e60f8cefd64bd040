"""hierarchical_teams in a real browser: chosen on the Design page (team clusters drawn),
a three-intent request run from the Run page, the request edited mid-run while the run
waits for approval of the API health check, the call approved, and the subtask table
read: the stale subtasks cancelled, the new one done, the final answer shown.

Screenshot: teams.png (in ``SHOTS``).
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from graph.service.store import FILE_NAME, Store
from tests.e2e.conftest import SHOTS
from tests.e2e.test_app_in_browser import _click_run, _graph_node

QUESTION = (
    "Check that the API is healthy, find reliable news sites about interest rates and "
    "send their URLs to the API"
)
EDITED = "Check that the API is healthy and find reliable news sites about copper prices"


def _subtasks(page) -> dict[str, list[str]]:
    expect(page.locator(".st-key-run-subtasks [data-testid='stTable']").last).to_be_visible()
    rows = page.locator(".st-key-run-subtasks").last.locator("[data-testid='stTable'] tbody tr")
    cells = [[c.strip() for c in row.locator("td").all_inner_texts()] for row in rows.all()]
    start = len(cells[0]) - 7 if cells else 0  # a leading index cell, if the table draws one
    return {r[start]: r[start:] for r in cells}


def test_a_teams_run_edited_mid_run_cancels_stale_subtasks_and_adds_the_new_one(
    page, fresh_app_url, tmp_path
):
    page.goto(fresh_app_url)
    page.get_by_text("Hierarchical teams", exact=True).click()
    expect(_graph_node(page, "lead_supervisor")).to_have_count(1)
    expect(_graph_node(page, "search_team__searcher")).to_have_count(1)
    expect(_graph_node(page, "request_team__call_api")).to_have_count(1)
    clusters = page.locator('[data-testid="stGraphVizChart"] svg g.cluster title')
    expect(clusters).to_have_text(["cluster_request_team", "cluster_search_team"])

    page.goto(f"{fresh_app_url}/run")
    page.get_by_role("button", name=QUESTION, exact=True).click()
    expect(page.get_by_label("Question")).to_have_value(QUESTION)
    run_id = _click_run(page)

    # health_checker has side effects: the run waits before its GET is sent
    card = page.locator("[class*='st-key-approval-']").first
    expect(card).to_contain_text("approval before the HTTP call is sent", timeout=30_000)
    expect(card).to_contain_text("GET http://127.0.0.1:")
    expect(page.locator(".st-key-run-subtasks").last).to_contain_text("delegated")
    table = _subtasks(page)
    assert [table[i][3] for i in ("s1", "s2", "s3")] == ["delegated", "pending", "pending"]

    box = page.get_by_role("textbox", name="Edit the request while the run goes")
    expect(box).to_have_value(QUESTION)
    box.fill(EDITED)
    box.press("Control+Enter")
    page.wait_for_timeout(300)
    page.get_by_role("button", name="Edit request", exact=True).click()
    expect(page.get_by_text("Request edited: the lead supervisor replans")).to_be_visible()

    # s1 still needed: asked again (nothing was sent); approve it this time
    expect(page.locator(".st-key-run-subtasks").last).to_contain_text("s4", timeout=30_000)
    card = page.locator("[class*='st-key-approval-']").first
    expect(card).to_contain_text("approval before the HTTP call is sent", timeout=30_000)
    card.get_by_role("button", name="Approve", exact=True).click()

    answer = page.locator(".st-key-run-answer").last
    expect(answer).to_contain_text("site:reuters.com+copper+prices", timeout=30_000)
    page.wait_for_timeout(1000)  # the page redraws once when the run ends
    table = _subtasks(page)
    assert [(i, row[1], row[3]) for i, row in table.items()] == [
        ("s1", "request_team", "done"),
        ("s2", "search_team", "cancelled"),
        ("s3", "request_team", "cancelled"),
        ("s4", "search_team", "done"),
    ]
    assert table["s2"][5].startswith("Cancelled by the edit to revision 1")
    assert "copper prices" in table["s4"][2]
    # The plans are folded below the graph, their count in the title (issue 28.5)
    page.get_by_role("tab", name="More about this run").click()
    page.get_by_text(re.compile(r"^Plans \(2\)$")).click()
    expect(
        page.get_by_text(re.compile(r"Plan 2 — replan after the request was edited"))
    ).to_be_visible()
    expect(page.get_by_role("textbox", name="Edit the request while the run goes")).to_have_count(0)
    # the box stays, greyed, where it was: the page does not move when the run ends
    ended = page.get_by_role("textbox", name="The run has ended: its request (revision 1)")
    expect(ended).to_be_disabled()
    expect(ended).to_have_value(EDITED)
    expect(page.get_by_role("button", name="Edit request", exact=True)).to_be_disabled()

    store = Store(tmp_path / FILE_NAME)
    record = store.run(run_id)
    assert record.status == "done"
    snapshot = store.snapshot(run_id)
    assert snapshot["request"] == EDITED and snapshot["request_revision"] == 1
    assert [a["decision"] for a in snapshot["approvals"]] == ["approve"]
    store.close()

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 1800})
    page.get_by_text("Subtasks", exact=True).scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    page.screenshot(path=str(SHOTS / "teams.png"))
