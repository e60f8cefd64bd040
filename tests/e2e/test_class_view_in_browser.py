"""Nothing a class needs is clipped at a projector's 1280×720 (issue 28 point 1): for each
system (plan_execute with one agent and with six), with the sidebar shown and in
Presentation, during a paced run that waits for a decision, the graph is drawn whole in
its box (scaled, the scale said), the run's main table has no sideways scroll and shows
its lead columns (Status among them), and no button's label is cut. The run is then
approved to its end, looked at between decisions: a teams worker is seen marked running
inside its team's box (point 2), the status line stays where it was when the run ends, and
the finished run reads in at most 2.5 screens, sidebar shown and in Presentation (point 5).

Screenshots: class-view-<case>-sidebar.png and -presentation.png, and each with -table
(in ``SHOTS``), and the finished run's whole page, class-view-<case>-done-sidebar.png and
-done-presentation.png.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from graph.kernel.design import Design
from graph.service.store import FILE_NAME, Store
from tests.e2e.conftest import SHOTS
from tests.e2e.test_app_in_browser import _click_run
from tests.e2e.test_trace_in_browser import PAGE_HEIGHT
from tests.e2e.test_watching_in_browser import projector_page
from ui.graph_fit import MIN_LABEL_PX

TESLA = "How did Tesla's stock do in 2008?"
TEAMS = (
    "Check that the API is healthy, find reliable news sites about interest rates and "
    "send their URLs to the API"
)
# case -> (design, question that makes the run wait for a decision, the main table's key,
# the columns it must show on every row)
CASES = {
    "plan_execute-1": (
        {"enabled_agents": ["synthesizer"], "approvals": {"synthesizer": "always"}},
        TESLA,
        "steps",
        ["Step", "Agent", "Status", "Replans"],
    ),
    "plan_execute-6": (
        {},
        "What caused the dot-com crash? Ask me before each step.",
        "steps",
        ["Step", "Agent", "Status", "Replans"],
    ),
    "supervisor_bus": (
        {"system": "supervisor_bus"},
        "What caused the dot-com crash?",
        "bus",
        ["Id", "From", "To", "Type"],
    ),
    "hierarchical_teams": (
        {"system": "hierarchical_teams"},
        TEAMS,
        "subtasks",
        ["Id", "Team", "Status"],
    ),
}

# One look at the page: the graph's drawing and its box, the main table's widths and its
# headings, every button or switch label that is cut, every word of a caption beside
# other columns broken across lines (the Run page's "Or try …" once read "exampl / e:"),
# the smallest graph label on screen.
MEASURE = """table => {
  const last = q => [...document.querySelectorAll(q)].pop();
  const rect = e => { const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, width: r.width}; };
  const box = last('.st-key-run-drawing');
  const svg = box && box.querySelector('[data-testid=stGraphVizChart] svg');
  const note = box && [...box.querySelectorAll('.graph-fit-note')].find(n => n.offsetParent !== null);
  const labels = svg ? [...svg.querySelectorAll('text')].map(
    t => t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize)) : [];
  const st = last(`.st-key-run-${table} [data-testid=stTable]`);
  const wide = st ? [st, ...st.querySelectorAll('*')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
    .map(e => [e.tagName, e.scrollWidth, e.clientWidth]) : null;
  const heads = st ? [...st.querySelectorAll('th')].filter(th => th.offsetWidth > 0)
    .map(th => ({name: th.innerText.trim(), ...rect(th)})) : [];
  const labelled = [...document.querySelectorAll(
    '[data-testid=stMain] button, [data-testid=stMain] [data-testid=stCheckbox] label')];
  const cut = labelled.filter(b => b.offsetWidth > 0).flatMap(b =>
    [...b.querySelectorAll('p, [data-testid=stMarkdownContainer]')]
      .filter(e => e.clientWidth > 2 && e.scrollWidth > e.clientWidth + 1)
      .map(e => [b.innerText.trim(), e.scrollWidth, e.clientWidth]));
  const broken = [...document.querySelectorAll(
    '[data-testid=stMain] [data-testid=stColumn] [data-testid=stCaptionContainer] p')]
    .filter(p => p.offsetWidth > 0).flatMap(p => [...p.childNodes]
      .filter(n => n.nodeType === Node.TEXT_NODE).flatMap(n => {
        const words = [], range = document.createRange(), re = /\\S+/g;
        for (let m; (m = re.exec(n.textContent)); ) {
          range.setStart(n, m.index); range.setEnd(n, m.index + m[0].length);
          const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
          if (tops.size > 1) words.push(m[0]);
        }
        return words;
      }));
  return {
    box: box && rect(box), svg: svg && rect(svg), note: note ? note.textContent : '',
    broken,
    min_label: labels.length ? Math.min(...labels) : null,
    table: st && rect(st), wide, heads, cut, viewport: innerWidth,
    buttons: labelled.filter(b => b.tagName === 'BUTTON' && b.offsetWidth > 0)
      .map(b => b.innerText.trim().split('\\n').pop().trim()),  // the icon's name first
  };
}"""


# One look at a run going on: its status word, where its status line sits in the page, the
# nodes marked running inside a team's box (``team:node``; a node's title is team__node),
# and whether a decision waits on the page.
SAMPLE = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  const line = [...document.querySelectorAll('[data-testid=stMarkdownContainer] p')]
    .find(p => p.textContent.startsWith('status '));
  const svg = document.querySelector('.st-key-run-drawing [data-testid=stGraphVizChart] svg');
  const inside = [];
  if (svg) {
    const boxes = {};
    for (const g of svg.querySelectorAll('g.cluster'))
      boxes[g.querySelector('title').textContent.replace(/^cluster_/, '')] = g.getBoundingClientRect();
    for (const g of svg.querySelectorAll('g.node')) {
      if (![...g.querySelectorAll('text')].some(t => t.textContent.trim() === '▶ running')) continue;
      const id = g.querySelector('title').textContent, cut = id.indexOf('__');
      const box = cut > 0 && boxes[id.slice(0, cut)], r = g.getBoundingClientRect();
      if (box && r.left >= box.left && r.right <= box.right && r.top >= box.top
          && r.bottom <= box.bottom) inside.push(id.slice(0, cut) + ':' + id.slice(cut + 2));
    }
  }
  return {
    status: line ? line.textContent.replace(/^status /, '').split(' ')[0] : '',
    top: line ? line.getBoundingClientRect().top + main.scrollTop : null,
    inside,
    decide: document.querySelector("[class*='st-key-approval-'] button") !== null,
  };
}"""
# The finished page is drawn when its height holds over two looks half a second apart.
SETTLED = (
    "() => { const h = (" + PAGE_HEIGHT + ")(); const same = h === window.__seenHeight;"
    " window.__seenHeight = h; return same; }"
)
# A finished run reads in this many screens at most (issue 28 point 5): 2.15-2.45 measured
# on 2026-12-04 with the model use, messages and other parts under tabs (the answer and
# follow-up box in the flow); 3.05-4.15 before, teams the longest (bus 7.4 and teams 5.8
# before the main table stood alone by the graph).
SCREENS = 2.5


def _check(seen: dict, lead: list[str], where: str) -> None:
    """What a class must see, as measured; ``where`` names the moment in a failure."""
    box, svg = seen["box"], seen["svg"]
    assert box and svg, (where, seen)
    assert svg["left"] >= box["left"] - 1 and svg["right"] <= box["right"] + 1, (where, seen)
    assert re.match(r"Drawn at (\d+ % to fit|actual size: it fits)", seen["note"]), (where, seen)
    # scaled down only as far as needed: a scaled drawing fills its box's width
    assert "it fits" in seen["note"] or svg["width"] >= box["width"] - 2, (where, seen)
    assert seen["min_label"] >= MIN_LABEL_PX - 0.1, (where, seen)
    assert seen["table"], (where, "no table", seen)
    assert seen["wide"] == [], (where, seen)  # nothing in the table scrolls sideways
    shown = {h["name"]: h for h in seen["heads"]}
    for name in lead:
        head = shown.get(name)
        assert head, (where, name, seen["heads"])
        assert seen["table"]["left"] - 1 <= head["left"] < head["right"], (where, head)
        assert head["right"] <= min(seen["table"]["right"], seen["viewport"]) + 1, (where, head)
    assert seen["cut"] == [], (where, seen["cut"])
    assert seen["broken"] == [], (where, seen["broken"])


@pytest.mark.parametrize("case", list(CASES))
def test_graph_table_and_buttons_fit_at_1280x720_with_sidebar_and_in_presentation(
    case, fresh_app_url, tmp_path, browser
):
    # A server of its own per case: on the session's shared server the first case's run
    # never reached its decision in the full suite (never alone), and the run it left
    # waiting broke the Approvals tests after it.
    changes, question, table, lead = CASES[case]
    store = Store(tmp_path / FILE_NAME)
    store.save_design(Design(**changes))
    store.close()
    with projector_page(browser) as page:
        _walk(page, fresh_app_url, case, question, table, lead)


def _walk(page: Page, app_url: str, case: str, question: str, table: str, lead: list[str]):
    page.goto(app_url + "/run")
    box = page.get_by_label("Question")
    box.fill(question)
    box.press("Control+Enter")
    expect(box).to_have_value(question)
    page.get_by_role("combobox", name="Pace").click()
    page.get_by_role("option", name="1 s per node").click()
    expect(page.get_by_role("combobox", name="Pace")).to_have_value("1 s per node")
    _click_run(page)
    note = page.locator(".st-key-run-drawing .graph-fit-note:visible")
    # paced, the run waits for its decision with its table and graph drawn
    expect(page.locator("[class*='st-key-approval-']").first).to_be_visible(timeout=60_000)
    expect(page.locator(f".st-key-run-{table} tbody tr").first).to_be_visible()
    expect(page.get_by_role("button", name="Approve edited query")).to_be_visible()
    # what a class needs mid-run is in the page's flow, not under a tab a redraw resets
    expect(page.locator(".st-key-run-chat textarea")).to_be_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    for where in ("sidebar", "presentation"):
        if where == "presentation":
            switch = page.get_by_role("switch", name="Presentation")
            switch.click(force=True)  # the input is visually hidden behind its label
            expect(switch).to_be_checked()
            expect(page.locator("section[data-testid=stSidebar]")).to_be_hidden()
        expect(note).to_have_text(re.compile("^Drawn at"))
        page.wait_for_function(
            "() => { const b = document.querySelector('.st-key-run-drawing');"
            " const s = b && b.querySelector('svg'); if (!s) return false;"
            " return s.getBoundingClientRect().right <= b.getBoundingClientRect().right + 1; }"
        )
        page.wait_for_function(f"t => ({MEASURE})(t).table", arg=table)
        # The page redraws for presentation: under load the table was measured mid-redraw
        # once (a 468 px box holding 851 px, whole suite). Measured once it has settled,
        # and failed below with what it shows if it does not within 15 s.
        expect(page.locator('[data-testid="stApp"]')).to_have_attribute(
            "data-test-script-state", "notRunning"
        )
        try:
            page.wait_for_function(
                f"t => {{ const s = ({MEASURE})(t); return s.table && !s.wide.length; }}",
                arg=table,
                timeout=15_000,
            )
        except PlaywrightTimeout:
            pass  # measured as it is: the assertions below say what is wrong
        seen = page.evaluate(MEASURE, table)
        _check(seen, lead, f"{case}, {where}")
        assert {"Approve", "Approve edited query", "Reject", "Skip"} <= set(seen["buttons"])
        page.locator(".st-key-run-graph").scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, -160)")  # the status line above
        page.screenshot(path=str(SHOTS / f"class-view-{case}-{where}.png"))
        page.locator(f".st-key-run-{table}").last.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"class-view-{case}-{where}-table.png"))
    before = None
    if case == "plan_execute-6":
        before = _actual_size_is_kept(page, note)
    inside, top = _to_the_end(page, before)
    if case == "hierarchical_teams":  # a worker, not only the team's supervisor
        assert [n for n in inside if not n.endswith(":supervisor")], inside
    heights = _finished_heights(page, case, top)
    assert max(heights.values()) <= SCREENS * 720, heights


def _to_the_end(page: Page, top: float | None = None) -> tuple[set[str], float]:
    """Approve each decision until the run is done, looking at the page in between; the
    nodes seen marked running inside a team's box, and where the status line last sat
    while the run went on."""
    inside: set[str] = set()
    # ``top``: where the status line sat before (a waiting run's decision comes below it):
    # the six-agent run, approved while its graph size was tried, may end before a look
    deadline = time.time() + 240
    while (seen := page.evaluate(SAMPLE))["status"] != "done":
        assert time.time() < deadline, ("the run did not end", seen)
        inside.update(seen["inside"])
        if seen["status"] == "waiting" and seen["decide"]:
            page.get_by_role("button", name="Approve", exact=True).first.click()
            page.wait_for_function(f"() => ({SAMPLE})().status !== 'waiting'")
        elif seen["status"] not in ("", "waiting"):
            top = seen["top"]
        time.sleep(0.2)
    assert top is not None, "the run was never seen going on"
    return inside, top


def _finished_heights(page: Page, case: str, top: float) -> dict[str, int]:
    """The finished run's page height as it is (status line no lower than while the run
    went on: nothing came above it), then with Presentation switched the other way; a
    picture of each whole page."""
    heights = {}
    switch = page.get_by_role("switch", name="Presentation")
    # the page after the end, its eval-set bar in view without opening a tab
    expect(page.get_by_text("Add this run to an eval set")).to_be_visible()
    expect(page.locator(".st-key-run-answer")).to_be_visible()
    for turn in range(2):
        where = "presentation" if switch.is_checked() else "sidebar"
        expect(page.locator(".st-key-run-drawing .graph-fit-note:visible")).to_have_text(
            re.compile("^Drawn at")
        )
        page.evaluate("delete window.__seenHeight")
        page.wait_for_function(SETTLED, polling=500)
        if turn == 0:
            # a bar that appeared above it pushed it 56 px down; the teams' Edit request
            # box, gone when the run ended, pulled it 250 px up; a row's rounding, 2 px.
            moved = page.evaluate(SAMPLE)["top"] - top
            assert abs(moved) <= 8, (case, "the status line moved when the run ended", moved)
        heights[where] = page.evaluate(PAGE_HEIGHT)
        print(f"{case} done, {where}: {heights[where]} px = {heights[where] / 720:.2f} screens")
        page.set_viewport_size({"width": 1280, "height": heights[where]})
        page.screenshot(path=str(SHOTS / f"class-view-{case}-done-{where}.png"))
        page.set_viewport_size({"width": 1280, "height": 720})
        switch.click(force=True)
        expect(switch).to_be_checked(checked=where == "sidebar")
    return heights


def _actual_size_is_kept(page: Page, note) -> float:
    """Graph size: Actual size draws the six-agent graph at full size (wider than its box,
    said), and stays chosen while the page redraws; Fit brings it back whole. Returns where
    the status line sat while the run waited, sidebar shown."""
    switch = page.get_by_role("switch", name="Presentation")
    switch.click(force=True)
    expect(switch).not_to_be_checked()
    expect(page.locator("section[data-testid=stSidebar]")).to_be_visible()
    page.evaluate("delete window.__seenHeight")
    page.wait_for_function(SETTLED, polling=500)
    top = page.evaluate(SAMPLE)["top"]
    page.get_by_text("Actual size", exact=True).click()
    expect(page.get_by_role("radio", name="Actual size")).to_be_checked()
    expect(note).to_have_count(1)
    expect(note).to_have_text("Drawn at actual size: scroll sideways to see all of it.")
    page.get_by_role("button", name="Approve", exact=True).click()  # the run goes on
    expect(page.get_by_role("radio", name="Actual size")).to_be_checked()
    expect(note).to_have_text("Drawn at actual size: scroll sideways to see all of it.")
    page.get_by_text("Fit", exact=True).click()
    expect(page.get_by_role("radio", name="Fit")).to_be_checked()
    expect(note).to_have_count(1)  # the note of the size before goes with its redraw
    expect(note).to_have_text(re.compile(r"^Drawn at \d+ % to fit"))
    return top
