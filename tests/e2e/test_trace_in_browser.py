"""The Run page's messages as a trace, in Chromium at 1440×900 (issue #15, point 4): a
finished 4-step run's steps are collapsed expanders that take a fraction of a screen
(the flat card list they replace was 8,500 px); a click on a step shows its calls with
their latency and token bars, and one more click its raw JSON.

Screenshot: trace.png (in ``SHOTS``): a step opened, with one call's raw JSON.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import SHOTS

CHART_QUESTION = (
    "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
)
WIDTH, HEIGHT = 1440, 900
# The page scrolls inside Streamlit's main section; the body itself does not grow.
PAGE_HEIGHT = """() => Math.max(document.body.scrollHeight,
  document.documentElement.scrollHeight,
  document.querySelector('[data-testid=stMain]').scrollHeight)"""
# From the top of the "Messages" tab to the bottom of the last step of the trace.
TRACE_HEIGHT = """() => {
  const heading = [...document.querySelectorAll('[role=tab]')].find(h => h.innerText.trim() === 'Messages');
  const steps = document.querySelectorAll('.st-key-run-trace [data-testid=stExpander]');
  return steps[steps.length - 1].getBoundingClientRect().bottom
    - heading.getBoundingClientRect().top; }"""


def test_a_finished_runs_trace_is_collapsed_and_a_click_shows_calls_and_raw_json(
    fresh_app_url, browser
):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        page.goto(fresh_app_url + "/run")
        page.get_by_role("button", name=CHART_QUESTION).click()
        expect(page.get_by_label("Question")).to_have_value(CHART_QUESTION, timeout=20_000)
        page.wait_for_timeout(300)
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.get_by_text(re.compile(r"^status done"))).to_be_visible(timeout=90_000)

        page.get_by_role("tab", name="Messages").click()  # the model use's tab is shown first
        steps = page.locator(".st-key-run-trace [data-testid=stExpander]")
        expect(steps).to_have_count(4)
        labels = steps.locator("summary").all_inner_texts()
        assert all(re.search(r"model calls? · .* · [\d,]+ tokens", t) for t in labels), labels
        assert page.locator(".st-key-run-trace details[open]").count() == 0  # all collapsed
        expect(page.locator(".stepwise-trace-item")).to_have_count(0)  # nothing drawn inside

        trace_px = page.evaluate(TRACE_HEIGHT)
        page_px = page.evaluate(PAGE_HEIGHT)
        print(f"trace {trace_px:.0f} px, whole page {page_px} px = {page_px / HEIGHT:.2f} screens")
        assert trace_px <= HEIGHT / 2, trace_px  # the card list was 8,500 px
        # the whole page, everything folded, the Messages tab shown: 2.05 screens since the
        # answer, messages and conversation went under tabs (2026-12-03; 3.39 before, 3.6
        # with the chart under the answer and the agent tables open; 9+ with the card list)
        assert page_px <= 2.5 * HEIGHT, page_px / HEIGHT

        step3 = steps.filter(has_text="Step 3 ·")
        step3.locator("summary").click()
        tool = step3.locator(".stepwise-trace-item", has_text="tool call · make_chart")
        expect(tool).to_be_visible()
        expect(tool).to_contain_text(re.compile(r"latency [\d.]+ m?s"))
        call = step3.locator(".stepwise-trace-item", has_text="model call · chart_generator").first
        expect(call).to_contain_text(re.compile(r"[\d,]+ tokens \([\d,]+ in, [\d,]+ out\)"))
        assert page.locator(".st-key-run-trace details[open]").count() == 1  # only that one

        raw = step3.locator("[data-testid=stExpander]", has_text="Raw JSON")
        expect(step3.locator("[data-testid=stJson]")).to_have_count(0)
        raw.nth(1).locator("summary").click()  # the chart_generator's call asking for the chart
        shown = step3.locator("[data-testid=stJson]")
        expect(shown).to_be_visible()
        expect(shown).to_contain_text("make_chart")
        expect(shown).to_contain_text("recorded call")
        shown.scroll_into_view_if_needed()
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "trace.png"))
    finally:
        context.close()
