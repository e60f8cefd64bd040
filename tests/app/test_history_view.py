"""The History page's data rules, without Streamlit: diffs in words, forkable checkpoints."""

import time

import pytest

from graph.kernel.design import Design
from graph.service.store import RunRecord
from ui.history_open import UNCHANGED, clicked_run, opened_view, table_selection
from ui.history_view import (
    LISTED_COLUMNS,
    changed_columns,
    checkpoint_label,
    diff_rows,
    editable_fields,
    forkable,
    history_rows,
    long_changes,
    prompts_label,
    timeline_rows,
)
from ui.views import view_of

PLAN_EXECUTE, BUS = view_of("plan_execute"), view_of("supervisor_bus")


def test_a_changed_plan_reads_step_by_step_as_agent_and_action():
    before = {"1": {"agent": "data_researcher", "action": "Query the stocks"}}
    after = {
        "1": {"agent": "web_researcher", "action": "Search the news", "approval": True},
        "2": {"agent": "synthesizer", "action": "Answer"},
    }
    assert diff_rows({"plan": {"before": before, "after": after}}) == [
        {
            "Field": "plan",
            "Key": "1",
            "Before": "data_researcher: Query the stocks",
            "After": "web_researcher: Search the news [asks approval]",
        },
        {"Field": "plan", "Key": "2", "Before": "—", "After": "synthesizer: Answer"},
    ]
    assert diff_rows({"agent_query": {"before": None, "after": "Find X"}}) == [
        {"Field": "agent_query", "Key": "", "Before": "—", "After": "Find X"}
    ]


def test_only_checkpoints_between_the_input_and_the_end_can_be_forked():
    timeline = [
        {"index": 0, "node": "input", "input": True, "next": ["__start__"], "fields": {}},
        {"index": 1, "node": "__start__", "input": False, "next": ["planner"], "fields": {}},
        {
            "index": 2,
            "node": "planner",
            "input": False,
            "next": ["executor"],
            "fields": {"current_step": 1},
        },
        {"index": 3, "node": "synthesizer", "input": False, "next": [], "fields": {}},
    ]
    assert [p["index"] for p in forkable(timeline)] == [1, 2]
    # a fork's first checkpoint is the state it was forked with, not an input
    fork = [{**timeline[2], "index": 0, "node": "fork of 1a2b3c4d"}, {**timeline[3], "index": 1}]
    assert [p["index"] for p in forkable(fork)] == [0]
    assert checkpoint_label(timeline[2]) == "#2 after planner · next: executor · step 1"
    assert checkpoint_label(timeline[3]) == "#3 after synthesizer · the end"


def test_a_typed_plan_must_be_json_of_numbered_steps_with_enabled_agents():
    design = Design(enabled_agents=["synthesizer"])
    plan = PLAN_EXECUTE.system.forks.check_fork_change(
        "plan", '{"1": {"agent": "synthesizer", "action": "Answer"}}', design
    )
    assert plan["1"]["agent"] == "synthesizer"
    rows = '[{"step": 1, "agent": "synthesizer", "action": "Answer", "approval": null}, {}]'
    assert PLAN_EXECUTE.system.forks.check_fork_change("plan", rows, design) == {  # a table's rows
        "1": {"agent": "synthesizer", "action": "Answer", "approval": False, "approval_reason": ""}
    }
    for text, message in (
        ("[1, 2]", "Step 1: Input should be a valid dictionary"),
        ('[{"step": 1, "agent": "synthesizer", "action": ""}]', r"Step 1 \(action\): "),
        ('{"steps": "x"}', "does not have the right shape at steps"),
        ('{"2": {"agent": "synthesizer", "action": "A"}}', 'step keys must be "1"'),
        ('{"1": {"agent": "web_researcher", "action": "A"}}', "not available"),
        ("{", "not valid JSON"),
    ):
        with pytest.raises(ValueError, match=message):
            PLAN_EXECUTE.system.forks.check_fork_change("plan", text, design)


def test_a_fork_may_change_only_the_fields_the_system_names():
    with pytest.raises(ValueError, match="cannot change 'registry'"):
        BUS.system.forks.check_fork_change("registry", "{}", Design(system="supervisor_bus"))


def test_prompt_versions_are_named_by_their_labels():
    assert prompts_label({}, {}) == "shipped defaults"
    assert (
        prompts_label({"plan_execute/planner": 3, "plan_execute/executor": 9}, {3: "terse"})
        == "executor: #9, planner: terse"
    )


def test_the_timeline_shows_whatever_fields_the_runs_system_keeps():
    point = {
        "index": 1,
        "node": "supervisor",
        "next": ["researcher"],
        "fields": {"current_step": 2, "outstanding": {"m1": {"to": "researcher"}}},
        "diff": {"outstanding": {"before": {}, "after": {"m1": {"to": "researcher"}}}},
        "messages": ["[supervisor] routing"],
    }
    (row,) = timeline_rows([point], BUS)
    outstanding = BUS.field_label("outstanding")
    assert row[outstanding] == "m1 (to researcher)"  # words, not JSON
    assert row[BUS.field_label("current_step")] == "2"
    assert changed_columns(point, BUS) == [outstanding]
    assert editable_fields(point, BUS.system) == []


def test_times_read_as_clock_and_ago_and_nested_state_as_words_not_json():
    from datetime import datetime

    from ui.history_view import human_time, show_value

    now = datetime(2026, 12, 1, 5, 30, 41).timestamp()
    assert human_time(now - 120, now) == "05:28:41, 2 min ago"
    assert human_time(now - 5, now) == "05:30:36, 5 s ago"
    assert human_time(now - 2 * 86_400, now) == "2026-11-29 05:30:41, 2 d ago"
    # A nested time is read against the clock of the moment it is shown.
    updated = time.time() - 90
    memory = {"plan_execute": {"last_node": "synthesizer", "step": 2, "updated_at": updated}}
    shown = show_value(memory)
    assert shown.startswith("plan_execute (last_node synthesizer, step 2, updated_at ")
    assert shown.endswith(", 1 min ago)") or shown.endswith(", 2 min ago)")
    assert "{" not in shown and str(int(updated)) not in shown


def test_a_long_value_is_cut_short_in_the_table_and_kept_whole_for_the_full_view():
    long_text = "No usable results: " + "the query returned no rows. " * 10
    diff = {
        "step_results": {"before": {}, "after": {"1": long_text}},
        "replan_flag": {"before": False, "after": True},
    }
    rows = diff_rows(diff, PLAN_EXECUTE.field_label)
    assert rows[0]["Field"] == "Results" and rows[0]["Key"] == "1"
    assert len(rows[0]["After"]) == 120 and rows[0]["After"].endswith("…")
    assert rows[1] == {"Field": "Replan flag", "Key": "", "Before": "no", "After": "yes"}
    (full,) = long_changes(diff, PLAN_EXECUTE.field_label)
    assert full["After"] == " ".join(long_text.split()) and full["Before"] == "—"


def test_a_click_is_read_against_the_rows_the_user_saw():
    drawn = ["new", "old"]
    state = {"selection": {"rows": [1], "columns": [], "cells": []}}
    assert clicked_run(state, drawn, [0]) == "old"  # another row
    assert clicked_run(state, drawn, [1]) == UNCHANGED  # the selection the page drew
    cell = {"selection": {"rows": [], "columns": [], "cells": [(0, "Question")]}}
    assert clicked_run(cell, drawn, [1]) == "new"  # a cell opens its row
    cleared = {"selection": {"rows": [], "columns": [], "cells": []}}
    assert clicked_run(cleared, drawn, [0]) is None  # its row clicked again: closed
    assert clicked_run(None, drawn, [0]) == UNCHANGED  # no table drawn last time
    assert table_selection("old", ["x", "old"])["selection"]["rows"] == [1]
    assert table_selection("gone", ["x"])["selection"]["rows"] == []


def test_a_run_the_filter_hides_is_not_shown_and_the_page_says_why():
    hidden = opened_view("abcdef123456", "How did Tesla do?", ["other"], filtered=True)
    assert not hidden.show and hidden.hidden_by_filter
    assert hidden.note.startswith("The opened run abcdef12 (“How did Tesla do?”) is hidden")
    assert opened_view("abcdef123456", "Q", ["abcdef123456"], filtered=True).show
    old = opened_view("abcdef123456", "Q", ["other"], filtered=False)
    assert old.show and "older than the runs listed" in old.note
    assert opened_view("nope", None, [], filtered=False).note.startswith("There is no run nope")
    assert not opened_view(None, None, ["x"], filtered=False).show


def _record(**overrides) -> RunRecord:
    fields = dict(
        id="a" * 32,
        question="Q",
        system="supervisor_bus",
        design={},
        prompt_versions={},
        status="done",
        reason="",
        model_label="offline scripted model",
        created_at=time.time(),
        started_at=None,
        finished_at=None,
        final_answer=None,
        counts={"steps": 1},
        parent_run=None,
        parent_checkpoint=None,
    )
    return RunRecord(**{**fields, **overrides})


def test_the_runs_table_names_each_runs_system_and_where_it_came_from():
    """Issue #28: History had no System and no Experiment/variant column."""
    asked = _record()
    fork = _record(id="b" * 32, system="plan_execute", parent_run="a" * 32)
    replay = _record(id="c" * 32, parent_run="a" * 32, design={"model": {"replay_of": "a" * 32}})
    variant = _record(id="d" * 32, system="gone_system")
    place = {"d" * 32: {"experiment": "two questions", "variant": "short plans"}}
    rows = history_rows([asked, fork, replay, variant], {}, place)
    assert [(r["System"], r["Origin"]) for r in rows] == [
        ("Supervisor + message bus", ""),
        ("Planner / Executor", "fork of aaaaaaaa"),
        ("Supervisor + message bus", "replay of aaaaaaaa"),
        ("gone_system", "short plans in two questions"),  # a system no longer hosted
    ]
    assert sum(LISTED_COLUMNS.values()) <= 770 and {"System", "Origin"} <= set(LISTED_COLUMNS)


def test_the_runs_table_shows_each_runs_counts_in_its_systems_words():
    bus = _record(counts={"steps": 3, "messages": 9})
    plan = _record(id="b" * 32, system="plan_execute", counts={"steps": 2, "replans": 1})
    gone = _record(id="c" * 32, system="gone_system", counts={"laps": 4})
    rows = history_rows([bus, plan, gone], {})
    assert [r["Counts"] for r in rows] == [
        "Requests 3 · Bus messages 9",
        "Steps 2 · Replans 1",
        "Laps 4",  # a system no longer hosted: its counts by their own names
    ]
    assert "Counts" in LISTED_COLUMNS


def test_the_runs_table_duration_leaves_out_the_paces_holds(services):
    """Issue #28: History's durations counted the time a run did no work (a teacher's
    pace, a wait for a person). A paced run on the offline model: the listed duration is
    its wall time less its holds, read from the event log."""
    from ui.history_view import work_seconds

    store, service = services
    run_id = service.start("How did AAPL do in 2008?", Design(pace_s=0.5))
    record = service.wait(run_id, timeout=120)
    assert record.status == "done"
    idle = store.idle_events([run_id])[run_id]
    holds = [e["data"]["paced"]["seconds"] for e in idle if "paced" in (e["data"] or {})]
    assert len(holds) >= 3 and sum(holds) > 1.0
    work = work_seconds(record, idle, now=time.time())
    assert work == pytest.approx(record.duration_s - sum(holds), abs=0.01)
    [row] = history_rows([record], {}, None, {run_id: idle})
    assert row["Duration"] != history_rows([record], {})[0]["Duration"]  # wall time
