"""Sign-in and roles in a real browser (issue 29): the app behind a real OIDC provider
(``oidc-provider-mock``, a Flask app serving discovery, keys, authorize and token
endpoints on loopback), reached through Streamlit's ``st.login``.

An operator approves a card and History shows their e-mail on the decision; a viewer
sees no decision buttons; signing out returns to the sign-in page.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from oidc_provider_mock import User, run_server_in_thread
from playwright.sync_api import expect

from graph.service.run_service import RunService
from graph.service.store import FILE_NAME, Store
from graph.settings import Settings
from tests.e2e import conftest as e2e
from tests.e2e.conftest import _free_port, start_app, stop_app
from tests.e2e.test_human_in_the_loop_in_browser import _ask, _wait_status
from tests.inbox_support import REPORT, waiting_run

OPERATOR = "olga@example.org"
VIEWER = "vic@example.org"


@pytest.fixture(scope="module")
def provider():
    """The identity provider, on a free loopback port: its address."""
    users = [User(sub=who, claims={"email": who, "name": who}) for who in (OPERATOR, VIEWER)]
    with run_server_in_thread(port=0, user_claims=users) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def signed_app(provider, tmp_path_factory):
    """The app with sign-in on: its URL and its STEPWISE_HOME. The secrets file is the
    test's own (a user writes theirs in .streamlit/secrets.toml)."""
    home = tmp_path_factory.mktemp("signin-home")
    port = _free_port()
    secrets_file = home / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "http://localhost:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "stepwise-test"\n'
        f'client_secret = "{secrets.token_hex(16)}"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
    )
    roles = home / "roles.toml"
    roles.write_text(f'[emails]\n"{OPERATOR}" = "operator"\n')
    process, _ = start_app(
        home,
        port=port,
        env={"STREAMLIT_SECRETS_FILES": str(secrets_file), "STEPWISE_ROLES_FILE": str(roles)},
    )
    try:
        yield f"http://localhost:{port}", home
    finally:
        stop_app(process)


def _sign_in(page, url: str, who: str) -> None:
    page.goto(url)
    page.get_by_role("button", name="Sign in").click()
    # the provider's own page: pick the predefined user
    page.get_by_role("button", name=who, exact=True).click()
    expect(page.get_by_text(f"Signed in as {who}")).to_be_visible()


def test_an_operator_approves_and_history_names_them_then_signs_out(page, signed_app):
    url, home = signed_app
    page.goto(url)
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_role("link", name="Approvals")).to_have_count(0)  # nothing else

    _sign_in(page, url, OPERATOR)
    expect(page.get_by_text(f"Signed in as {OPERATOR} · operator")).to_be_visible()
    store = Store(Path(home) / FILE_NAME)
    run_id = _ask(page, url, store, REPORT)
    _wait_status(store, run_id, "waiting")
    page.goto(url + "/approvals")
    (pending,) = store.pending_interrupts(run_id)
    card = page.locator(f".st-key-approval-{pending['id']}")
    card.get_by_role("button", name=e2e.APPROVE).click()
    expect(card.get_by_text(f"Approved by {OPERATOR} at ")).to_be_visible()
    assert _wait_status(store, run_id, "done").status == "done"
    (decided,) = [d for d in store.decisions.since(0) if d["run_id"] == run_id]
    assert decided["decided"]["by"] == OPERATOR

    page.goto(url + f"/history?run={run_id}")
    # the decision is in the step of the human node, folded until opened
    step = page.locator(".st-key-history-trace [data-testid=stExpander]", has_text="· human,")
    step.locator("summary").dispatch_event("click")  # a pointer click there never completed
    expect(step.get_by_text(f"{OPERATOR}: approve step")).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    # the provider ends its session too, then sends the browser back to the app
    page.get_by_role("button", name="End session").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_text(f"Signed in as {OPERATOR}")).to_have_count(0)


def _waiting_run(home: Path) -> str:
    """A run waiting at report_writer, made on the served app's home by a run service of
    the test's own (a viewer may not start one)."""
    settings = Settings(home=home, provider="scripted")
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    try:
        return waiting_run(store, service, REPORT)
    finally:
        service.shutdown()
        store.close()


def test_a_viewer_sees_no_decision_buttons(page, signed_app):
    url, home = signed_app
    run_id = _waiting_run(home)
    _sign_in(page, url, VIEWER)
    expect(page.get_by_text(f"Signed in as {VIEWER} · viewer")).to_be_visible()
    page.goto(url + "/approvals")
    store = Store(Path(home) / FILE_NAME)
    (pending,) = store.pending_interrupts(run_id)
    card = page.locator(f".st-key-approval-{pending['id']}")
    expect(
        card.get_by_text(f"Deciding needs the operator role; {VIEWER} is a viewer.")
    ).to_be_visible()
    expect(card.get_by_role("button")).to_have_count(0)
    expect(page.get_by_role("button", name="Approve all (1)")).to_have_count(0)
    assert store.run(run_id).status == "waiting"
