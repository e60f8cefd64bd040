"""Sign-in and roles in the app's own script runs (issue 29): the single-user line with no
provider; with one, the sign-in page for a stranger, and the decision action refused to a
viewer when called directly (not only hidden), while an operator's decision records them."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from graph.prompts import default_text
from graph.settings import get_settings
from tests.app.support import APP, TIMEOUT, open_page, texts
from tests.inbox_support import REPORT, waiting_run

AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "not-a-secret-only-a-test-value",
    "client_id": "stepwise-test",
    "client_secret": "not-a-secret-either",
    "server_metadata_url": "http://localhost:9/.well-known/openid-configuration",
}
OPERATOR, VIEWER = "olga@example.org", "vic@example.org"


@pytest.fixture
def roles(home, tmp_path, monkeypatch):
    path = tmp_path / "roles.toml"
    path.write_text(f'[emails]\n"{OPERATOR}" = "operator"\n')
    monkeypatch.setenv("STEPWISE_ROLES_FILE", str(path))
    get_settings.cache_clear()
    return path


def _signed_in(at: AppTest, email: str | None) -> AppTest:
    at.secrets["auth"] = dict(AUTH)
    at.user = {"is_logged_in": True, "email": email} if email else {"is_logged_in": False}
    return at


def test_with_no_provider_the_app_says_it_is_single_user(home):
    at = open_page()
    assert "Single-user: no sign-in configured" in texts(at)
    assert not [b for b in at.button if b.label in ("Sign in", "Sign out")]


def test_with_a_provider_a_stranger_gets_only_the_sign_in_page(home, roles):
    at = _signed_in(AppTest.from_file(APP, default_timeout=TIMEOUT), None)
    at.run()
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"]
    assert "Single-user" not in texts(at) and "Design" not in [t.value for t in at.title]


def test_a_signed_in_person_is_named_in_the_sidebar_with_their_role(home, roles):
    at = _signed_in(AppTest.from_file(APP, default_timeout=TIMEOUT), VIEWER)
    at.run()
    assert not at.exception
    assert f"Signed in as **{VIEWER}** · viewer" in [c.value for c in at.sidebar.caption]
    assert "Sign out" in [b.label for b in at.sidebar.button]


def _decide_directly(item: dict, bulk: bool) -> None:
    """The Approvals card's Approve callback (or its group's Approve all), called by a
    script of its own: what a forged or stale click would reach."""
    import streamlit as st

    from ui import approvals, inbox_actions

    if bulk:
        inbox_actions.decide_group([item], "approve", "direct")
    else:
        approvals._decide(item, "approve", "direct", "direct:flash")
    kind, text, _ = st.session_state["direct:flash"]
    st.text(f"{kind}: {text}")


def _direct_call(email: str, item: dict, bulk: bool = False) -> AppTest:
    at = _signed_in(
        AppTest.from_function(_decide_directly, args=(item, bulk), default_timeout=TIMEOUT),
        email,
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("bulk", [False, True], ids=["card", "approve-all"])
def test_the_decision_action_called_directly_as_a_viewer_is_refused(home, roles, services, bulk):
    store, service = services
    run_id = waiting_run(store, service, REPORT)
    (item,) = service.pending_approvals()
    at = _direct_call(VIEWER, item, bulk)
    assert [t.value for t in at.text] == [
        f"error: {VIEWER} is signed in as a viewer: deciding approvals needs the operator "
        "role. An admin gives roles in the roles file."
    ]
    assert store.run(run_id).status == "waiting" and not store.decisions.since(0)


def test_an_operators_decision_records_their_email(home, roles, services):
    store, service = services
    run_id = waiting_run(store, service, REPORT)
    (item,) = service.pending_approvals()
    at = _direct_call(OPERATOR, item)
    assert at.text[0].value.startswith("success: Approved step")
    (decided,) = store.decisions.since(0)
    assert decided["run_id"] == run_id and decided["decided"]["by"] == OPERATOR


def test_a_viewer_sees_the_approvals_page_without_decision_buttons(home, roles, services):
    store, service = services
    waiting_run(store, service, REPORT)
    at = _signed_in(AppTest.from_file(APP, default_timeout=TIMEOUT), VIEWER)
    at.run()
    at.switch_page("app_pages/approvals.py").run()
    assert not at.exception
    assert f"Deciding needs the operator role; {VIEWER} is a viewer." in texts(at)
    labels = [b.label for b in at.main.button]
    assert not [label for label in labels if label.startswith(("Approve", "Reject", "Skip"))]


PLANNER = "plan_execute/planner"
EDITOR_KEY = f"prompts:editor:{PLANNER}"


def _save_prompt_as(email: str) -> AppTest:
    at = _signed_in(AppTest.from_file(APP, default_timeout=TIMEOUT), email)
    at.run()
    at.switch_page("app_pages/prompts.py").run()
    at.text_area(key=EDITOR_KEY).input(default_text(PLANNER) + "\nPlan briefly.\n").run()
    next(b for b in at.button if b.label == "Save version").click().run()
    assert not at.exception
    return at


def test_a_prompt_saved_by_an_editor_records_them_and_a_viewer_is_refused(home, roles, services):
    store, _ = services
    roles.write_text(roles.read_text() + '"ed@example.org" = "editor"\n')
    at = _save_prompt_as(VIEWER)
    assert "saving or activating prompts needs the editor role" in texts(at)
    assert not store.prompt_versions(PLANNER) and not store.audit.entries()
    _save_prompt_as("ed@example.org")
    assert [(e["by"], e["action"]) for e in store.audit.entries()] == [
        ("ed@example.org", "prompt version saved"),
        ("ed@example.org", "prompt activated"),
    ]


def test_the_audit_page_lists_who_decided_and_exports_the_rows_as_csv(home, services, downloads):
    store, service = services
    run_id = waiting_run(store, service, REPORT)
    (item,) = service.pending_approvals()
    service.decide(run_id, item["id"], "reject", reason="not today")
    at = open_page("app_pages/audit.py")
    (frame,) = at.dataframe
    rows = frame.value.to_dict("records")
    assert [(r["Who"], r["What"], r["Details"]) for r in rows] == [("you", "Rejected", "not today")]
    exported = downloads(at.get("download_button")[0]).decode()
    assert exported.splitlines()[0] == "When,Who,What,About,Details"
    assert "you,Rejected," in exported and exported.rstrip().endswith("not today")
