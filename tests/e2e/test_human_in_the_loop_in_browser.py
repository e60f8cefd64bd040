"""A person in the loop, in a real browser: approving a flagged step with an edited query,
forking a run from the History page, exporting and importing it, walking a run
node by node in step mode, and clicking the top Approve of the inbox three times.

Screenshots: approvals.png, approvals-inbox.png and history.png (in ``SHOTS``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from playwright.sync_api import expect

from graph.service.store import FILE_NAME, Store
from tests.e2e.test_app_in_browser import _answer, _run_in_url, _shoot
from tests.e2e.test_teams_fork_in_browser import _settled_box
from tests.inbox_support import APPLE, IBM, REPORT

ASK_EACH_STEP = "What caused the dot-com crash? Ask me before each step."
EDITED = "Search the documents for: the dot-com bubble and the Nasdaq crash of 2000"
TESLA = "How did Tesla's stock do in 2008?"
QUERY_LABEL = "Query the agent will get (edit it, then Approve edited query)"


def _store(home: Path) -> Store:
    return Store(Path(home) / FILE_NAME)


def _wait_status(store: Store, run_id: str, status: str, timeout: float = 60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (record := store.run(run_id)) and record.status == status:
            return record
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} is {store.run(run_id).status}, not {status}")


def _ask(page, app_url: str, store: Store, question: str, step_mode: bool = False) -> str:
    """Type a question on the Run page and press Run; the new run's id (a run the store
    did not hold before, once the page has put it in the address)."""
    earlier = {r.id for r in store.runs(limit=10_000)}
    page.goto(app_url + "/run")
    box = page.get_by_label("Question")
    box.fill(question)
    box.press("Control+Enter")
    expect(box).to_have_value(question)
    if step_mode:
        page.locator('[data-testid="stCheckbox"]').filter(has_text="Step mode").click()
        expect(page.get_by_role("checkbox", name="Step mode")).to_be_checked()
    page.wait_for_timeout(300)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_url(lambda url: _run_in_url(url) not in (None, *earlier))
    return _run_in_url(page.url)


def _steps_table(page):
    return page.locator('[data-testid="stTable"]').filter(has_text="Tokens in").first


def test_a_flagged_step_is_approved_with_an_edited_query_on_the_approvals_page(
    page, app_url, app_home
):
    store = _store(app_home)
    run_id = _ask(page, app_url, store, ASK_EACH_STEP)
    _wait_status(store, run_id, "waiting")
    expect(page.get_by_role("heading", name="Waiting for your decision")).to_be_visible()

    page.goto(app_url + "/approvals")
    (pending,) = store.pending_interrupts(run_id)
    card = page.locator(f".st-key-approval-{pending['id']}")
    expect(card).to_contain_text("Step 1 · web_researcher")
    expect(card).to_contain_text(ASK_EACH_STEP)
    expect(card).to_contain_text("The Planner flagged this step")
    query = card.get_by_label(QUERY_LABEL)
    expect(query).to_have_value(re.compile(r"^Search the documents for: What caused"))
    query.fill(EDITED)
    query.press("Control+Enter")
    expect(query).to_have_value(EDITED)
    _shoot(page, "approvals.png", height=900)

    card.get_by_role("button", name="Approve edited query").click()
    expect(card.locator(f".st-key-outcome-edited-{pending['id']}")).to_contain_text(
        "Approved with your edited query by you at"
    )
    expect(page.get_by_text("Nothing is waiting for a decision")).to_be_visible(timeout=30_000)
    assert _wait_status(store, run_id, "done").status == "done"

    page.goto(app_url + f"/run?run={run_id}")
    table = _steps_table(page)
    expect(table).to_contain_text("approved with an edited query")
    expect(_answer(page)).to_be_visible()
    # the decision is in step 1 of the trace (under its tab), folded until opened
    page.get_by_role("tab", name="Messages").click()
    step1 = page.locator(".st-key-run-trace [data-testid=stExpander]", has_text="Step 1 ·")
    step1.locator("summary").click()
    expect(
        step1.get_by_text(f"Human: edit step 1 (web_researcher) with the query: {EDITED}")
    ).to_be_visible()
    asked = [
        m["content"]
        for m in store.messages(run_id, step=1, agent="web_researcher")
        if m["name"] == "agent_query"
    ]
    assert asked[0].startswith(EDITED)


def _opened_run(page):
    """The line naming the run the History page has open."""
    return page.get_by_text(re.compile(r"^Run [0-9a-f]{32} · question:"))


def _open_runs_table_row(page, position: int, run_id: str) -> None:
    """Click the Question cell of a row of History's runs table (a canvas: rows are 35 px
    under a 35 px header) and see run ``run_id`` opened below it."""
    table = page.locator(".st-key-history-table")
    expect(table).to_be_visible()
    # The mouse clicks where the table is on screen: measured once the page has finished
    # redrawing (a run ending reruns it and moves the table).
    idle = page.locator('[data-testid="stApp"]')
    for attempt in range(3):
        expect(idle).to_have_attribute("data-test-script-state", "notRunning")
        if attempt and run_id in _opened_run(page).inner_text():
            return  # the last click was taken after all, late: another would undo it
        table.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        expect(idle).to_have_attribute("data-test-script-state", "notRunning")
        box = table.bounding_box()
        # the middle of the Question column: after the row selector and Started (150 px)
        x, y = box["x"] + 300, box["y"] + 35 + 35 * position + 17
        page.mouse.move(x, y)  # the grid draws its hover toolbar first
        page.wait_for_timeout(300)
        page.mouse.click(x, y)
        try:
            expect(_opened_run(page)).to_contain_text(run_id, timeout=8000)
            return
        except AssertionError:
            # On the loaded machine a click on the grid was sometimes taken by nothing:
            # no rerun followed (the "s ago" times stood still; 2 of 3 runs under load,
            # screenshots looked at). A user clicks again; so does this.
            continue
    expect(_opened_run(page)).to_contain_text(run_id)


def test_a_fork_from_the_history_page_runs_on_with_another_plan(page, app_url, app_home, tmp_path):
    store = _store(app_home)
    run_id = _ask(page, app_url, store, TESLA)
    _wait_status(store, run_id, "done")

    page.goto(app_url + f"/history?run={run_id}")
    expect(_opened_run(page)).to_contain_text(run_id)
    page.get_by_role("tab", name="Checkpoint timeline").click()
    expect(page.get_by_text("Yellow cells changed since the previous checkpoint")).to_be_visible()
    page.get_by_role("tab", name="Fork or replay").click()
    tab = page.get_by_role("tabpanel", name="Fork or replay")
    grid = tab.locator("[data-testid='stDataFrame']").last
    expect(grid.locator("table td").first).to_be_attached()
    assert "data_researcher" in grid.locator("table td").all_inner_texts()
    # an action the data researcher can do (Tesla is not in the database: its own step
    # is replanned, and a replan would rewrite the action typed here)
    step_one = {"action": "Query the monthly closing prices of AAPL in 2008"}
    # The plan is a table (issue #28: it was JSON): step 1's action typed, as a person
    # does (its agent, a list in the grid, is chosen in the AppTest of the same fork). A keystroke that reached the canvas grid before
    # its editor opened is lost on a busy machine: read back and typed again if so.
    cells: list[str] = []
    for _ in range(3):
        grid.scroll_into_view_if_needed()
        box = _settled_box(grid)
        page.mouse.click(box["x"] + 60, box["y"] + 35 + 17)  # step 1's number (after the row marks)
        if not grid.evaluate("el => el.contains(document.activeElement)"):
            # The click came before the grid could take the focus (a busy machine): the
            # tab list kept it, and the arrows below would open another tab (the grid then
            # gone from view: seen once in a whole run). Try again.
            page.wait_for_timeout(500)
            continue
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        page.wait_for_timeout(500)  # the action's cell editor opens
        page.keyboard.press("Control+A")
        page.keyboard.type(step_one["action"], delay=10)
        page.keyboard.press("Enter")
        page.wait_for_timeout(1000)
        cells = grid.locator("table td").all_inner_texts()
        if step_one["action"] in cells:
            break
    assert step_one["action"] in cells, cells
    tab.get_by_text("Steps are numbered in the order of the rows").click()  # leave the grid
    page.wait_for_timeout(500)  # the grid sends its edit: the page reruns with it
    expect(page.locator('[data-testid="stApp"]')).to_have_attribute(
        "data-test-script-state", "notRunning"
    )
    expect(
        tab.get_by_text(re.compile(r"Going on from here, .* runs next with this plan"))
    ).to_be_visible()
    page.get_by_role("button", name="Run on as a new run").click()
    started = page.get_by_text(re.compile(rf"^Started run ([0-9a-f]{{8}}): a fork of {run_id[:8]}"))
    expect(started).to_be_visible()
    short = re.search(r"Started run ([0-9a-f]{8})", started.inner_text()).group(1)
    (fork,) = [r for r in store.runs() if r.id.startswith(short)]
    record = _wait_status(store, fork.id, "done")
    assert record.parent_run == run_id
    # the typed step ran in the fork (it may be replanned afterwards, as the parent's was)
    planned = [
        (row["step"], row["agent"], row["action"])
        for event in store.events(fork.id, kinds=("state",))
        for row in event["data"]["rows"]
    ]
    assert (1, "data_researcher", step_one["action"]) in planned, planned
    assert store.snapshot(run_id)["rows"][0]["action"] != step_one["action"]  # untouched
    # The fork is open, on its Run tab, and the confirmation outlives the redraw the page
    # makes when the fork ends.
    expect(_opened_run(page)).to_contain_text(fork.id)
    expect(page.get_by_role("tab", name="Run", exact=True)).to_have_attribute(
        "aria-selected", "true"
    )
    expect(_steps_table(page)).to_contain_text("done", timeout=30_000)
    expect(page.get_by_text(re.compile(r"^open · no run in progress"))).to_be_visible()
    expect(started).to_be_visible()

    # A click on a row of the table opens that run: the parent sits under the fork.
    assert [r.id for r in store.runs()][:2] == [fork.id, run_id]
    _open_runs_table_row(page, 1, run_id)
    expect(started).to_be_hidden()
    _open_runs_table_row(page, 0, fork.id)

    # Export the fork as a file and import it back: it is listed as one more run. Once the
    # page has finished drawing the fork: under load the Export tab of the run drawn
    # before (the parent's file) was still there to be clicked (seen once in a whole run).
    expect(page.locator('[data-testid="stApp"]')).to_have_attribute(
        "data-test-script-state", "notRunning"
    )
    page.get_by_role("tab", name="Export").click()
    with page.expect_download() as download:
        page.get_by_role("button", name="Export run JSON").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    exported = json.loads(saved.read_text())
    assert exported["run"]["id"] == fork.id and exported["format"] == "stepwise-run"
    assert exported["run"]["status"] == "done"
    page.get_by_text("Import a run from a JSON export").click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(saved))
    expect(page.get_by_text(re.compile(rf"^Imported {saved.name} as run"))).to_be_visible()
    assert sum(r.question == TESLA for r in store.runs()) >= 3

    page.goto(app_url + f"/history?run={fork.id}")
    expect(page.get_by_text(f"fork of {run_id[:8]} at checkpoint", exact=False)).to_be_visible()
    page.get_by_role("tab", name="Checkpoint timeline").click()
    expect(page.get_by_text("Changed by")).to_be_visible()
    _shoot(page, "history.png", height=1500)


def test_a_step_mode_run_is_walked_node_by_node_with_next_and_the_keys(page, app_url, app_home):
    """Next by a click, then by the → key, and the rest by End (issue 28: keyboard in
    class); each button shows its key."""
    store = _store(app_home)
    run_id = _ask(page, app_url, store, "What caused the dot-com crash?", step_mode=True)
    paused = page.locator(".st-key-run-paused")
    expect(paused).to_contain_text("Next node: planner")
    expect(page.get_by_role("button", name="Next Shortcut →")).to_be_visible()
    expect(page.get_by_role("button", name="Continue Shortcut End")).to_be_visible()
    walked = []
    for expected_next in ("executor", "web_researcher", "executor"):
        if expected_next == "executor" and not walked:
            page.get_by_role("button", name="Next Shortcut →").click()
        else:
            page.locator("h1").first.click()  # focus on the page, not in a text box
            page.keyboard.press("ArrowRight")
        expect(paused).to_contain_text(f"Next node: {expected_next}", timeout=30_000)
        walked.append(list(store.nodes_run(run_id)))
        if expected_next == "web_researcher":
            expect(paused).to_contain_text("agent_query")
            expect(paused).to_contain_text("Search the documents for: What caused")
    assert walked == [
        ["planner"],
        ["planner", "executor"],
        ["planner", "executor", "web_researcher"],
    ]
    expect(_steps_table(page)).to_contain_text("web_researcher")
    page.locator("h1").first.click()
    page.keyboard.press("End")
    expect(_answer(page)).to_be_visible(timeout=30_000)
    expect(page.get_by_text(re.compile(r"^status done"))).to_be_visible()
    assert store.run(run_id).status == "done"


def test_three_quick_clicks_on_the_top_approve_decide_one_card_and_leave_a_line(
    page, app_url, app_home
):
    """The issue's complaint: three clicks on the top Approve approved three runs, the
    list sliding up under the pointer. Now the decided card stays where it was."""
    store = _store(app_home)
    runs = [_ask(page, app_url, store, question) for question in (REPORT, IBM, APPLE)]
    for run_id in runs:
        _wait_status(store, run_id, "waiting")
    asked = sorted(
        ({**store.pending_interrupts(r)[0], "run_id": r} for r in runs),
        key=lambda item: (item["asked_at"], item["run_id"], item["id"]),
    )
    top = asked[0]
    page.goto(app_url + "/approvals")
    card = page.locator(f".st-key-approval-{top['id']}")
    # the top card is the keyboard's current one: its button is named "Approve Shortcut A"
    approve = card.locator(f".st-key-approvals-{top['id']}-approve button")
    expect(approve).to_be_visible()
    clock = card.get_by_text(re.compile(r"deadline in \d+ min \d+ s \(then rejected by default\)"))
    shown_first = clock.inner_text()
    expect(clock).not_to_have_text(shown_first)  # it counts down by itself
    approve.scroll_into_view_if_needed()
    box = approve.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    app = page.locator('[data-testid="stApp"]')
    for _ in range(3):  # as fast as the page answers: each click lands on the redrawn page
        page.mouse.click(x, y)
        page.wait_for_timeout(400)
        expect(app).to_have_attribute("data-test-script-state", "notRunning")
    assert [store.run(item["run_id"]).status for item in asked[1:]] == ["waiting", "waiting"]
    expect(card.locator(f".st-key-decided-{top['id']}")).to_contain_text("Approved by you at")
    under = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y)"
        "?.closest('[class*=\"st-key-approval-\"]')?.className || ''",
        [x, y],
    )
    assert f"st-key-approval-{top['id']}" in under  # the pointer is still on that card
    assert _wait_status(store, top["run_id"], "done").status == "done"
    assert [store.run(item["run_id"]).status for item in asked[1:]] == ["waiting", "waiting"]
    _shoot(page, "approvals-inbox.png", height=1400)

    # the two left are answered together, with the group's bulk action
    page.get_by_role("button", name="Approve all (2)").click()
    expect(page.get_by_text("Approved 2 of 2: their runs go on.")).to_be_visible()
    for item in asked[1:]:
        assert _wait_status(store, item["run_id"], "done").status == "done"
