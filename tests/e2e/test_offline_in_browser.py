"""The app in a real browser needs nothing off the machine: "no internet needed" holds
for the browser too, not only for the engine.

Every page of app.py's navigation is opened, after a run with its graph and chart, while
the browser context records each request (page, worker, websocket) and each failure.
An icon or font from a CDN, or Streamlit's usage statistics, would show up as a request
to a host other than this machine; the page's own icon link and asset tags are read
too, since a browser may defer fetching an icon without ever issuing the request.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import expect

from tests.e2e.conftest import ROOT

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
CHART_QUESTION = (
    "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
)
ANSWERED = "answer assembled by rules"  # the scripted synthesizer's closing line
# Every address the page's markup points the browser at (what it fetches, not links).
ASSET_ADDRESSES_JS = """() => {
  const found = [];
  for (const el of document.querySelectorAll('link[href]')) found.push(el.href);
  for (const el of document.querySelectorAll('img[src], script[src], iframe[src], source[src], video[src], audio[src]')) found.push(el.src);
  for (const el of document.querySelectorAll('image')) {
    const href = el.getAttribute('href') || el.getAttribute('xlink:href');
    if (href) found.push(href);
  }
  return found;
}"""


def _pages_in_navigation() -> list[str]:
    """The URL path of every page app.py lists (Streamlit names it after the file), so
    a page added later is visited without editing this test."""
    source = (Path(ROOT) / "app.py").read_text()
    stems = re.findall(r"st\.Page\(\s*\"app_pages/(\w+)\.py\"", source)
    assert len(stems) >= 7, f"expected the app's seven pages in app.py, found {stems}"
    return stems


def _off_machine(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "javascript", ""):
        return False
    return (parts.hostname or "") not in LOOPBACK_HOSTS


def _wait_page_drawn(page) -> None:
    """The page's script has run and its content is drawn (the title is up and the
    running indicator is gone), then a pause for lazily loaded icons and fonts."""
    expect(page.locator("h1").first).to_be_visible()
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(1000)


def test_no_page_requests_an_address_off_the_machine(browser, fresh_app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    requested: list[str] = []
    failed: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    context.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})"))
    page = context.new_page()
    page.set_default_timeout(20_000)
    expect.set_options(timeout=20_000)
    page.on("websocket", lambda socket: requested.append(socket.url))
    referenced: dict[str, list[str]] = {}
    try:
        # A finished run first, so the Run and History pages draw its graph and chart.
        page.goto(fresh_app_url + "/run")
        page.get_by_role("button", name=CHART_QUESTION).click()
        expect(page.get_by_label("Question")).to_have_value(CHART_QUESTION)
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.locator(".st-key-run-answer").get_by_text(ANSWERED)).to_be_visible(
            timeout=60_000
        )
        expect(page.locator('[data-testid="stVegaLiteChart"]').first).to_be_visible()
        expect(page.locator('[data-testid="stGraphVizChart"] svg').first).to_be_visible()

        for stem in _pages_in_navigation():
            page.goto(f"{fresh_app_url}/{stem}")
            _wait_page_drawn(page)
            referenced[stem] = [a for a in page.evaluate(ASSET_ADDRESSES_JS) if _off_machine(a)]
    finally:
        context.close()

    assert requested, "the browser recorded no request at all: the check saw nothing"
    off_machine = sorted({url for url in requested if _off_machine(url)})
    assert not off_machine, f"the app made the browser fetch from off the machine: {off_machine}"
    pointing_out = {stem: urls for stem, urls in referenced.items() if urls}
    assert not pointing_out, f"pages point the browser off the machine: {pointing_out}"
    # A local request that fails is a missing asset; one cancelled because the test moved
    # on to the next page (net::ERR_ABORTED) is not.
    broken = [f for f in failed if "ERR_ABORTED" not in f]
    assert not broken, f"requests failed: {broken}"
