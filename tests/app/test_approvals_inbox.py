"""The Approvals page as an inbox for many runs: grouped by experiment and run, filtered,
answered a group at a time, in an order a decision does not disturb, with a countdown
and a record of what a timeout decided."""

from __future__ import annotations

from datetime import datetime

from graph.kernel.design import Design
from graph.service.store import TERMINAL_STATUSES
from tests.app.support import button, open_page, texts
from tests.inbox_support import APPLE, IBM, REPORT, waiting_experiment, waiting_run
from tests.unit.conftest import wait_for

TEAMS_QUESTION = "Check that the API is healthy and find reliable news sites"


def _card_order(at) -> list[str]:
    """The questions' ids in the order the page shows their cards."""
    return [t.key.split(":")[1] for t in at.text_area if (t.key or "").endswith(":query")]


def _outcomes(at) -> list[str]:
    """The decided cards' outcome lines, each with the icon that says its kind."""
    return [m.value for m in at.markdown if m.value.startswith(":material/")]


def _item(service, run_id) -> dict:
    (item,) = [p for p in service.pending_approvals() if p["run_id"] == run_id]
    return item


def test_cards_say_their_experiment_variant_and_repeat_and_the_filters_narrow_them(home, services):
    store, service = services
    by_hand = waiting_run(store, service, APPLE)
    _, runs = waiting_experiment(store, service, "report prompts", [REPORT, IBM])
    at = open_page("app_pages/approvals.py")
    shown = texts(at)
    assert [h.value for h in at.subheader] == [
        "Runs outside experiments",
        "Experiment “report prompts”",
    ]
    assert f"**Variant “B” · repeat 1 of 1 · question 2: “{IBM}”**" in shown
    assert f"**“{APPLE}” · run {by_hand[:8]}**" in shown
    assert "5 decision(s) waiting" in shown
    assert "no deadline" in shown and "No timeout: the run waits" in shown  # experiment runs

    at.multiselect(key="approvals:filter:experiments").set_value(["report prompts"]).run()
    assert [h.value for h in at.subheader] == ["Experiment “report prompts”"]
    assert len(_card_order(at)) == 4 and _item(service, by_hand)["id"] not in _card_order(at)
    assert "1 more hidden by the filters." in texts(at)
    at.multiselect(key="approvals:filter:experiments").set_value([]).run()
    at.multiselect(key="approvals:filter:systems").set_value(["hierarchical_teams"]).run()
    assert not _card_order(at) and "5 more hidden by the filters." in texts(at)
    assert at.multiselect(key="approvals:filter:kinds").options == ["approval"]
    assert not at.exception


def test_approve_all_of_a_group_resumes_every_run_of_the_experiment(home, services):
    store, service = services
    by_hand = waiting_run(store, service, APPLE)
    experiment_id, runs = waiting_experiment(store, service, "report prompts", [REPORT, IBM])
    at = open_page("app_pages/approvals.py")
    order = _card_order(at)
    button(at, "Approve all (4)", f"approvals:group:{experiment_id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "Approved 4 of 4: their runs go on." for s in at.success)
    for run_id in runs.values():
        assert service.wait(run_id, timeout=60).status == "done"
    assert [p["run_id"] for p in service.pending_approvals()] == [by_hand]
    at.run()
    assert _card_order(at) == order  # decided cards stay, in place
    lines = _outcomes(at)
    assert len(lines) == 4
    assert all(line.startswith(":material/check_circle: Approved by you at ") for line in lines)
    # the group's row stays where it was, greyed: nothing under it moves up
    group_buttons = [b for b in at.button if b.key.startswith(f"approvals:group:{experiment_id}")]
    assert [b.label for b in group_buttons] == ["Approve all (0)", "Reject all (0)", "Skip all (0)"]
    assert all(b.disabled for b in group_buttons)
    assert button(at, "Approve all (1)", "approvals:group:runs")


def test_reject_all_needs_one_reason_and_passes_it_to_each_run(home, services):
    store, service = services
    experiment_id, runs = waiting_experiment(store, service, "e", [REPORT], variants=("A", "B"))
    at = open_page("app_pages/approvals.py")
    group = f"approvals:group:{experiment_id}"
    button(at, "Reject all (2)", group).click().run()
    assert any("Say why you reject them" in e.value for e in at.error)
    assert all(store.run(r).status == "waiting" for r in runs.values())
    at.text_input(key=f"{group}:reason").input("not before the lawyers read it")
    button(at, "Reject all (2)", group).click().run()
    assert any(s.value == "Rejected 2 of 2: their runs go on." for s in at.success)
    lines = _outcomes(at)
    assert len(lines) == 2
    assert all(line.startswith(":material/block: Rejected by you at ") for line in lines)
    assert all(line.endswith(": “not before the lawyers read it”") for line in lines)
    assert at.text_input(key=f"{group}:reason").value == ""  # used once, then cleared


def test_approving_the_middle_card_leaves_a_line_in_its_place_and_nothing_moves(home, services):
    store, service = services
    first, middle, last = (waiting_run(store, service, q) for q in (REPORT, IBM, APPLE))
    at = open_page("app_pages/approvals.py")
    order = _card_order(at)
    key = f"approvals:{_item(service, middle)['id']}"
    button(at, "Approve", key).click().run()
    assert _card_order(at) == order
    spent = [b for b in at.button if b.key.startswith(f"{key}:")]  # kept, hidden: its height
    assert spent and all(b.disabled for b in spent)  # no second click
    assert at.text_area(key=f"{key}:query").disabled
    (line,) = _outcomes(at)
    assert line == f":material/check_circle: Approved by you at {datetime.now():%H:%M}"
    assert not at.success  # no message under the card: it would push the next one down
    assert service.wait(middle, timeout=60).status == "done"
    at.run()
    assert _card_order(at) == order  # still there once its run has finished
    assert "2 decision(s) waiting" in texts(at)
    button(at, "Clear decided", "approvals:clear").click().run()
    assert len(_card_order(at)) == 2


def _settled_after(store, service, run_id: str, answered: str) -> str:
    """Block until the run, its question ``answered``, has ended or asks a new one; its
    status then (the run goes on in the background, so a page redrawn at once may or may
    not show its next question yet)."""

    def settled() -> str | None:
        status = store.run(run_id).status
        asking = [p for p in service.pending_approvals() if p["run_id"] == run_id]
        if status in TERMINAL_STATUSES or (asking and asking[0]["id"] != answered):
            return status
        return None

    return wait_for(settled, what=f"run {run_id} to end or ask again")


def test_a_timeout_shows_what_it_decided_in_the_cards_place(home, services):
    store, service = services
    run_id = waiting_run(store, service, REPORT, Design(approval_timeout_s=30))
    at = open_page("app_pages/approvals.py")
    assert "deadline in " in texts(at) and "(then rejected by default)" in texts(at)
    order = _card_order(at)
    item = _item(service, run_id)
    assert service.apply_timeouts(now=item["asked_at"] + 31) == 1  # what the watcher does
    status = _settled_after(store, service, run_id, item["id"])
    at.run()
    # The decided card keeps its place; the rejected step's replan may ask again, after it.
    shown = _card_order(at)
    assert shown[: len(order)] == order
    assert len(shown) == len(order) + (status == "waiting")
    (line,) = _outcomes(at)
    decided_at = service.recent_decisions(0)[0]["decided"]["at"]
    assert line == (
        f":material/timer_off: Timed out at {datetime.fromtimestamp(decided_at):%H:%M:%S}: "
        "rejected by default"
    )


def test_an_http_call_card_asks_why_not_send_the_call(home, services):
    store, service = services
    teams = waiting_run(store, service, TEAMS_QUESTION, Design(system="hierarchical_teams"))
    step = waiting_run(store, service, REPORT)
    at = open_page("app_pages/approvals.py")
    call = f"approvals:{_item(service, teams)['id']}"
    assert at.text_input(key=f"{call}:reason").placeholder == "e.g. why not send this call"
    assert at.text_area(key=f"{call}:query").label.startswith("The HTTP call to send")
    plan = f"approvals:{_item(service, step)['id']}"
    assert at.text_input(key=f"{plan}:reason").placeholder == (
        "e.g. not this source, look in the database"
    )
    assert at.multiselect(key="approvals:filter:kinds").options == ["HTTP call", "approval"]


def test_approve_all_answers_only_the_cards_on_screen_and_names_one_that_came_since(home, services):
    store, service = services
    shown = waiting_run(store, service, REPORT)
    at = open_page("app_pages/approvals.py")
    late = waiting_run(store, service, IBM)  # the page has not been redrawn since
    button(at, "Approve all (1)", "approvals:group:runs").click().run()
    (message,) = [w.value for w in at.warning if w.value.startswith("Approved 1 of 1")]
    assert f"arrived after the page showed this group: step 2 (report_writer) of “{IBM}”" in (
        message
    )
    assert service.wait(shown, timeout=60).status == "done"
    assert store.run(late).status == "waiting"
    assert button(at, "Approve all (1)", "approvals:group:runs")  # the newcomer, now on screen


def _keys(at) -> dict[str, str]:
    """{button key: its keyboard shortcut}, for the buttons that have one."""
    return {b.key: b.proto.shortcut for b in at.button if b.proto.shortcut}


def test_the_current_card_carries_the_keys_and_j_k_move_it(home, services):
    store, service = services
    first, second = (waiting_run(store, service, q) for q in (REPORT, IBM))
    one, two = (f"approvals:{_item(service, r)['id']}" for r in (first, second))
    at = open_page("app_pages/approvals.py")
    assert "Keys: **J** next card · **K** previous card · **A** approve" in texts(at)
    assert _keys(at) == {
        "approvals:previous": "k",
        "approvals:next": "j",
        f"{one}:approve": "a",
        f"{one}:reject": "x",
        f"{one}:skip": "s",
    }
    assert f"Current card: step 2 (report_writer) of “{REPORT}”" in texts(at)
    button(at, "Next card", "approvals").click().run()
    assert {k for k in _keys(at) if k.startswith("approvals:") and k.count(":") == 2} == {
        f"{two}:approve",
        f"{two}:reject",
        f"{two}:skip",
    }
    button(at, "Next card", "approvals").click().run()  # round to the first again
    assert f"{one}:approve" in _keys(at)

    # Reject with no reason: the reason box is asked for, and Ctrl+Enter then sends it
    button(at, "Reject", one).click().run()
    assert any("Type it in the reason box, then press Ctrl+Enter" in e.value for e in at.error)
    assert _keys(at)[f"{one}:reject"] == "ctrl+enter"
    assert store.run(first).status == "waiting"
    at.text_input(key=f"{one}:reason").input("not before the lawyers read it")
    button(at, "Reject", one).click().run()
    (line,) = _outcomes(at)
    assert line.startswith(":material/block: Rejected by you at ")
    # the decided card hands the keys on to the next one waiting under it (the second
    # run's, or the question the first run asks again after its replan)
    (approve,) = [k for k, v in _keys(at).items() if v == "a"]
    assert approve != f"{one}:approve"
    assert _card_order(at).index(approve.split(":")[1]) > _card_order(at).index(one.split(":")[1])


def test_a_webhooks_link_opens_the_inbox_on_its_card(home, services):
    store, service = services
    first, second = (waiting_run(store, service, q) for q in (REPORT, IBM))
    linked = _item(service, second)["id"]
    at = open_page("app_pages/approvals.py", card=linked)
    assert f"Current card: step 2 (report_writer) of “{IBM}”" in texts(at)
    assert _keys(at)[f"approvals:{linked}:approve"] == "a"


def test_a_question_decided_before_the_page_opened_is_drawn_without_boxes(home, services):
    """Nothing can move that was never shown waiting, so its card is a line: no boxes, no
    buttons (a session keeps every widget its page drew, while Streamlit keeps it). One
    decided once the page is open keeps its greyed boxes (the test above)."""
    store, service = services
    answered, waiting = (waiting_run(store, service, q) for q in (REPORT, APPLE))
    item = _item(service, answered)
    service.decide(answered, item["id"], "approve")
    at = open_page("app_pages/approvals.py")
    key = f"approvals:{item['id']}:"
    assert not [
        w for w in (*at.text_area, *at.text_input, *at.button) if (w.key or "").startswith(key)
    ]
    assert any(
        line.startswith(":material/check_circle: Approved by you at ") for line in _outcomes(at)
    )
    assert _item(service, waiting)["id"] in _card_order(at)  # the waiting one keeps its boxes
    assert not at.exception
