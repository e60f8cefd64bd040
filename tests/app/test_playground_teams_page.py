"""The node playground on a hierarchical_teams run, on the Prompts page: a checkpoint
inside a team is offered and tried, and its result forks the run from the run's own
checkpoint before that team (LangGraph forks a thread from its top graph), with the
column's text. The offline scripted model, a real run service and store."""

from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.playground import target, tryable_points
from tests.app.support import button, open_page, texts, try_it, wait_status, watched

QUESTION = (
    "Check that the API is healthy and find reliable news sites about what moves the stock market"
)
DESIGN = Design(system="hierarchical_teams", approvals={"health_checker": "never"})
SUPERVISOR = "hierarchical_teams/team_supervisor"
MARK = "Tuned in the playground: choose the searcher first."
SEARCHER = "hierarchical_teams/searcher"
WORKER_MARK = "Tuned in the playground: name three sites."
CLASSIFIER = "guardrail/classifier"


def _at_team_point(services, prompt: str, node: str):
    store, service = services
    store.save_design(DESIGN)
    run_id = service.start(QUESTION, DESIGN)
    assert wait_status(store, run_id, "done").status == "done"
    point = next(p for p in tryable_points(service, run_id) if p["node"] == node)
    at = open_page("app_pages/prompts.py")
    next(s for s in at.selectbox if s.label == "Prompt").set_value(prompt).run()
    assert at.selectbox(key="playground:run").value == run_id
    at.selectbox(key="playground:point").set_value(point["checkpoint_id"]).run()
    try_it(at)
    assert not at.exception, [e.value for e in at.exception]
    return at, run_id, point["checkpoint_id"]


def test_a_team_supervisors_result_forks_from_the_checkpoint_before_its_team(home, services):
    store, service = services
    at, run_id, checkpoint = _at_team_point(services, SUPERVISOR, "search_team:supervisor")
    assert any(m.value.startswith("**search_team:supervisor**") for m in at.markdown)
    assert any(
        "next_worker" in list(t.value["field"]) for t in at.table if "field" in t.value.columns
    )
    at.text_area(key=f"prompts:editor:{SUPERVISOR}").input(
        MARK + "\n" + default_text(SUPERVISOR)
    ).run()
    at.multiselect(key=f"playground:texts:{SUPERVISOR}:True").set_value(["editor"]).run()
    try_it(at)
    button(at, "Fork from here with this prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    new_id = watched(at).value
    assert f"a fork of {run_id[:8]} from the checkpoint before search_team," in texts(at)
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    before_team = target(service, run_id, checkpoint).fork_from
    assert (record.parent_run, record.parent_checkpoint) == (run_id, before_team)
    assert next(p for p in service.timeline(run_id) if p["checkpoint_id"] == before_team)[
        "next"
    ] == ["search_team"]
    assert store.prompt_version(record.prompt_versions[SUPERVISOR]).text.startswith(MARK)


def test_a_workers_result_forks_with_its_text_from_the_checkpoint_before_its_team(home, services):
    store, service = services
    at, run_id, checkpoint = _at_team_point(services, SEARCHER, "search_team:searcher")
    assert any("find_news_sites" in str(d.value) for d in at.dataframe)
    at.text_area(key=f"prompts:editor:{SEARCHER}").input(
        WORKER_MARK + "\n" + default_text(SEARCHER)
    ).run()
    at.multiselect(key=f"playground:texts:{SEARCHER}:True").set_value(["editor"]).run()
    try_it(at)
    found = button(at, "Fork from here with this prompt")
    assert not found.disabled, found.help
    found.click().run()
    assert not at.exception, [e.value for e in at.exception]
    new_id = watched(at).value
    assert f"a fork of {run_id[:8]} from the checkpoint before search_team," in texts(at)
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    before_team = target(service, run_id, checkpoint).fork_from
    assert (record.parent_run, record.parent_checkpoint) == (run_id, before_team)
    assert store.prompt_version(record.prompt_versions[SEARCHER]).text.startswith(WORKER_MARK)
    asked = [
        e["data"]["llm_call"]
        for e in store.events(new_id, kinds=("custom",))
        if (e.get("data") or {}).get("llm_call", {}).get("node") == "searcher"
    ]
    assert asked and WORKER_MARK in str(asked[0]["request"]["messages"])


def test_a_guardrail_classifier_result_can_be_forked(home, services):
    store, service = services
    design = DESIGN.model_copy(update={"guardrail": True, "guardrail_classifier": True})
    store.save_design(design)
    run_id = service.start(QUESTION, design)
    assert wait_status(store, run_id, "done").status == "done"
    at = open_page("app_pages/prompts.py")
    next(s for s in at.selectbox if s.label == "Prompt").set_value(CLASSIFIER).run()
    assert at.selectbox(key="playground:run").value == run_id
    point = next(p for p in tryable_points(service, run_id) if p["node"] == "guardrail")
    at.selectbox(key="playground:point").set_value(point["checkpoint_id"]).run()
    try_it(at)
    assert not at.exception, [e.value for e in at.exception]
    found = button(at, "Fork from here with this prompt")
    assert not found.disabled, found.help


def test_try_a_node_inside_a_team_on_history_opens_the_playground_at_that_checkpoint(
    home, services
):
    store, service = services
    store.save_design(DESIGN)
    run_id = service.start(QUESTION, DESIGN)
    assert wait_status(store, run_id, "done").status == "done"
    point = next(p for p in tryable_points(service, run_id) if p["node"] == "search_team:searcher")
    at = open_page("app_pages/history.py", run=run_id)
    at.selectbox(key=f"history:inner-try:{run_id}").set_value(point["checkpoint_id"]).run()
    button(at, "Try search_team:searcher with another prompt").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="playground:point").value == point["checkpoint_id"]
    prompt = next(s for s in at.selectbox if s.label == "Prompt").value
    assert prompt == "hierarchical_teams/searcher"


def test_the_http_gate_inside_a_team_greys_its_button_and_says_why(home, services):
    store, service = services
    store.save_design(DESIGN)
    run_id = service.start(QUESTION, DESIGN)
    assert wait_status(store, run_id, "done").status == "done"
    gate = next(
        p for p in service.timeline(run_id, inner=True) if p["inside"] and p["next"] == ["call_api"]
    )
    at = open_page("app_pages/history.py", run=run_id)
    at.selectbox(key=f"history:inner-try:{run_id}").set_value(gate["checkpoint_id"]).run()
    found = button(at, "Try request_team:call_api with another prompt")
    assert found.disabled and "does not ask a model" in found.help
