"""hierarchical_teams in the app: chosen on the Design page (teams grouped, the graph drawn
with team clusters), run and watched on the Run page (subtasks, plans, team steps,
the approval card before an HTTP call, the Edit request control), shown on History."""

from graph.hierarchical_teams.agents import AGENTS
from graph.kernel.design import Design
from tests.app.support import button, graph_dots, open_page, texts, wait_status

SYSTEM = "hierarchical_teams"
QUESTION = (
    "Check that the API is healthy and find reliable news sites about what moves the stock market"
)


def _start(at, question: str) -> str:
    at.text_area(key="run:question").input(question).run()
    button(at, "Run").click().run()
    return at.query_params["run"]


def test_choosing_teams_groups_workers_by_team_and_draws_team_clusters(home, services):
    store, _ = services
    at = open_page()
    at.radio(key="design:system").set_value(SYSTEM).run()
    assert not at.exception, [e.value for e in at.exception]
    saved = store.load_design()
    assert saved.system == SYSTEM and saved.enabled_agents == list(AGENTS)
    assert [c.label for c in at.checkbox if (c.key or "").startswith("agent:")] == [
        "health_checker",
        "site_requester",
        "searcher",
        "url_builder",
    ]
    shown = texts(at)
    assert "**request_team** · a team that checks the API's health" in shown
    assert "**search_team** · a team that finds reliable news sites" in shown
    assert "lead supervisor and each team's supervisor are always on" in shown
    dot = graph_dots(at)[0]
    assert "subgraph cluster_request_team" in dot and "subgraph cluster_search_team" in dot
    assert "request_team__call_api" in dot
    # side-effecting workers ask by default; the bus-only timeout is not offered
    assert at.selectbox(key="approval:health_checker").value == "always"
    assert at.selectbox(key="approval:searcher").value == "planner"
    assert "Request timeout, seconds" not in [n.label for n in at.number_input]
    # what a timed-out approval does is said in this system's terms, not the Planner's
    assert at.radio(key="timeout_action:hierarchical_teams").options == [
        "reject the call (it is not sent; its subtask fails)",
        "skip the step",
    ]

    at.checkbox(key="agent:health_checker").uncheck()
    at.checkbox(key="agent:site_requester").uncheck().run()
    assert store.load_design().enabled_agents == ["searcher", "url_builder"]
    assert "cluster_request_team" not in graph_dots(at)[0]
    assert any("request_team has no worker" in w.value for w in at.warning)


def test_a_teams_run_waits_for_the_http_approval_on_the_run_page_then_shows_its_subtasks(
    home, services
):
    store, _ = services
    store.save_design(Design(system=SYSTEM))
    at = open_page("app_pages/run.py")
    assert [b.label for b in at.button][0].startswith("Check that the API is healthy")
    run_id = _start(at, QUESTION)
    wait_status(store, run_id, "waiting")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at)
    assert "approval before the HTTP call is sent" in shown
    assert any(
        c.value.startswith("GET http://127.0.0.1:") and c.value.endswith("/health") for c in at.code
    )
    subtasks = next(
        t.value for t in at.table if "Depends on" in t.value.columns and "Result" in t.value.columns
    )
    assert list(subtasks.columns) == [
        "Id",
        "Team",
        "Instruction",
        "Status",
        "Depends on",
        "Result",
        "Time",
    ]
    assert list(subtasks["Id"]) == ["s1", "s2"]
    assert "delegated" in subtasks["Status"].iloc[0]
    assert at.text_area(key="run:edit-text").value == QUESTION  # the Edit request control
    assert button(at, "Edit request")

    button(at, "Approve", "run:approval").click().run()
    wait_status(store, run_id, "done")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    subtasks = next(
        t.value for t in at.table if "Depends on" in t.value.columns and "Result" in t.value.columns
    )
    assert all("done" in s for s in subtasks["Status"])
    headers = [h.value for h in at.subheader]
    assert "Subtasks" in headers and "Answer" in headers
    # beside the graph only the subtasks; the answer below them; the other parts under the
    # "More about this run" tab, folded
    folded = [e.label.split(" (")[0] for e in at.expander]
    for part in ("Plans", "Lead supervisor's dispatches", "Inside the teams", "Approvals given"):
        assert part in folded
    assert "Steps" not in headers and "Plan history" not in headers
    assert "site:reuters.com+what+moves+the+stock+market" in texts(at)  # the answer
    # ended: the edit control stays in its place (the page does not move), greyed
    (edit,) = [t for t in at.text_area if t.key == "run:edit-text"]
    assert edit.disabled and edit.label.startswith("The run has ended")


def test_editing_the_request_from_the_run_page_replans_the_waiting_run(home, services):
    store, _ = services
    store.save_design(Design(system=SYSTEM, approvals={"health_checker": "never"}))
    at = open_page("app_pages/run.py")
    run_id = _start(
        at,
        "Check that the API is healthy, find reliable news sites about "
        "interest rates and send their URLs to the API",
    )
    wait_status(store, run_id, "waiting")  # site_requester asks before it sends
    at.run()
    at.text_area(key="run:edit-text").input(
        "Check that the API is healthy and find reliable news sites about copper prices"
    )
    button(at, "Edit request").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Request edited" in texts(at)
    wait_status(store, run_id, "done")
    at.run()
    rows = {r["id"]: r for r in store.snapshot(run_id)["rows"]}
    assert rows["s3"]["status"] == "cancelled" and rows["s4"]["status"] == "done"
    shown = texts(at)
    assert any(
        e.label == "Plan 2 — replan after the request was edited (revision 1)" for e in at.expander
    )
    assert "cancelled s3" in shown and "added s4" in shown


def test_an_unchanged_edit_is_refused_with_a_message(home, services):
    store, _ = services
    store.save_design(Design(system=SYSTEM))
    at = open_page("app_pages/run.py")
    run_id = _start(at, "Check that the API is healthy")
    wait_status(store, run_id, "waiting")
    at.run()
    button(at, "Edit request").click().run()
    assert any("unchanged" in e.value for e in at.error)
    assert store.run(run_id).status == "waiting"


def test_the_history_page_shows_a_finished_teams_run_with_its_subtasks(home, services):
    store, service = services
    run_id = service.start("Find reliable news sites about copper prices", Design(system=SYSTEM))
    wait_status(store, run_id, "done")
    at = open_page("app_pages/history.py", run=run_id)
    assert not at.exception, [e.value for e in at.exception]
    headers = [h.value for h in at.subheader]
    assert "Subtasks" in headers and "Steps" not in headers
    subtasks = next(
        t.value for t in at.table if "Depends on" in t.value.columns and "Result" in t.value.columns
    )
    assert list(subtasks["Team"]) == ["search_team"]


def test_the_prompts_page_lists_and_previews_the_teams_prompts(home, services):
    store, _ = services
    store.save_design(Design(system=SYSTEM))
    at = open_page("app_pages/prompts.py")
    assert not at.exception, [e.value for e in at.exception]
    options = [o.split(" — ")[0] for o in at.selectbox[0].options]
    for name in (
        "plan",
        "replan",
        "route",
        "team_supervisor",
        "worker_task",
        "health_checker",
        "site_requester",
        "searcher",
        "url_builder",
        "repair",
    ):
        assert name in options
    preview = "\n".join(str(c.value) for c in at.code)
    assert "Break the user's request into subtasks" in preview  # the plan prompt, filled
    assert "- request_team: checks the API's health" in preview
