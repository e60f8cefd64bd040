"""Watching a run in class (issue #15): at a projector's 1280×720, a run paced at 1 s per
node unfolds with the step table and the graph on screen together, and the graph marks
the running node with more than colour.

Screenshots: watching-1.png, -2 and -3 (in ``SHOTS``): the run unfolding.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import SHOTS
from ui.graph_fit import MIN_LABEL_PX

TESLA = "How did Tesla's stock do in 2008?"


@contextmanager
def projector_page(browser) -> Iterator[Page]:
    """A page of its own at a projector's 1280×720."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        yield page
    finally:
        context.close()


# What one sample of the page reads: whether the graph and the step table are on screen,
# the nodes marked running or next, the table's rows and the status line (null until the
# graph and the table are drawn).
SAMPLE = """() => {
  const svg = document.querySelector('.st-key-run-graph [data-testid=stGraphVizChart] svg');
  const table = document.querySelector('.st-key-run-steps table');
  if (!svg || !table) return null;
  const inView = el => { const r = el.getBoundingClientRect();
    return r.top < innerHeight && r.bottom > 0 && r.left < innerWidth && r.right > 0; };
  const texts = g => [...g.querySelectorAll('text')].map(t => t.textContent);
  const status = [...document.querySelectorAll('p')].find(p => p.textContent.includes('status'));
  return {
    graph_in_view: inView(svg),
    table_in_view: inView(table),
    marked: [...svg.querySelectorAll('g.node')]
      .filter(g => texts(g).some(t => t.startsWith('▶'))).map(g => texts(g).join(' ')),
    rows: [...table.querySelectorAll('tbody tr')].map(tr => tr.innerText),
    status: status ? status.textContent : '',
  };
}"""


# Run again (twice at most) when it fails: it drives a canvas grid / samples frames of a
# paced run with real timing, and on a loaded 2-core CI machine a keystroke or a frame
# can be missed (seen twice in fresh-clone CI runs, never locally). The behaviour itself
# is also tested without timing (AppTest and unit tests).
@pytest.mark.flaky(reruns=2, reruns_delay=2)
def test_a_paced_run_unfolds_with_table_and_graph_in_view_at_1280x720(fresh_app_url, browser):
    with projector_page(browser) as page:
        page.goto(fresh_app_url + "/run")
        page.get_by_role("button", name=TESLA).click()
        # each click reruns the page script: wait for it to show, or Run may see an
        # empty question
        expect(page.get_by_label("Question")).to_have_value(TESLA, timeout=20_000)
        page.get_by_role("combobox", name="Pace").click()
        # 2 s, not 1: each sample waits for a browser busy redrawing the graph, and CI's
        # loaded machine took so long per sample at 1 s that it saw two frames of the run
        page.get_by_role("option", name="2 s per node").click()
        expect(page.get_by_role("combobox", name="Pace")).to_have_value("2 s per node")
        page.wait_for_timeout(300)
        page.get_by_role("button", name="Run", exact=True).click()
        graph = page.locator(".st-key-run-graph [data-testid=stGraphVizChart] svg")
        expect(graph).to_be_visible(timeout=20_000)
        graph.scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, -120)")  # the run's status line above them
        frames: list[tuple[str, str]] = []
        pictures: list[bytes] = []
        deadline = time.time() + 90
        while time.time() < deadline and len(frames) < 40:
            # one look at the page per sample (each round trip waits for the browser,
            # busy drawing the graph anew): the step table itself, as a finished run also
            # draws folded tables (the eval-set proposal's grid) that are not on screen
            seen = page.evaluate(SAMPLE)
            if seen is None:
                time.sleep(0.3)
                continue
            assert seen["graph_in_view"], "the graph left the screen"
            assert seen["table_in_view"], "the step table left the screen"
            frame = (" | ".join(seen["marked"]), " / ".join(seen["rows"]))
            if not frames or frames[-1] != frame:
                frames.append(frame)
                pictures.append(page.screenshot())
            if "done" in seen["status"]:
                break
            time.sleep(0.25)
        # three frames of the run unfolding (early, midway, late) for the README
        SHOTS.mkdir(parents=True, exist_ok=True)
        for n, i in enumerate((1, len(pictures) // 2, len(pictures) - 2), start=1):
            (SHOTS / f"watching-{n}.png").write_bytes(pictures[max(0, i)])
        assert len(frames) >= 5, frames
        marks = {m for m, _ in frames if m}
        assert len(marks) >= 3, marks  # the marked node moved through the graph
        assert all("▶ running" in m or "▶ next" in m for m in marks)
        assert len({r for _, r in frames}) >= 3  # the table changed as the run went


# Every label's size on screen: the text's font size times the drawing's scale.
LABEL_SIZES = """svg => [...svg.querySelectorAll('text')].map(
  t => t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize))"""
BODY_SIZE = """() => parseFloat(getComputedStyle([...document.querySelectorAll(
  '[data-testid=stMarkdownContainer] p')].find(p => p.textContent.startsWith('status ')))
  .fontSize)"""


def test_graph_labels_are_body_size_with_one_and_six_agents_at_1280x720(browser, tmp_path):
    """Issue #15: at "Actual size" the graph's smallest label is at least the body text's
    size with one agent and with six, and its boxes are the same size in both (it grows,
    it does not zoom). Issue #28 changed the default: a class must see the whole graph, so
    it is scaled to fit its column ("Fit"), never below MIN_LABEL_PX labels, and zooms
    back to actual size on demand. The step's action keeps a readable width (a line of
    its own under the step)."""
    import graph.registry  # noqa: F401  (the systems the store's designs name)
    from graph.kernel.design import Design
    from graph.plan_execute.agents import AGENTS
    from graph.service.store import Store
    from tests.e2e.conftest import serve

    box_heights = {}
    for agents in (["synthesizer"], list(AGENTS)):
        home = tmp_path / str(len(agents))
        home.mkdir()
        Store(home / "stepwise.sqlite").save_design(Design(enabled_agents=agents))
        with serve(home) as url:
            with projector_page(browser) as page:
                page.goto(url + "/run")
                page.get_by_role("button", name=TESLA).click()
                expect(page.get_by_label("Question")).to_have_value(TESLA, timeout=20_000)
                page.get_by_role("button", name="Run", exact=True).click()
                graph = page.locator(".st-key-run-graph [data-testid=stGraphVizChart] svg")
                expect(graph).to_be_visible(timeout=20_000)
                expect(page.locator("p", has_text="status done").first).to_be_visible(
                    timeout=30_000
                )
                fitted = graph.evaluate(LABEL_SIZES)
                assert fitted and min(fitted) >= MIN_LABEL_PX - 0.1, (len(agents), fitted)
                page.get_by_text("Actual size", exact=True).click()
                note = page.locator(".st-key-run-drawing .graph-fit-note:visible")
                expect(note).to_have_text(re.compile("^Drawn at actual size"))
                body = page.evaluate(BODY_SIZE)
                sizes = graph.evaluate(LABEL_SIZES)
                assert body >= 14 and sizes, (body, sizes)
                assert min(sizes) >= body, (len(agents), body, sorted(sizes)[:3])
                planner = graph.locator("g.node", has=page.locator("title", has_text="planner"))
                box_heights[len(agents)] = planner.locator("path, polygon").first.evaluate(
                    "p => p.getBoundingClientRect().height"
                )
                action = page.locator(".st-key-run-steps td:nth-child(3)").first
                assert action.evaluate("td => td.getBoundingClientRect().width") >= 12 * body
    assert abs(box_heights[1] - box_heights[len(AGENTS)]) < 1, box_heights


def test_history_lists_runs_without_sideways_scrolling_at_1280x720(fresh_app_url, browser):
    """Issue #15 point 7: History reads like a list of runs; its table fits the page at a
    projector's 1280 px with the sidebar open (it scrolled 320 px sideways)."""
    with projector_page(browser) as page:
        page.goto(fresh_app_url + "/run")
        page.get_by_role("button", name=TESLA).click()
        expect(page.get_by_label("Question")).to_have_value(TESLA, timeout=20_000)
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.locator("p", has_text="status done").first).to_be_visible(timeout=30_000)
        page.goto(fresh_app_url + "/history")
        grid = page.locator(".st-key-history-table .dvn-scroller").first
        expect(grid).to_be_visible(timeout=20_000)  # the grid's code loads on first use
        deadline = time.time() + 10  # it sizes its columns after it is drawn: read again
        while (sizes := grid.evaluate("e => [e.scrollWidth, e.clientWidth]"))[0] > sizes[1]:
            assert time.time() < deadline, sizes
            page.wait_for_timeout(250)
        expect(
            page.locator("[data-testid=stCaptionContainer]", has_text="Agents: ")
        ).to_be_visible()


# A page link of the sidebar, clicked from script: Presentation hides the sidebar (a
# teacher switches it off to leave the page; the test walks straight through).
GO_TO = """slug => document.querySelector(
  `[data-testid=stSidebarNav] a[href$="/${slug}"]`).click()"""


def test_pace_step_mode_and_presentation_stay_after_a_visit_to_history(app_url, browser):
    """Issue #28: Streamlit drops a widget's value on a page without it; the Run page's
    Pace, Step mode and Presentation are as the teacher left them on coming back."""
    with projector_page(browser) as page:
        page.goto(app_url + "/run")
        page.get_by_role("button", name=TESLA).click()
        expect(page.get_by_label("Question")).to_have_value(TESLA)
        page.get_by_role("button", name="Run", exact=True).click()  # the toggle needs a run
        presentation = page.get_by_role("switch", name="Presentation")
        expect(presentation).to_be_visible()
        page.get_by_role("combobox", name="Pace").click()
        page.get_by_role("option", name="1 s per node").click()
        page.get_by_role("checkbox", name="Step mode").click(force=True)
        presentation.click(force=True)  # the input is visually hidden behind its label
        expect(presentation).to_be_checked()
        expect(page.get_by_role("checkbox", name="Step mode")).to_be_checked()
        expect(page.get_by_role("combobox", name="Pace")).to_have_value("1 s per node")
        # The switch shows checked at once; the script run that keeps its value (its
        # on_change) is the one that hides the sidebar. A page change sent before that run
        # took the value to a page without the switch (failed once on a busy machine).
        expect(page.locator('section[data-testid="stSidebar"]')).to_be_hidden()
        page.evaluate(GO_TO, "history")
        expect(page.get_by_role("heading", name="History", exact=True)).to_be_visible()
        page.evaluate(GO_TO, "run")
        expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible()
        expect(page.get_by_role("combobox", name="Pace")).to_have_value("1 s per node")
        expect(page.get_by_role("checkbox", name="Step mode")).to_be_checked()
        expect(page.get_by_role("switch", name="Presentation")).to_be_checked()
        assert not page.locator("[data-testid=stException]").count()


# The contrast ratio of an element's text with the page's white (WCAG 2.x), as seen: a
# translucent colour, or an element made translucent by itself or an ancestor (Streamlit's
# captions are drawn at opacity 0.6), is first blended onto the white.
CONTRAST = """e => {
  let [r0, g0, b0, a = 1] = getComputedStyle(e).color.match(/[\\d.]+/g).map(Number);
  for (let n = e; n; n = n.parentElement) a *= Number(getComputedStyle(n).opacity);
  const rgb = [r0, g0, b0].map(c => a * c + (1 - a) * 255);
  const lin = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const [r, g, b] = rgb.map(lin);
  const l = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return 1.05 / (l + 0.05);
}"""


def test_the_projector_theme_is_high_contrast_kept_across_pages_and_tables_read_at_18px(
    fresh_app_url, browser
):
    """Issue #28 point 7: a high-contrast theme chosen in the app, and table text of at
    least 18 px in Presentation, at a projector's 1280×720."""
    with projector_page(browser) as page:
        page.goto(fresh_app_url + "/run")
        page.get_by_role("button", name=TESLA).click()
        expect(page.get_by_label("Question")).to_have_value(TESLA)
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.locator("p", has_text="status done").first).to_be_visible(timeout=30_000)
        before = page.locator("h1").first.evaluate(CONTRAST)
        assert before < 21, before  # Streamlit's dark grey text on white
        example = page.get_by_text("Or try one of these:")
        faint = example.evaluate(CONTRAST)
        assert faint < 7, faint  # a caption, drawn translucent
        theme = page.get_by_role("switch", name="Projector theme")
        theme.click(force=True)  # the input is visually hidden behind its label
        expect(theme).to_be_checked()
        expect(example).to_have_css("color", "rgb(31, 31, 31)")
        assert example.evaluate(CONTRAST) > 16
        assert page.locator("h1").first.evaluate(CONTRAST) == 21  # black on white
        page.evaluate(GO_TO, "history")  # kept on another page
        expect(page.get_by_role("heading", name="History", exact=True)).to_be_visible()
        expect(page.get_by_role("switch", name="Projector theme")).to_be_checked()
        assert page.locator("h1").first.evaluate(CONTRAST) == 21
        page.evaluate(GO_TO, "run")
        presentation = page.get_by_role("switch", name="Presentation")
        presentation.click(force=True)
        expect(presentation).to_be_checked()
        cell = page.locator('[data-testid="stTable"] td').first
        expect(cell).to_be_visible()
        # The switch shows checked at once; the larger type comes with the page's next
        # script run (on a busy CI machine the cell was read at 14 px before it).
        page.wait_for_function(
            "() => { const c = document.querySelector('[data-testid=\"stTable\"] td');"
            " return c && parseFloat(getComputedStyle(c).fontSize) >= 18 }"
        )
        size = float(cell.evaluate("e => getComputedStyle(e).fontSize").removesuffix("px"))
        assert size >= 18, size
        assert cell.evaluate(CONTRAST) == 21
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "projector-theme.png"))
