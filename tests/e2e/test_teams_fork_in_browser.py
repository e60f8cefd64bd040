"""A teams run forked from the History page in a real browser: a subtask's instruction
edited in the fork tab's table (a cell typed into, as a person does), the new run started,
and its subtask run with the edited instruction."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings

QUESTION = (
    "Check that the API is healthy and find reliable news sites about what moves the stock market"
)
EDITED = "Find reliable news sites about copper prices"


def _finished_teams_run(home) -> str:
    """A teams run made on the served app's home by a run service of the test's own."""
    settings = Settings(home=home, provider="scripted")
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(
            QUESTION, Design(system="hierarchical_teams", approvals={"health_checker": "never"})
        )
        assert service.wait(run_id, timeout=60).status == "done"
    finally:
        service.shutdown()
        store.close()
    return run_id


def _settled_box(locator) -> dict:
    """The element's box once the page has stopped moving it for a whole second (captions
    above it render after it; on a busy machine a quarter of a second was not enough, and
    a click meant for the first row landed on the second)."""
    box, still = locator.bounding_box(), 0
    for _ in range(120):
        time.sleep(0.25)
        again = locator.bounding_box()
        still = still + 1 if again == box else 0
        if still >= 4:
            return box
        box = again
    return box


# Run again (twice at most) when it fails: it drives a canvas grid / samples frames of a
# paced run with real timing, and on a loaded 2-core CI machine a keystroke or a frame
# can be missed (seen twice in fresh-clone CI runs, never locally). The behaviour itself
# is also tested without timing (AppTest and unit tests).
@pytest.mark.flaky(reruns=2, reruns_delay=2)
def test_a_teams_run_is_forked_with_an_instruction_typed_into_the_subtask_table(
    page, fresh_app_url, tmp_path
):
    run_id = _finished_teams_run(tmp_path)
    page.goto(f"{fresh_app_url}/history?run={run_id}")
    page.get_by_role("tab", name="Checkpoint timeline").click()
    expect(page.get_by_text("Inside the teams —")).to_be_visible()
    page.get_by_role("tab", name="Fork or replay").click()
    tab = page.get_by_role("tabpanel", name="Fork or replay")
    expect(tab.get_by_text("to run: s1, s2.")).to_be_visible()
    grid = tab.locator("[data-testid='stDataFrame']").last
    # Typing into the canvas grid as a person does. On a busy machine a keystroke can
    # reach the grid before its cell editor is open and be lost: the edit is read back
    # from the grid's accessible table and typed again if it did not take.
    for _ in range(3):
        grid.scroll_into_view_if_needed()
        box = _settled_box(grid)
        # the first row's id cell (header 35 px, rows 35 px), then over to s2's instruction
        page.mouse.click(box["x"] + 60, box["y"] + 35 + 17)
        for key in ("ArrowDown", "ArrowRight", "ArrowRight"):
            page.keyboard.press(key)
        page.keyboard.press("Enter")
        page.wait_for_timeout(500)  # the cell editor opens
        page.keyboard.press("Control+A")
        page.wait_for_timeout(200)
        page.keyboard.type(EDITED, delay=20)
        page.keyboard.press("Enter")
        page.wait_for_timeout(1000)
        if EDITED in grid.locator("table td").all_inner_texts():
            break
    assert EDITED in grid.locator("table td").all_inner_texts()
    # leave the grid, as a person clicking elsewhere does: the edit is sent to the page
    tab.get_by_text("Going on from here").click()
    expect(tab.get_by_text("edited: s2")).to_be_visible()
    tab.get_by_role("button", name="Run on as a new run").click()

    watch = Store.open(Settings(home=tmp_path))
    try:
        deadline = time.time() + 60
        while True:
            forks = [r for r in watch.runs() if r.parent_run == run_id]
            if forks and forks[0].status == "done":
                break
            assert time.time() < deadline, [(r.status, r.reason) for r in forks]
            time.sleep(0.2)
        rows = {r["id"]: r for r in watch.snapshot(forks[0].id)["rows"]}
    finally:
        watch.close()
    assert rows["s2"]["instruction"] == EDITED and rows["s2"]["status"] == "done"
    assert "copper+prices" in rows["s2"]["result"]
