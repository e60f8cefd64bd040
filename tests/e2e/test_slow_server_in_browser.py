"""On a slow server the Run page shows a call being written, with its token rate.

A reply that takes a minute on a laptop looked like a hung run: the page showed nothing
until the call ended. The app here is pointed at the suite's llama.cpp server slowed to
one thread (``slow_llama``), every other setting at its default, as a new user would
run it. That each system completes there is ``tests/realmodel/test_slow_server.py``'s;
this test watches one run's calls from the page, then stops it (the server is shared).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from graph.kernel.design import Design
from graph.service.store import Store
from graph.settings import Settings
from tests.e2e.conftest import serve
from tests.e2e.test_app_in_browser import _click_run
from tests.support_procs.llama_server import MODEL_NAME
from tests.unit.conftest import wait_for
from ui.views import view_of

pytestmark = pytest.mark.timeout(900)
WRITING = re.compile(r"The model is writing a .*: \d+ tokens so far, \d+\.\d tokens/s \(\d+ s\)")


def test_the_run_page_shows_a_call_in_progress_with_its_token_rate_on_a_slow_server(
    page, slow_llama, tmp_path
):
    env = {
        "OPENAI_BASE_URL": slow_llama.base_url,
        "STEPWISE_PLANNER_MODEL": MODEL_NAME,
        "STEPWISE_WORKER_MODEL": MODEL_NAME,
    }
    store = Store.open(Settings(home=tmp_path))
    store.save_design(Design(system="supervisor_bus"))
    with serve(tmp_path, env=env) as url:
        page.goto(url + "/run")
        example = view_of("supervisor_bus").examples[0]
        page.get_by_role("button", name=example).click()
        run_id = _click_run(page)
        # seen while the run is live
        expect(page.get_by_text(WRITING).first).to_be_visible(timeout=300_000)
        assert store.run(run_id).status == "running", store.run(run_id).reason
        page.get_by_role("button", name="Stop", exact=True).click()
        wait_for(
            lambda: store.run(run_id).status == "cancelled",
            timeout=120,
            what="the stopped run to end cancelled",
        )
