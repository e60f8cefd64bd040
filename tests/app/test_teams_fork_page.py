"""The History page for a hierarchical_teams run: the checkpoints saved inside its teams in
the timeline tab, and a fork whose subtask plan is edited in a table on the fork tab."""

from graph.kernel.design import Design
from tests.app.support import button, open_page, texts, wait_status

QUESTION = (
    "Check that the API is healthy and find reliable news sites about what moves the stock market"
)
DESIGN = Design(system="hierarchical_teams", approvals={"health_checker": "never"})


def _finished_teams_run(services) -> str:
    store, service = services
    run_id = service.start(QUESTION, DESIGN)
    assert wait_status(store, run_id, "done").status == "done"
    return run_id


def _editor_key(at, run_id: str) -> str:
    point = at.selectbox(key=f"history:fork-point:{run_id}").value
    return f"history:change:subtasks:{point}:table"


def _inner_table(run_id: str):
    """The History page opened on ``run_id``: the page, its timeline with the checkpoints
    inside the run's subgraphs, and that table's checkpoint labels."""
    at = open_page("app_pages/history.py", run=run_id)
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "Fork from" in d.value.columns)
    return at, table, list(table["Checkpoint"])


def test_the_timeline_shows_the_checkpoints_inside_each_team(home, services):
    run_id = _finished_teams_run(services)
    at, table, labels = _inner_table(run_id)
    assert "↳ inside search_team: searcher" in labels
    assert "↳ inside request_team: health_checker" in labels
    assert labels[0] == "top graph: input"
    searcher = table[table["Checkpoint"] == "↳ inside search_team: searcher"].iloc[0]
    assert searcher["Subtask"] == "s2" and searcher["Fork from"].startswith("#")
    started = table[table["#"] == searcher["Fork from"][1:]].iloc[0]
    assert started["Next"] == "search_team"  # the top-graph checkpoint that started it
    shown = texts(at)
    assert "Inside the teams" in shown
    assert "cannot be forked (LangGraph forks a run from its top graph)" in shown
    assert "Inside the sub-agents" not in shown


def test_a_teams_run_is_forked_with_its_subtask_plan_edited_in_a_table(home, services):
    store, service = services
    run_id = _finished_teams_run(services)
    at = open_page("app_pages/history.py", run=run_id)
    assert at.radio(key="history:fork-change").value == "subtasks"
    key = _editor_key(at, run_id)
    editor = at.data_editor(key=key).value
    assert list(editor["id"]) == ["s1", "s2"] and list(editor["team"]) == [
        "request_team",
        "search_team",
    ]
    at.session_state[key] = {
        "edited_rows": {1: {"instruction": "Find reliable news sites about copper prices"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert not at.error, [e.value for e in at.error]
    assert "lead_supervisor runs next with this subtask plan" in texts(at)
    button(at, "Run on as a new run").click().run()
    (new_id,) = [r.id for r in store.runs() if r.parent_run == run_id]
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    assert record.parent_run == run_id
    rows = {r["id"]: r for r in store.snapshot(new_id)["rows"]}
    assert rows["s2"]["instruction"] == "Find reliable news sites about copper prices"
    assert "copper+prices" in rows["s2"]["result"]


def test_a_subtask_plan_with_a_cycle_is_refused_on_the_page(home, services):
    store, _ = services
    run_id = _finished_teams_run(services)
    at = open_page("app_pages/history.py", run=run_id)
    key = _editor_key(at, run_id)
    at.session_state[key] = {
        "edited_rows": {1: {"depends_on": "s3"}},
        "added_rows": [
            {
                "team": "search_team",
                "instruction": "More sites",
                "status": "pending",
                "depends_on": "s2",
            }
        ],
        "deleted_rows": [],
    }
    at.run()
    message = "The dependencies form a cycle, so none of them could ever run: s2 → s3 → s2"
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    button(at, "Run on as a new run").click().run()
    assert any(message in e.value for e in at.error)
    assert [r.id for r in store.runs()] == [run_id]  # nothing started


def test_a_plan_execute_runs_inner_checkpoints_are_titled_by_its_sub_agents(home, services):
    """Issue #28: plan_execute's sub-agent checkpoints were titled "Inside the teams"."""
    store, service = services
    run_id = service.start("How did Tesla's stock do in 2008?", Design())
    assert wait_status(store, run_id, "done").status == "done"
    at = open_page("app_pages/history.py", run=run_id)
    assert not at.exception, [e.value for e in at.exception]
    shown = texts(at)
    assert "Inside the sub-agents" in shown and "Inside the teams" not in shown


def test_a_sub_agents_checkpoints_are_read_as_its_own_model_and_tool_turns(home, services):
    """A ReAct sub-agent is a graph its node invokes, which LangGraph cannot find from the
    top graph: read with the top graph's channels, every checkpoint inside it was "its
    input" with the plan's fields, and none had a node after it."""
    store, service = services
    run_id = service.start("How did Tesla's stock do in 2008?", Design())
    assert wait_status(store, run_id, "done").status == "done"
    inner = [p for p in service.inner_checkpoints(run_id) if p["inside"] == "data_researcher"]
    assert [(p["node"], p["next"]) for p in inner] == [
        ("input", ["__start__"]),
        ("__start__", ["model"]),
        ("model", ["tools"]),  # the model asked for the SQL tool
        ("tools", ["model"]),
        ("model", []),  # its answer: the sub-agent ends
    ]
    assert all("plan" not in p["fields"] and "step_results" not in p["fields"] for p in inner)
    _, _, labels = _inner_table(run_id)
    assert "↳ inside data_researcher: model" in labels
    assert "↳ inside data_researcher: tools" in labels
