"""The app with its runs on a LangGraph Server, in a real browser: ``langgraph dev`` serves
the graphs (``langgraph.json``), the app started with ``STEPWISE_SERVER_URL`` pointing at
it runs a question there, a flagged step is approved on the Approvals page (the server
run resumes with ``Command(resume=...)``), and the Run page shows the answer.

Screenshot: server-approvals.png (in ``SHOTS``).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from graph.service.server_runs import thread_of
from tests.e2e import conftest as e2e
from tests.e2e.conftest import SCRIPTED_DELAY_S, serve
from tests.e2e.test_app_in_browser import _answer, _shoot
from tests.e2e.test_human_in_the_loop_in_browser import ASK_EACH_STEP, _ask, _store, _wait_status
from tests.support_procs import langgraph_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    served = langgraph_server.start(
        tmp_path_factory.mktemp("langgraph-dev"), env={"STEPWISE_SCRIPTED_DELAY": SCRIPTED_DELAY_S}
    )
    yield served
    served.stop()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("server-app-home")


@pytest.fixture(scope="module")
def server_app_url(server, home):
    with serve(home, env={"STEPWISE_SERVER_URL": server.url}) as url:
        yield url


def test_a_step_approved_on_the_approvals_page_resumes_the_server_run_to_its_answer(
    page, server, server_app_url, home
):
    from langgraph_sdk import get_sync_client

    store = _store(home)
    run_id = _ask(page, server_app_url, store, ASK_EACH_STEP)
    _wait_status(store, run_id, "waiting")
    expect(page.get_by_role("heading", name="Waiting for your decision")).to_be_visible()
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar).to_contain_text("Runs execute on the LangGraph Server")
    expect(sidebar).to_contain_text(server.url)
    client = get_sync_client(url=server.url)
    # The run is a thread on the server, waiting there at LangGraph's interrupt().
    (asked,) = client.threads.get_state(thread_of(run_id))["interrupts"]

    page.goto(server_app_url + "/approvals")
    card = page.locator(f".st-key-approval-{asked['id']}")
    expect(card).to_contain_text("Step 1 · web_researcher")
    expect(card).to_contain_text(ASK_EACH_STEP)
    _shoot(page, "server-approvals.png", height=900)
    card.get_by_role("button", name=e2e.APPROVE).click()
    expect(card.get_by_text("Approved by you at ")).to_be_visible()  # in the buttons' place
    expect(page.get_by_text("Nothing is waiting for a decision")).to_be_visible(timeout=30_000)
    record = _wait_status(store, run_id, "done")

    page.goto(server_app_url + f"/run?run={run_id}")
    expect(_answer(page)).to_be_visible()
    # Two server runs on the run's thread: the first waited, the approval resumed it.
    listed = client.runs.list(thread_of(run_id))
    assert [r["status"] for r in listed] == ["success", "success"]
    assert client.threads.get_state(thread_of(run_id))["values"]["final_answer"] == (
        record.final_answer
    )
