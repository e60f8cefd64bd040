"""The History page: runs listed and filtered, a run opened, its checkpoint timeline and
diffs, forks and replays from a checkpoint, export and import of a run."""

import json

from graph.kernel.design import Design
from graph.prompts import default_text
from tests.app.support import button, open_page, texts, wait_status

TESLA = "How did Tesla's stock do in 2008?"
REPORT = "What caused the dot-com crash? Save a report."
NEW_PLAN = {
    "1": {
        "agent": "web_researcher",
        "action": "Search the documents for: the 2008 financial crisis",
    },
    "2": {"agent": "synthesizer", "action": "Answer from the findings."},
}


def _tesla(services) -> str:
    _, service = services
    run_id = service.start(TESLA, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    return run_id


def _history(run_id: str | None = None):
    return open_page("app_pages/history.py", **({"run": run_id} if run_id else {}))


def _runs_table(at):
    return at.dataframe[0].value


def test_without_runs_the_page_says_where_they_come_from(home):
    at = _history()
    assert any("No runs yet" in i.value for i in at.info)


def test_runs_are_listed_with_status_design_prompts_counts_and_filtered(home, services):
    store, service = services
    version = store.save_prompt_version(
        "plan_execute/planner", "terse", default_text("plan_execute/planner") + "\nBe terse.\n"
    )
    store.set_active_prompt("plan_execute/planner", version.id)
    done = service.start(TESLA, Design(prompts={"plan_execute/planner": version.text}))
    service.wait(done, timeout=60)
    waiting = service.start(
        REPORT, Design(enabled_agents=["web_researcher", "report_writer", "synthesizer"])
    )
    wait_status(store, waiting, "waiting")
    at = _history()
    rows = {r["Question"]: r for r in _runs_table(at).to_dict("records")}
    assert rows[TESLA]["Status"] == "done" and rows[REPORT]["Status"] == "waiting"
    assert rows[TESLA]["Agents"] == "all 6 agents"
    assert rows[REPORT]["Agents"] == "web_researcher, report_writer, synthesizer"
    assert (
        rows[TESLA]["Prompts"] == "planner: terse" and rows[REPORT]["Prompts"] == "shipped defaults"
    )
    assert (rows[TESLA]["Steps"], rows[TESLA]["Replans"]) == (2, 1)
    assert rows[TESLA]["Duration"].endswith(" s")

    at.selectbox(key="history:status").set_value("waiting").run()
    assert list(_runs_table(at)["Question"]) == [REPORT]
    at.selectbox(key="history:status").set_value(None).run()
    at.text_input(key="history:text").input("tesla").run()
    assert list(_runs_table(at)["Question"]) == [TESLA]
    at.text_input(key="history:text").input("no such question").run()
    assert any(i.value == "No run matches." for i in at.info)


def test_an_opened_run_shows_its_table_answer_messages_and_a_link_to_the_run_page(home, services):
    run_id = _tesla(services)
    at = _history(run_id)
    assert at.selectbox(key="history:selected").value == run_id
    steps = at.table[0].value
    assert list(steps["Agent"]) == ["web_researcher", "synthesizer"]
    assert "Answer to" in texts(at)
    assert at.selectbox(key="history:msg-agent").options  # the messages, filterable
    assert not at.exception


def test_the_timeline_lists_each_checkpoint_and_shows_what_changed(home, services):
    _, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    timeline = at.dataframe[1].value
    assert list(timeline["After"][:4]) == ["input", "__start__", "planner", "executor"]
    replan = timeline[(timeline["After"] == "executor") & (timeline["Replan flag"] == "yes")].iloc[
        0
    ]
    assert replan["Replan attempts"] == "1: 1"
    assert replan["Last reason"].startswith("Step 1 (data_researcher) produced no usable data")
    assert "replan_attempts" in replan["Changed"]

    at.selectbox(key=f"history:diff:{run_id}").set_value(int(replan["#"])).run()
    diff = at.table[-1].value.to_dict("records")
    assert {"Field": "replan_attempts", "Key": "1", "Before": "—", "After": "1"} in diff
    assert {"Field": "replan_flag", "Key": "", "Before": "False", "After": "True"} in diff
    assert {"Field": "step_status", "Key": "1", "Before": "running", "After": "replanned"} in diff
    assert "Changed by **executor**: before → after" in texts(at)


def test_a_fork_with_an_edited_plan_runs_as_a_new_run_with_that_plan_and_its_parent(home, services):
    store, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    point = at.selectbox(key=f"history:fork-point:{run_id}").value
    assert at.radio(key="history:fork-change").value == "plan"
    shown = json.loads(at.text_area(key=f"history:change:plan:{point}").value)
    assert shown["1"]["agent"] == "data_researcher"  # the plan at that checkpoint
    at.text_area(key=f"history:change:plan:{point}").input(json.dumps(NEW_PLAN)).run()
    button(at, "Run on as a new run").click().run()
    new_id = at.selectbox(key="history:selected").value
    assert new_id != run_id
    assert any(
        s.value.startswith(f"Started run {new_id[:8]}: a fork of {run_id[:8]}, with your plan")
        for s in at.success
    )
    record = service.wait(new_id, timeout=60)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (run_id, point)
    forked = store.snapshot(new_id)["rows"]
    assert [(r["agent"], r["action"]) for r in forked] == [
        (step["agent"], step["action"]) for step in NEW_PLAN.values()
    ]
    assert [r["replans"] for r in forked] == [0, 0]  # no data_researcher step to replan
    parent = store.snapshot(run_id)["rows"]  # untouched: replanned once, its own actions
    assert parent[0]["replans"] == 1 and parent[0]["action"] != NEW_PLAN["1"]["action"]
    at.run()
    rows = {r["Run"]: r for r in _runs_table(at).to_dict("records")}
    assert rows[new_id[:8]]["Parent"] == f"fork of {run_id[:8]}"


def test_a_plan_that_cannot_run_is_refused_with_the_reason(home, services):
    store, _ = services
    run_id = _tesla(services)
    at = _history(run_id)
    point = at.selectbox(key=f"history:fork-point:{run_id}").value
    at.text_area(key=f"history:change:plan:{point}").input(
        '{"1": {"agent": "astrologer", "action": "x"}}'
    ).run()
    assert any(
        "The plan cannot run: step 1 uses agent 'astrologer', which is not available" in e.value
        for e in at.error
    )
    button(at, "Run on as a new run").click().run()
    at.text_area(key=f"history:change:plan:{point}").input('{"1": ').run()
    assert any(e.value.startswith("The plan is not valid JSON") for e in at.error)
    assert len(store.runs()) == 1  # nothing was started


def test_a_fork_with_an_edited_agent_query_reaches_the_agent(home, services):
    store, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    timeline = service.timeline(run_id)
    before_agent = next(p for p in timeline if p["next"] == ["data_researcher"])
    at.selectbox(key=f"history:fork-point:{run_id}").set_value(before_agent["checkpoint_id"]).run()
    at.radio(key="history:fork-change").set_value("agent_query").run()
    assert "data_researcher runs next with this agent query" in texts(at)
    query = "Using the stock database, answer: how did Apple's stock do in 2008?"
    at.text_area(key=f"history:change:agent_query:{before_agent['checkpoint_id']}").input(
        query
    ).run()
    button(at, "Run on as a new run").click().run()
    new_id = at.selectbox(key="history:selected").value
    assert service.wait(new_id, timeout=60).status == "done"
    asked = [
        m["content"]
        for m in store.messages(new_id, step=1, agent="data_researcher")
        if m["name"] == "agent_query"
    ]
    assert asked[0].startswith(query)


def test_replay_from_a_checkpoint_is_a_new_run_going_the_same_way(home, services):
    store, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    at.radio(key="history:fork-change").set_value("nothing").run()
    button(at, "Replay from here").click().run()
    new_id = at.selectbox(key="history:selected").value
    assert service.wait(new_id, timeout=60).status == "done"
    assert store.run(new_id).parent_run == run_id
    assert [r["agent"] for r in store.snapshot(new_id)["rows"]] == [
        r["agent"] for r in store.snapshot(run_id)["rows"]
    ]


def test_an_exported_run_imports_back_as_a_listed_run_with_the_same_steps(home, services):
    store, _ = services
    run_id = _tesla(services)
    exported = json.dumps(store.export_run(run_id))  # what "Export run JSON" downloads
    at = _history(run_id)
    assert [b.label for b in at.get("download_button")] == ["Export run JSON"]
    at.file_uploader(key="history:import").upload(
        "tesla.json", exported.encode(), "application/json"
    )
    at.run()
    new_id = at.selectbox(key="history:selected").value
    assert new_id != run_id
    assert any(s.value.startswith("Imported tesla.json as run") for s in at.success)
    assert list(_runs_table(at)["Question"]) == [TESLA, TESLA]
    assert store.snapshot(new_id)["rows"] == store.snapshot(run_id)["rows"]
    assert list(at.table[0].value["Agent"]) == ["web_researcher", "synthesizer"]
    assert any("no checkpoints in this app" in i.value for i in at.info)  # view only

    at.file_uploader(key="history:import").clear().upload("junk.json", b'{"format": "x"}')
    at.run()
    assert any(
        "junk.json cannot be imported: Not a Stepwise run export." in e.value for e in at.error
    )
