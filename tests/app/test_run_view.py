"""The Run page's data rules, without Streamlit: step durations, message titles,
decisions and accounting in the step table, the state a paused run will read."""

from graph.kernel.accounting import Usage
from ui.run_times import format_duration, step_durations
from ui.run_view import (
    decision_label,
    decision_records,
    message_title,
    run_mode,
    step_cells,
    usage_cells,
    usage_summary,
)
from ui.view_models import RunFacts
from ui.views import view_of

PLAN_EXECUTE = view_of("plan_execute")


def _state(ts: float, **statuses: str) -> dict:
    rows = [{"step": int(k.removeprefix("s")), "status": v} for k, v in statuses.items()]
    return {"ts": ts, "kind": "state", "data": {"rows": rows}}


def test_a_step_is_timed_from_its_first_run_to_its_end_across_a_replan():
    events = [
        _state(0.0, s1="pending", s2="pending"),
        _state(1.0, s1="running", s2="pending"),
        _state(2.0, s1="replanned", s2="pending"),
        _state(4.0, s1="running", s2="pending"),
        _state(5.5, s1="done", s2="running"),
    ]
    assert step_durations(events, end_ts=7.0) == {1: 4.5, 2: 1.5}


def test_a_step_still_running_when_the_run_ended_counts_up_to_the_end():
    events = [_state(10.0, s1="running")]
    assert step_durations(events, end_ts=12.5) == {1: 2.5}
    assert step_durations(events, end_ts=None) == {}


def test_durations_read_in_seconds_then_minutes():
    assert format_duration(None) == ""
    assert format_duration(1.26) == "1.3 s"
    assert format_duration(75) == "1 min 15 s"


def test_message_titles_say_who_sent_what_to_whom():
    assert (
        message_title(
            {"type": "human", "name": "agent_query", "agent": "web_researcher", "step": 1}
        )
        == "web_researcher's request · what the agent was asked (step 1, web_researcher)"
    )
    assert (
        message_title(
            {
                "type": "ai",
                "name": "data_researcher",
                "agent": "data_researcher",
                "step": 2,
                "tool_calls": [{"name": "run_sql"}],
            }
        )
        == "data_researcher · model reply, calling a tool (step 2, data_researcher)"
    )
    assert (
        message_title({"type": "tool", "name": "run_sql", "agent": "data_researcher", "step": 2})
        == "tool run_sql · result (step 2, data_researcher)"
    )


def test_decision_messages_are_titled_as_decisions_by_a_human_or_the_timeout():
    assert (
        message_title({"type": "human", "name": "human", "agent": "human", "step": 2})
        == "human · decision (step 2)"
    )
    assert (
        message_title({"type": "human", "name": "timeout", "agent": "human", "step": 2})
        == "approval timeout · default decision (step 2)"
    )


def test_decisions_come_from_the_human_nodes_updates_and_read_in_words():
    updates = [
        {"node": "executor", "namespace": "", "data": {"approvals": [{"decision": "x"}]}},
        {
            "node": "human",
            "namespace": "",
            "data": {
                "approvals": [
                    {
                        "kind": "approval",
                        "step": 2,
                        "decision": "reject",
                        "reason": "no",
                        "by": "human",
                    }
                ]
            },
        },
        {
            "node": "human",
            "namespace": "",
            "data": {
                "approvals": [{"kind": "approval", "step": 2, "decision": "skip", "by": "timeout"}]
            },
        },
    ]
    records = decision_records(updates)
    assert [decision_label(r) for r in records] == ["rejected (no)", "timed out, skipped"]
    assert (
        decision_label({"kind": "escalation", "decision": "retry", "by": "human"})
        == "at the cap: retry asked"
    )
    facts = RunFacts(cells=step_cells({1: 2.0}, records, {}))
    snapshot = {
        "rows": [
            {"step": 1, "agent": "a", "action": "x", "status": "done", "replans": 0},
            {"step": 2, "agent": "b", "action": "y", "status": "skipped", "replans": 1},
        ]
    }
    steps = next(p for p in PLAN_EXECUTE.panels(snapshot, facts) if p.key == "steps")
    assert [r["Decision"] for r in steps.rows] == ["", "rejected (no); timed out, skipped"]
    assert steps.rows[0]["Duration"] == "2.0 s"


def test_accounting_cells_say_unknown_for_an_unpriced_model_and_dash_without_calls():
    priced = Usage()
    priced.add(
        {"model": "m", "input_tokens": 1200, "output_tokens": 30, "latency_s": 0.5},
        {"m": (1.0, 2.0)},
    )
    assert usage_cells(priced) == {
        "LLM calls": "1",
        "Tokens in": "1,200",
        "Tokens out": "30",
        "LLM time": "0.50 s",
        "Cost": "$0.0013",
    }
    unpriced = Usage()
    unpriced.add(
        {"model": "local-llama", "input_tokens": 5, "output_tokens": 5, "latency_s": 0.1}, {}
    )
    assert usage_cells(unpriced)["Cost"] == "unknown"
    assert set(usage_cells(None).values()) == {"–"}
    assert "cost unknown (no price for local-llama)" in usage_summary(unpriced, None)
    assert usage_summary(Usage(), None) == "No model call yet."


def test_a_paused_run_shows_the_fields_its_next_node_reads():
    values = {
        "plan": {"1": {"agent": "web_researcher", "action": "Search X"}},
        "current_step": 1,
        "agent_query": "Search X please",
        "last_reason": "",
        "replan_flag": False,
        "replan_attempts": {},
    }
    rows = {name: str(value) for name, value in PLAN_EXECUTE.paused_fields(values)}
    assert rows == {
        "current_step": "1",
        "plan step": "web_researcher: Search X",
        "agent_query": "Search X please",
        "last_reason": "",
        "replan_flag": "False",
        "replan_attempts": "{}",
    }
    assert PLAN_EXECUTE.paused_fields({})[1] == ("plan step", "(no plan yet)")


def test_runs_are_polled_while_live_watched_while_settled_else_left_alone():
    assert [
        run_mode(s) for s in ("queued", "running", "waiting", "paused", "done", "interrupted")
    ] == ["live", "live", "waiting", "paused", "ended", "ended"]


def test_a_step_waiting_for_a_human_is_not_timed_until_it_runs():
    events = [
        _state(0.0, s1="done", s2="waiting"),
        _state(30.0, s1="done", s2="running"),
        _state(31.0, s1="done", s2="done"),
    ]
    assert step_durations(events, end_ts=40.0)[2] == 1.0


def test_pauses_and_waits_are_left_out_of_work_time_and_said_apart():
    from ui.run_times import idle_spans, idle_words, work_time

    events = [
        _state(0.0, s1="running"),
        {"ts": 1.0, "kind": "end", "data": {"status": "paused"}},
        _state(31.0, s1="running"),  # Next pressed 30 s later
        {"ts": 31.5, "kind": "custom", "data": {"paced": {"from": 31.5, "seconds": 2.0}}},
        _state(34.0, s1="done"),
        {"ts": 34.0, "kind": "end", "data": {"status": "waiting"}},
    ]
    spans = idle_spans(events, now=55.0)
    assert spans == [(1.0, 31.0, "paused"), (31.5, 33.5, "paced"), (34.0, 55.0, "waiting")]
    assert work_time(events, 55.0, spans) == 2.0  # 0-1, 31-31.5, 33.5-34
    assert step_durations([e for e in events if e["kind"] == "state"], 55.0, spans) == {1: 2.0}
    assert idle_words(spans) == [
        "paused 30.0 s in step mode",
        "held 2.0 s by the pace",
        "waited 21.0 s for a decision",
    ]
    finished = [*events[:5], {"ts": 34.0, "kind": "end", "data": {"status": "done"}}]
    assert idle_spans(finished, now=99.0)[-1] == (31.5, 33.5, "paced")  # done is not idle


def test_the_work_time_stands_still_during_a_hold_of_the_pace_and_never_falls():
    """Issue #28: a live page read mid-hold counted the hold as work until its end was
    logged (0.8 s, then 0.1 s, then 0.8 s ...): the hold is logged as it starts."""
    from ui.run_times import idle_spans, work_time

    events = [
        _state(0.0, s1="running"),
        _state(0.5, s1="done"),  # half a second of work, then a hold of 2 s from 0.5
        {"ts": 0.5, "kind": "custom", "data": {"pacing": {"from": 0.5, "seconds": 2.0}}},
    ]
    seen = [work_time(events, now, idle_spans(events, now=now)) for now in (0.6, 1.5, 2.4)]
    assert seen == [0.5, 0.5, 0.5]
    held = [
        *events,
        {"ts": 2.5, "kind": "custom", "data": {"paced": {"from": 0.5, "seconds": 2.0}}},
    ]
    after = [work_time(held, now, idle_spans(held, now=now)) for now in (2.5, 3.0)]
    assert after == [0.5, 1.0]  # the hold's end replaces its start: one span, not two
    assert len(idle_spans(held, now=3.0)) == 1


def test_step_mode_reports_no_hold_before_any_node_ran(home, services):
    """Issue #28: a paced step-mode run was "held 1.0 s by the pace" at its first pause,
    before any node ran (the pause's interrupt was taken for a node's update)."""
    from graph.kernel.design import Design

    store, service = services
    run_id = service.start("How did Tesla's stock do in 2008?", Design(pace_s=0.3), step_mode=True)
    record = service.wait(run_id, timeout=30)
    assert record.status == "paused", record.reason
    events = store.events(run_id)
    assert not [e for e in events if e["kind"] == "update" and not e["namespace"]]
    held = [e for e in events if e["kind"] == "custom" and ({"paced", "pacing"} & set(e["data"]))]
    assert held == []


def test_a_step_mode_run_counts_its_work_not_the_time_it_sat_paused(home, services):
    import time

    from graph.kernel.design import Design
    from ui.run_view import load_run_view

    store, service = services
    run_id = service.start("How did Tesla's stock do in 2008?", Design(), step_mode=True)
    # Two pauses as a teacher talks, each longer than any step's work even on a loaded
    # machine (a step took 2.2 s at load 20): a step that counted one would show more.
    pause_s = 3.0
    for _ in range(2):
        assert service.wait(run_id, timeout=60).status == "paused"
        time.sleep(pause_s)
        service.resume(run_id, step_mode=True)
    assert service.wait(run_id, timeout=60).status == "paused"
    service.resume(run_id)
    record = service.wait(run_id, timeout=60)
    assert record.status == "done"
    view = load_run_view(store, run_id)
    assert record.duration_s >= 2 * pause_s
    assert view.work_s < record.duration_s - (2 * pause_s - 0.1)
    assert any(w.startswith("paused") and w.endswith("in step mode") for w in view.idle)
    durations = [c["Duration"] for c in view.facts.cells.values() if c.get("Duration")]
    assert durations and all(float(d.split()[0]) < pause_s for d in durations), durations


def test_a_paused_run_says_what_comes_next_not_running_and_no_plan_yet_not_none(home, services):
    from graph.kernel.design import Design
    from ui.run_view import load_run_view

    store, service = services
    run_id = service.start("How did Tesla's stock do in 2008?", Design(), step_mode=True)
    assert service.wait(run_id, timeout=60).status == "paused"
    (steps, *_) = load_run_view(store, run_id).panels
    assert not steps.rows and steps.empty.startswith("No plan yet: the run is paused before")
    seen = []
    for _ in range(6):  # planner, executor, then the first agent waits to run
        service.resume(run_id, step_mode=True)
        assert service.wait(run_id, timeout=60).status == "paused"
        rows = load_run_view(store, run_id).panels[0].rows
        seen += [r["Status"] for r in rows]
    assert "running" not in seen
    assert any(s.startswith("paused — next: ") for s in seen), seen


def test_header_and_step_table_agree_while_a_follow_up_is_planned(home, services):
    """Issue #15: during a follow-up the header counted the previous turn's steps while
    the table said the Planner was writing the new plan. Watched at every change of the
    page's data (paced at 0.3 s per node so each state is seen), the header's step count
    is the number of rows in the step table."""
    import time

    from graph.kernel.design import Design
    from ui.run_view import load_run_view

    store, service = services
    run_id = service.start("How did Tesla's stock do in 2008?", Design(pace_s=0.3))
    assert service.wait(run_id, timeout=60).status == "done"
    first_turn = len(load_run_view(store, run_id).panels[0].rows)
    service.send_message(run_id, "And what happened to Apple when it launched the iPhone?")
    seen: list[tuple[str, int]] = []
    deadline = time.time() + 60
    while time.time() < deadline:
        view = load_run_view(store, run_id)
        steps = view.panels[0]
        said = next(f for f in view.header if f.endswith("step(s)"))
        if not seen or seen[-1] != (said, len(steps.rows)):
            seen.append((said, len(steps.rows)))
        if view.record.status == "done" and len(seen) >= 2:
            break
        time.sleep(0.05)
    assert first_turn and len(seen) >= 2, seen
    assert all(said == f"{rows} step(s)" for said, rows in seen), seen


def test_a_follow_up_the_run_could_not_take_is_read_from_the_feeds_events():
    """The conversation's "Not sent" lines come from the custom events the page's feed
    already read, not from a second read of every event on each refresh."""
    from ui.run_view import refused_sends

    events = [
        {"kind": "custom", "data": {"kind": "model_call", "step": 1}},
        {
            "kind": "custom",
            "data": {
                "kind": "redirect_refused",
                "note": "Follow-up message: And IBM?",
                "reason": "The run ended first.",
            },
        },
    ]
    assert refused_sends(events) == ["Not sent: “And IBM?”. The run ended first."]
