"""The Approvals page: every pending decision across runs, and each way of answering it."""

from graph.kernel.design import Design
from tests.app.support import button, open_page, texts, wait_status
from tests.support import RewritingModel, edit_json, is_executor

REPORT = "What caused the dot-com crash? Save a report."
IBM = "Why did IBM sell its PC division? Save a report."
TESLA = "How did Tesla's stock do in 2008?"


def _waiting(services, question=REPORT, design=None):
    store, service = services
    run_id = service.start(question, design or Design())
    wait_status(store, run_id, "waiting")
    return run_id


def _card_key(service, run_id) -> str:
    (item,) = [p for p in service.pending_approvals() if p["run_id"] == run_id]
    return f"approvals:{item['id']}"


def test_with_nothing_pending_the_page_says_so_and_does_not_poll(home):
    at = open_page("app_pages/approvals.py")
    assert any(i.value.startswith("Nothing is waiting for a decision.") for i in at.info)
    assert not [b for b in at.button]


def test_each_pending_approval_shows_its_run_step_agent_kind_query_reason_and_age(home, services):
    store, service = services
    first, second = _waiting(services), _waiting(services, IBM)
    at = open_page("app_pages/approvals.py")
    shown = texts(at)
    assert "2 decision(s) waiting, oldest first, by experiment and run." in shown
    assert shown.count("**Step 2 · report_writer** · approval before the step runs") == 2
    assert f"Run: “{REPORT}”" in shown and f"Run: “{IBM}”" in shown
    assert "**Why it asks:** The design asks a human before every report_writer step." in shown
    assert "Waiting since " in shown and " ago)" in shown
    assert "the design's default applies: **reject**" in shown
    query = at.text_area(key=f"{_card_key(service, first)}:query").value
    assert query.startswith("Save the findings so far as a report")
    assert [b.label for b in at.button if b.key.startswith(_card_key(service, second))] == [
        "Approve",
        "Approve edited query",
        "Reject",
        "Skip",
    ]


def test_approve_runs_the_step_and_the_run_finishes_with_the_decision_recorded(home, services):
    store, service = services
    run_id = _waiting(services)
    at = open_page("app_pages/approvals.py")
    button(at, "Approve", _card_key(service, run_id)).click().run()
    assert [m.value for m in at.markdown if m.value.startswith(":material/check_circle: ")]
    assert service.wait(run_id, timeout=60).status == "done"
    assert store.snapshot(run_id)["rows"][1]["result"].startswith("Report saved to")
    (decision,) = store.messages(run_id, agent="human")
    assert decision["content"] == "Human: approve step 2 (report_writer)."
    at.run()
    assert "Nothing is waiting for a decision." in texts(at)  # a caption: no box moves cards


def test_an_edited_query_is_what_the_agent_gets(home, services):
    store, service = services
    run_id = _waiting(services)
    at = open_page("app_pages/approvals.py")
    key = _card_key(service, run_id)
    at.text_area(key=f"{key}:query").input('Save a report titled "Bubble lessons".')
    button(at, "Approve edited query", key).click().run()
    assert service.wait(run_id, timeout=60).status == "done"
    asked = [
        m["content"]
        for m in store.messages(run_id, step=2, agent="report_writer")
        if m["name"] == "agent_query"
    ]
    assert asked[0].startswith('Save a report titled "Bubble lessons".')
    assert "bubble-lessons" in store.snapshot(run_id)["rows"][1]["result"]


def test_approve_edited_query_with_the_query_unchanged_asks_for_an_edit(home, services):
    store, service = services
    run_id = _waiting(services)
    at = open_page("app_pages/approvals.py")
    button(at, "Approve edited query", _card_key(service, run_id)).click().run()
    assert any("The query is unchanged" in e.value for e in at.error)
    assert store.run(run_id).status == "waiting"


def test_reject_needs_a_reason_then_the_planner_revises_the_step(home, services):
    store, service = services
    run_id = _waiting(services)
    at = open_page("app_pages/approvals.py")
    key = _card_key(service, run_id)
    button(at, "Reject", key).click().run()
    assert any("Say why you reject it" in e.value for e in at.error)
    assert store.run(run_id).status == "waiting"

    at.text_input(key=f"{key}:reason").input("not before the lawyers read it")
    button(at, "Reject", key).click().run()
    (outcome,) = [m.value for m in at.markdown if m.value.startswith(":material/block: ")]
    assert outcome.startswith(
        ":material/block: Rejected by you at "
    )  # styled as a rejection, not a success
    assert outcome.endswith(": “not before the lawyers read it”")
    assert not at.success
    wait_status(store, run_id, "waiting")  # replanned, and report_writer asks again
    assert store.snapshot(run_id)["plan_history"][-1]["reason"] == (
        "A human rejected step 2 (report_writer): not before the lawyers read it"
    )
    at.run()
    assert button(at, "Approve", _card_key(service, run_id))  # the new question is listed


def test_skip_moves_on_without_running_the_step(home, services):
    store, service = services
    run_id = _waiting(services)
    at = open_page("app_pages/approvals.py")
    button(at, "Skip", _card_key(service, run_id)).click().run()
    (outcome,) = [m.value for m in at.markdown if m.value.startswith(":material/")]
    assert outcome.startswith(":material/skip_next: Skipped by you at ")
    assert service.wait(run_id, timeout=60).status == "done"
    rows = store.snapshot(run_id)["rows"]
    assert [r["status"] for r in rows] == ["done", "skipped", "done"]


def _replans_once_too_many(prompt, reply, n):
    """The Executor asks for a replan of step 1 until it was replanned twice."""
    if is_executor(prompt) and "(not run yet)" not in prompt and "attempts (2)" not in prompt:
        return edit_json(reply, replan=True, goto="planner", reason="still nothing")
    return None


def test_an_escalation_at_the_replan_cap_can_be_retried(home, services):
    store, service = services
    service.model_factory = lambda role: RewritingModel(rewrite=_replans_once_too_many)
    run_id = _waiting(services, "What caused the dot-com crash?", Design(max_replans=1))
    at = open_page("app_pages/approvals.py")
    key = _card_key(service, run_id)
    assert "escalation: the step reached its replan cap" in texts(at)
    assert "replan cap (1)" in texts(at)
    assert [b.label for b in at.button if b.key.startswith(key)][-1] == "Retry"
    button(at, "Retry", key).click().run()
    assert service.wait(run_id, timeout=60).status == "done"
    assert store.snapshot(run_id)["replan_attempts"] == {"1": 2}
    (decision,) = store.messages(run_id, agent="human")
    assert decision["content"].startswith("Human: retry step 1 (web_researcher)")


def test_answering_an_approval_someone_else_answered_says_it_is_no_longer_pending(home, services):
    store, service = services
    run_id = _waiting(services)
    at = open_page("app_pages/approvals.py")
    key = _card_key(service, run_id)
    (item,) = service.pending_approvals()
    service.decide(run_id, item["id"], "skip")  # another tab, or the timeout
    button(at, "Approve", key).click().run()
    assert any("no longer pending" in e.value for e in at.error)
    assert service.wait(run_id, timeout=60).status == "done"
    assert [m["content"] for m in store.messages(run_id, agent="human")] == [
        "Human: skip step 2 (report_writer)."
    ]


def test_the_sidebar_counts_every_run_waiting_for_a_decision(home, services):
    """Every page's sidebar links to Approvals with the number of runs waiting: counted by
    the store, all of them (it read at most 1,000 runs' records to count them)."""
    store, _ = services
    for n in range(1001):
        store.create_run(f"waiting-{n}", TESLA, Design(), "offline scripted model")
        store.set_run_status(f"waiting-{n}", "waiting")
    at = open_page()
    links = [el.proto.label for el in at.sidebar.get("page_link")]
    assert "1001 run(s) waiting for a decision" in links, links
