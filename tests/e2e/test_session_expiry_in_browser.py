"""A closed tab's session is shut down and its memory collected once Streamlit's TTL for it
has passed, with nobody opening the app again (issue 33, point 3; ``ui/session_expiry.py``).

Streamlit itself only drops an expired session when its session cache is next written,
and never shuts it down: an app left alone after a class kept every closed tab. Here a
real ``streamlit run`` with a 2 s ``server.disconnectedSessionTTL`` and Chromium: two
tabs are opened and closed, a third stays open; the server's log must say the two were
shut down, and the open tab must still work. The log line is the app's own (INFO);
it is only written after the sessions were taken out and shut down. On a Streamlit whose
internals moved, the app logs a warning instead and this test fails.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.conftest import serve

SHUT_DOWN = re.compile(r"(\d+) closed session\(s\) past their TTL shut down")
TTL_S = 2


def _shut_down(log: Path) -> int:
    return sum(int(n) for n in SHUT_DOWN.findall(log.read_text(errors="replace")))


def _open(browser, url: str, path: str):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{url}/{path}")
    expect(page.locator("h1").first).to_be_visible(timeout=60_000)
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=60_000)
    return context, page


def test_closed_tabs_are_shut_down_after_their_ttl_and_open_ones_are_kept(browser, tmp_path):
    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(TTL_S), "STEPWISE_LOG_LEVEL": "INFO"}
    log = tmp_path / "streamlit.log"
    with serve(tmp_path, env=env) as url:
        kept, kept_page = _open(browser, url, "history")
        closing = [_open(browser, url, path)[0] for path in ("", "run")]
        for context in closing:  # together: a disconnect after the other's TTL would drop
            context.close()  # it itself, unshut (Streamlit's own lazy expiry)
        deadline = time.monotonic() + 60  # the TTL, then the thread's next look (5 s)
        while _shut_down(log) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _shut_down(log) == 2, log.read_text(errors="replace")[-3000:]
        assert "closed sessions are left to Streamlit" not in log.read_text()

        # the open tab was not taken: it still runs its script when asked
        time.sleep(TTL_S + 6)
        assert _shut_down(log) == 2
        kept_page.get_by_role("link", name="Design").first.click()
        expect(kept_page.locator("h1").first).to_have_text(re.compile("Design"), timeout=60_000)
        kept.close()
