"""Nothing lost when the app process dies: real ``streamlit run`` processes, SIGKILLed and
started again on the same STEPWISE_HOME, driven in a real browser.

One run waits for an approval and another is mid-step when the app is killed. After the
restart the approval is still on the Approvals page and approving it finishes its run;
the other run is shown as interrupted and its Resume button finishes it.
"""

from __future__ import annotations

import re
import signal
import time

from playwright.sync_api import expect

from tests.e2e import conftest as e2e
from tests.e2e.conftest import start_app, stop_app
from tests.e2e.test_app_in_browser import CHART_QUESTION, _answer
from tests.e2e.test_human_in_the_loop_in_browser import _ask, _store, _wait_status

REPORT = "What caused the dot-com crash? Save a report."


def test_after_a_sigkill_the_approval_is_still_pending_and_the_killed_run_resumes(page, tmp_path):
    home = tmp_path
    store = _store(home)
    process, url = start_app(home)
    try:
        waiting = _ask(page, url, store, REPORT)
        _wait_status(store, waiting, "waiting")
        busy = _ask(page, url, store, CHART_QUESTION)
        deadline = time.time() + 60
        while len(store.nodes_run(busy)) < 3:  # mid-way: planned, and a step under way
            assert time.time() < deadline, "the run did not get going"
            time.sleep(0.05)
        assert store.run(busy).status == "running"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    except BaseException:
        stop_app(process)
        raise
    assert process.returncode == -signal.SIGKILL
    assert store.run(busy).status == "running"  # nobody has said otherwise yet
    nodes_before = len(store.nodes_run(busy))

    process, url = start_app(home)  # the same STEPWISE_HOME, a new process
    try:
        page.goto(url + "/approvals")
        (pending,) = store.pending_interrupts(waiting)
        card = page.locator(f".st-key-approval-{pending['id']}")
        expect(card).to_contain_text("Step 2 · report_writer")
        expect(card).to_contain_text(REPORT)
        card.get_by_role("button", name=e2e.APPROVE).click()
        expect(card.get_by_text("Approved by you at ")).to_be_visible()  # in the buttons' place
        record = _wait_status(store, waiting, "done")
        assert store.snapshot(waiting)["rows"][1]["result"].startswith("Report saved to")
        assert record.status == "done"

        page.goto(url + f"/run?run={busy}")
        expect(
            page.get_by_text(
                "The run was interrupted: The app stopped while this run was in progress."
            )
        ).to_be_visible()
        page.get_by_role("button", name="Resume").click()
        expect(_answer(page)).to_be_visible(timeout=60_000)
        expect(page.get_by_text(re.compile(r"^status done"))).to_be_visible()
        assert store.run(busy).status == "done"
        assert len(store.nodes_run(busy)) > nodes_before
    finally:
        stop_app(process)
