"""The History page: runs listed and filtered, a run opened, its checkpoint timeline and
diffs, forks and replays from a checkpoint, export and import of a run."""

import json

from graph.kernel.design import Design
from graph.prompts import default_text
from tests.app.support import button, open_page, replace_rows, texts, wait_status
from ui import moved_tabs

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


def _opened(at) -> str | None:
    """The run the page has open, read from what it shows ("Run `<id>` · question …")."""
    for md in at.markdown:
        if md.value.startswith("Run `"):
            return md.value.split("`")[1]
    return None


def _selected_rows(at) -> list[int]:
    return list(at.session_state["history-table"]["selection"]["rows"])


def _click_row(at, position: int, cell: str | None = None):
    """What a click in the runs table sends: the row's marker, or one of its cells."""
    selection = {"rows": [position], "columns": [], "cells": []}
    if cell:
        selection = {"rows": [], "columns": [], "cells": [(position, cell)]}
    at.session_state["history-table"] = {"selection": selection}
    return at.run()


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
    assert rows[TESLA]["Counts"] == "Steps 2 · Replans 1"  # as plan_execute counts
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
    assert _opened(at) == run_id
    steps = at.table[0].value
    assert list(steps["Agent"]) == ["web_researcher", "synthesizer"]
    assert "Answer to" in texts(at)
    assert at.selectbox(key="history:msg-agent").options  # the messages, filterable
    assert not at.exception


def test_the_timeline_lists_each_checkpoint_and_shows_what_changed(home, services):
    _, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    timeline = next(d.value for d in at.dataframe if "After" in d.value.columns)
    assert list(timeline["After"][:4]) == ["input", "__start__", "planner", "executor"]
    replan = timeline[(timeline["After"] == "executor") & (timeline["Replan flag"] == "yes")].iloc[
        0
    ]
    assert replan["Replan attempts"] == "1: 1"
    assert replan["Last reason"].startswith("Step 1 (data_researcher) produced no usable data")
    assert "Replan attempts" in replan["Changed"]  # in words, as the columns are named

    at.selectbox(key=f"history:diff:{run_id}").set_value(int(replan["#"])).run()
    diff = at.table[-1].value.to_dict("records")
    assert {"Field": "Replan attempts", "Key": "1", "Before": "—", "After": "1"} in diff
    assert {"Field": "Replan flag", "Key": "", "Before": "no", "After": "yes"} in diff
    assert {"Field": "Step status", "Key": "1", "Before": "running", "After": "replanned"} in diff
    assert "Changed by **executor**: before → after" in texts(at)


def test_the_diff_reads_as_words_with_long_values_in_full_and_json_only_on_demand(home, services):
    _, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    timeline = service.timeline(run_id)
    searched = next(p for p in timeline if p["node"] == "web_researcher")
    at.selectbox(key=f"history:diff:{run_id}").set_value(searched["index"]).run()
    rows = at.table[-1].value.to_dict("records")
    result = next(r for r in rows if r["Field"] == "Results")
    assert result["Before"].startswith("No usable results: the query returned no rows.")
    assert result["Before"].endswith("…") and len(result["Before"]) == 120  # cut short
    memory = next(r for r in rows if r["Field"] != "Results")
    assert "updated_at" in memory["After"] and " ago" in memory["After"]  # a time in words
    assert not any(ch in str(v) for r in rows for v in r.values() for ch in '{}"')  # no JSON
    full = next(e for e in at.expander if e.label.startswith("Full text of the"))
    shown = "\n".join(c.value for c in full.code)
    assert "SQL: SELECT date, symbol, price FROM stocks" in shown  # the part the table cut
    raw = next(e for e in at.expander if e.label == "Raw JSON of this change")
    assert json.loads(raw.json[0].value)["step_results"]["before"]["1"].startswith("No usable")


def test_a_fork_with_an_edited_plan_runs_as_a_new_run_with_that_plan_and_its_parent(home, services):
    store, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    point = at.selectbox(key=f"history:fork-point:{run_id}").value
    assert at.radio(key="history:fork-change").value == "plan"
    shown = at.data_editor(key=f"history:change:plan:{point}:table").value
    assert shown["agent"][0] == "data_researcher"  # the plan at that checkpoint
    replace_rows(at, f"history:change:plan:{point}:table", list(NEW_PLAN.values()))
    at.session_state[moved_tabs.drawn_key("history:tab", at.session_state)] = "Fork or replay"
    at.run()
    button(at, "Run on as a new run").click().run()
    new_id = _opened(at)
    assert new_id != run_id
    confirmation = f"Started run {new_id[:8]}: a fork of {run_id[:8]}, with your plan"
    assert any(s.value.startswith(confirmation) for s in at.success)
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
    at.run()  # a redraw (the page redraws itself when the fork ends)
    rows = {r["Run"]: r for r in _runs_table(at).to_dict("records")}
    assert rows[new_id[:8]]["Origin"] == f"fork of {run_id[:8]}"
    assert rows[new_id[:8]]["System"] == "Planner / Executor"
    assert any(s.value.startswith(confirmation) for s in at.success)  # still there
    shown = at.session_state[moved_tabs.drawn_key("history:tab", at.session_state)]
    assert shown == "Run"  # its steps, not the fork form
    assert _opened(at) == new_id and _selected_rows(at) == [0]  # its row, at the top
    _click_row(at, 1)  # the parent: the fork's confirmation goes
    assert _opened(at) == run_id
    assert not any(s.value.startswith(confirmation) for s in at.success)


def test_a_click_on_a_row_or_any_of_its_cells_opens_that_run(home, services):
    store, service = services
    older = _tesla(services)
    newer = service.start(REPORT, Design(enabled_agents=["web_researcher", "synthesizer"]))
    service.wait(newer, timeout=60)
    at = _history()
    assert not [s for s in at.selectbox if s.label == "Open a run"]  # no separate select
    assert _opened(at) == newer and _selected_rows(at) == [0]  # the newest, on a first visit
    _click_row(at, 1)
    assert _opened(at) == older and _selected_rows(at) == [1]
    assert at.query_params["run"] == older  # a link to share
    assert list(at.table[0].value["Agent"]) == ["web_researcher", "synthesizer"]  # its steps
    _click_row(at, 0, cell="Question")  # a click on a cell opens its row
    assert _opened(at) == newer and _selected_rows(at) == [0]
    at.session_state["history-table"] = {"selection": {"rows": [], "columns": [], "cells": []}}
    at.run()  # its row clicked again: unselected
    assert _opened(at) is None and "run" not in at.query_params
    assert any(i.value == "Click a row of the table to open its run." for i in at.info)
    assert not at.tabs and not at.exception


def test_a_filter_that_hides_the_opened_run_says_so_and_can_be_cleared(home, services):
    _, service = services
    older = _tesla(services)
    newer = service.start(REPORT, Design(enabled_agents=["web_researcher", "synthesizer"]))
    service.wait(newer, timeout=60)
    at = _history(older)
    assert _opened(at) == older and _selected_rows(at) == [1]
    at.text_input(key="history:text").input("tesla").run()
    assert _opened(at) == older and _selected_rows(at) == [0]  # its row, where it now is
    at.text_input(key="history:text").input("dot-com").run()
    assert list(_runs_table(at)["Question"]) == [REPORT]
    assert any(
        w.value.startswith(f"The opened run {older[:8]} (“{TESLA}”) is hidden by the filter.")
        for w in at.warning
    )
    assert _opened(at) is None and not at.tabs  # nothing shown that the table omits
    assert _selected_rows(at) == []
    button(at, "Clear the filter").click().run()
    assert at.text_input(key="history:text").value == ""
    assert _opened(at) == older and _selected_rows(at) == [1]
    at.selectbox(key="history:status").set_value("failed").run()
    assert any(i.value == "No run matches." for i in at.info)
    assert any("is hidden by the filter" in w.value for w in at.warning)


def test_a_link_to_a_run_the_store_does_not_hold_says_so(home, services):
    _tesla(services)
    at = _history("0123456789abcdef")
    assert any(i.value.startswith("There is no run 0123456789abcdef") for i in at.info)
    assert _opened(at) is None and _selected_rows(at) == [] and not at.exception


def test_a_plan_that_cannot_run_is_refused_with_the_reason(home, services):
    """Issue #28: a fork's plan was edited as raw JSON, its error at the top of the page.
    Now a table of steps, the error naming the step, under the table."""
    store, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    point = at.selectbox(key=f"history:fork-point:{run_id}").value
    key = f"history:change:plan:{point}:table"
    editor = at.data_editor(key=key).value
    assert list(editor.columns)[:4] == ["step", "agent", "action", "approval"]
    assert list(editor["step"]) == list(range(1, len(editor) + 1))
    at.session_state[key] = {
        "edited_rows": {0: {"action": ""}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert any(e.value.startswith("Step 1 (action): ") for e in at.error), at.error
    button(at, "Run on as a new run").click().run()
    assert len(store.runs()) == 1  # nothing was started
    at.session_state[key] = {
        "edited_rows": {},
        "added_rows": [{"agent": "synthesizer", "action": "Answer in one line"}],
        "deleted_rows": [],
    }
    at.run()
    assert not at.error, [e.value for e in at.error]
    button(at, "Run on as a new run").click().run()
    (new_id,) = [r.id for r in store.runs() if r.parent_run == run_id]
    assert service.wait(new_id, timeout=60).status == "done"
    steps = store.snapshot(new_id)["rows"]
    assert len(steps) == len(editor) + 1
    assert steps[-1]["agent"] == "synthesizer" and steps[-1]["action"] == "Answer in one line"


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
    new_id = _opened(at)
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
    button(at, "Run on from here").click().run()
    new_id = _opened(at)
    assert service.wait(new_id, timeout=60).status == "done"
    assert store.run(new_id).parent_run == run_id
    assert [r["agent"] for r in store.snapshot(new_id)["rows"]] == [
        r["agent"] for r in store.snapshot(run_id)["rows"]
    ]


def test_replay_the_run_answers_every_model_call_from_its_recording(home, services):
    store, service = services
    run_id = _tesla(services)
    at = _history(run_id)
    at.selectbox(key="history:replay-pace").set_value(0.5).run()
    button(at, "Replay the run").click().run()
    new_id = _opened(at)
    assert new_id != run_id
    replayed = service.wait(new_id, timeout=60)
    assert replayed.status == "done", replayed.reason
    assert replayed.parent_run == run_id
    assert replayed.model_label.startswith(f"replay of run {run_id[:8]}")
    assert Design.model_validate(replayed.design).pace_s == 0.5
    assert [r["agent"] for r in store.snapshot(new_id)["rows"]] == [
        r["agent"] for r in store.snapshot(run_id)["rows"]
    ]
    assert any("a replay of" in str(m.value) for m in at.markdown) or any(
        "a replay of" in str(m.value) for m in at.success
    )


def test_an_exported_run_imports_back_as_a_listed_run_with_the_same_steps(home, services):
    store, _ = services
    run_id = _tesla(services)
    exported = json.dumps(store.export_run(run_id))  # what "Export run JSON" downloads
    at = _history(run_id)
    assert [b.label for b in at.get("download_button")] == [
        "Export run JSON",
        "Export trace (OTLP JSON)",
    ]
    at.file_uploader(key="history:import").upload(
        "tesla.json", exported.encode(), "application/json"
    )
    at.run()
    new_id = _opened(at)
    assert new_id != run_id
    assert any(s.value.startswith("Imported tesla.json as run") for s in at.success)
    assert list(_runs_table(at)["Question"]) == [TESLA, TESLA]
    assert store.snapshot(new_id)["rows"] == store.snapshot(run_id)["rows"]
    assert list(at.table[0].value["Agent"]) == ["web_researcher", "synthesizer"]
    assert any("no checkpoints in this app" in i.value for i in at.info)  # view only

    at.file_uploader(key="history:import").clear().upload("junk.json", b'{"format": "x"}')
    at.run()
    assert any(
        "junk.json cannot be imported: Not a Stepwise run export (" in e.value for e in at.error
    )


def test_a_fork_states_the_pace_it_will_use_and_takes_another(home, services):
    """Issue #28: a fork silently inherited the original run's pace."""
    store, service = services
    # a pace of its own (not among the page's choices) and short: the run is waited out
    run_id = service.start(TESLA, Design(pace_s=0.1))
    assert service.wait(run_id, timeout=60).status == "done"
    at = _history(run_id)
    assert at.selectbox(key="history:fork-pace").value == 0.1  # the run's own, said
    assert "this run's pace was 0.1 s per node" in at.selectbox(key="history:fork-pace").help
    at.selectbox(key="history:fork-pace").set_value(0.0).run()
    at.radio(key="history:fork-change").set_value("nothing").run()
    button(at, "Run on from here").click().run()
    new_id = _opened(at)
    assert any("at a pace of as fast as possible" in s.value for s in at.success)
    assert service.wait(new_id, timeout=60).status == "done"
    assert store.run(new_id).design["pace_s"] == 0.0
