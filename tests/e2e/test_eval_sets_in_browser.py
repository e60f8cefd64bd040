"""Eval sets from real runs in a real browser: a run opened in History added to a new
eval set with a proposed check typed over first (the proposal table is a canvas grid,
edited as a person does), then a check of that set edited in the Evals page's table
editor and saved."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings

CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
SET = "history"


def _finished_run(home) -> str:
    """A chart run made on the served app's home by a run service of the test's own."""
    settings = Settings(home=home, provider="scripted")
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(CHART, Design())
        assert service.wait(run_id, timeout=60).status == "done"
    finally:
        service.shutdown()
        store.close()
    return run_id


def _saved_set(home):
    store = Store.open(Settings(home=home))
    try:
        return store.load_eval_set(SET)
    finally:
        store.close()


def _settled_box(locator) -> dict:
    """The element's box once it stops moving (the page settles as parts draw in)."""
    box = locator.bounding_box()
    for _ in range(40):
        time.sleep(0.25)
        again = locator.bounding_box()
        if again == box:
            return box
        box = again
    return box


def _type_into_cell(page, grid, row: int, left: int, text: str) -> None:
    """Type ``text`` over a cell of a grid (a canvas): click a cell of its last column
    near the top, go up to the first row with the arrow keys, then down ``row`` rows and
    ``left`` columns to the left, as a person would with the keyboard."""
    grid.scroll_into_view_if_needed()
    box = _settled_box(grid)
    page.mouse.click(box["x"] + box["width"] - 40, box["y"] + 35 * 2 + 17)
    for key in ["ArrowUp"] * 4 + ["ArrowDown"] * row + ["ArrowLeft"] * left:
        page.keyboard.press(key)
    page.keyboard.press("Enter")  # opens the cell's editor over the canvas
    editor = page.locator("textarea.gdg-input")
    expect(editor).to_be_visible()
    editor.fill(text)
    editor.press("Enter")
    expect(editor).to_have_count(0)


def test_a_run_from_history_goes_into_a_set_and_its_checks_are_edited_in_tables(
    page, fresh_app_url, tmp_path
):
    run_id = _finished_run(tmp_path)
    page.goto(f"{fresh_app_url}/history?run={run_id}")
    page.get_by_text("Add this run to an eval set").click()
    base = f"history-to-set-{run_id}"
    expect(page.locator(f".st-key-{base}-question textarea")).to_have_value(CHART)
    # Rows: AAPL, 38.45, the agents, at most 4 steps (row 3), ...; the Value column is
    # left of "From the run": 4 becomes 6.
    _type_into_cell(page, page.locator(f".st-key-{base}-checks"), row=3, left=1, text="6")
    expect(page.get_by_text("Not saved yet")).to_have_count(0)
    name = page.locator(f".st-key-{base}-new-name input")
    name.fill(SET)
    name.press("Enter")
    expect(name).to_have_value(SET)
    page.get_by_role("button", name="Add to eval set").click()
    expect(page.get_by_text("Saved the new eval set “history” with this question")).to_be_visible()
    saved = _saved_set(tmp_path)
    checks = {c.kind: c.value for c in saved.questions[0].checks}
    assert saved.questions[0].question == CHART
    assert checks["max_steps"] == 6 and "data_researcher" in checks["uses_agents"]

    page.goto(f"{fresh_app_url}/evals")
    expect(page.locator(".st-key-evals-set input")).to_have_value(SET)
    # The checks table: Question, Kind, Value (the last column); max_replans is the
    # fifth check (0 → 2).
    grid = page.locator(f".st-key-evals-table-checks-{SET}-0")
    _type_into_cell(page, grid, row=4, left=0, text="2")
    expect(page.get_by_text("Not saved yet.")).to_be_visible()
    page.get_by_role("button", name="Save the tables").click()
    expect(page.get_by_text("Saved “history”: 1 question(s), 7 check(s).")).to_be_visible()
    checks = {c.kind: c.value for c in _saved_set(tmp_path).questions[0].checks}
    assert checks["max_replans"] == 2 and checks["max_steps"] == 6
