"""The Run page's trace (ui/trace_view.py): a run's messages grouped turn → step → node,
each model call and tool call with the latency and tokens its run logged.

Real runs throughout: the run service's worker threads, the offline scripted model, a
real SQLite store; the figures are checked against the run's own llm_call and
tool_call events, never against numbers written here.
"""

from __future__ import annotations

import re

from graph.kernel.accounting import usage_by_step
from graph.kernel.design import Design
from graph.settings import Settings
from tests.unit.conftest import wait_for
from ui.trace_builder import TraceBuilder, build_trace
from ui.trace_view import filter_trace, format_ms

CHART_QUESTION = (
    "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
)
BUS_QUESTION = "What caused the dot-com crash?"
TEAMS_QUESTION = (
    "Check that the API is healthy and find reliable news sites about what moves the stock market"
)


def _events(store, run_id):
    return store.events(run_id, kinds=("update", "custom"))


def _recorded(events):
    """The run's own figures: model calls by reply id, tool runs by tool call id."""
    calls = {
        e["data"]["llm_call"]["message_id"]: e["data"]["llm_call"]
        for e in events
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    }
    tools = {
        e["data"]["tool_call"]["tool_call_id"]: e["data"]["tool_call"]
        for e in events
        if isinstance(e["data"], dict) and "tool_call" in e["data"]
    }
    return calls, tools


def _finished(service, question, design):
    run_id = service.start(question, design)
    assert service.wait(run_id, timeout=90).status == "done"
    return run_id


def _assert_figures_are_the_recorded_ones(trace, events):
    """Every model call carries its own logged latency and tokens; every tool call its
    logged latency; the totals are the run's (as the step table counts them)."""
    calls, tools = _recorded(events)
    models = [i for i in trace.items if i.kind == "model"]
    assert models and len(models) == len(calls)
    for item in models:
        call = calls[item.raw["message"]["id"]]
        assert item.latency_ms == round(call["latency_s"] * 1000, 2)
        assert item.tokens == call["input_tokens"] + call["output_tokens"]
    for item in (i for i in trace.items if i.kind == "tool"):
        timing = tools.get(item.raw["message"]["tool_call_id"])
        if timing is not None:
            assert item.latency_ms == round(timing["latency_s"] * 1000, 2)
        else:
            assert item.latency_ms is None  # nothing logged: shown as "—", never guessed
    _, total = usage_by_step([e for e in events if e["kind"] == "custom"], Settings().prices)
    assert sum(i.tokens for i in models) == total.input_tokens + total.output_tokens
    assert sum(s.model_calls for s in trace.steps) == total.calls


def test_a_plan_execute_run_is_grouped_step_then_node_in_the_order_it_ran(service, store):
    run_id = _finished(service, CHART_QUESTION, Design())
    events = _events(store, run_id)
    trace = build_trace(events)

    assert [s.step for s in trace.steps] == [1, 2, 3, 4]
    assert [n.agent for n in trace.steps[0].nodes] == [
        "planner",
        "executor",
        "data_researcher",
        "executor",
    ]
    researcher = trace.steps[0].nodes[2]
    assert [i.kind for i in researcher.items] == ["input", "model", "tool", "model"]
    asks, result = researcher.items[1], researcher.items[2]
    assert asks.tool_calls[0]["name"] == "run_sql"
    assert result.tool_calls == asks.tool_calls  # the result shows the call it answers
    assert result.text.startswith("SQL: ")
    assert [n.agent for n in trace.steps[2].nodes] == [
        "chart_generator",
        "chart_summarizer",
        "executor",
    ]
    _assert_figures_are_the_recorded_ones(trace, events)
    assert all(i.latency_ms is not None for i in trace.items if i.kind == "tool")
    # every message of the run is in the trace, once, in the order the run made them
    assert [i.raw["message"] for i in trace.items] == store.messages(run_id)
    third = trace.steps[2]
    assert third.label == (
        "Step 3 · chart_generator, chart_summarizer, executor · 5 model calls · "
        f"2 tool calls · {format_ms(third.latency_ms)} · {third.tokens:,} tokens"
    )
    assert third.latency_ms == sum(i.latency_ms for i in third.items if i.is_call)


def test_a_bus_run_is_grouped_by_the_steps_its_supervisor_dispatched(service, store):
    run_id = _finished(
        service, BUS_QUESTION, Design(system="supervisor_bus", approvals={"writer": "never"})
    )
    events = _events(store, run_id)
    trace = build_trace(events)

    assert [s.step for s in trace.steps] == [1, 2, 3, 4]
    assert [[n.agent for n in s.nodes] for s in trace.steps] == [
        ["supervisor", "researcher"],
        ["supervisor", "writer"],
        ["supervisor", "reviewer"],
        ["supervisor"],
    ]
    tools = [i.title for i in trace.steps[1].items if i.kind == "tool"]
    assert tools == ["tool call · format_output", "tool call · write_draft"]
    _assert_figures_are_the_recorded_ones(trace, events)
    # the bus's tool results carry no message id: their keys still tell them apart
    keys = [i.key for i in trace.items]
    assert len(keys) == len(set(keys))


def test_a_teams_run_shows_the_inner_messages_of_its_teams_with_their_figures(service, store):
    run_id = _finished(
        service,
        TEAMS_QUESTION,
        Design(system="hierarchical_teams", approvals={"health_checker": "never"}),
    )
    events = _events(store, run_id)
    trace = build_trace(events)

    first, *steps = trace.steps
    assert first.step == 0 and first.label.startswith(
        "Before step 1 · lead_supervisor · 2 model calls"
    )
    assert [[n.agent for n in s.nodes] for s in steps] == [
        ["request_team", "health_checker", "request_team"],
        ["search_team", "searcher", "search_team", "url_builder", "search_team"],
    ]
    _assert_figures_are_the_recorded_ones(trace, events)
    # the HTTP call is made by a node of the team, not a timed tool: no figure, not a guess
    (http,) = [i for i in trace.items if i.title == "tool call · http_get"]
    assert http.latency_ms is None and http.tokens is None
    assert "—" in format_ms(http.latency_ms)


def test_a_team_waiting_inside_shows_messages_the_top_level_has_not_received(service, store):
    """A team that waits for the HTTP approval has not returned to the top level: its
    messages are only in the namespaced updates, which the flat message list drops."""
    run_id = service.start(TEAMS_QUESTION, Design(system="hierarchical_teams"))
    assert service.wait(run_id, timeout=90).status == "waiting"
    trace = build_trace(_events(store, run_id))

    titles = [i.title for s in trace.steps for i in s.items]
    assert "model call · health_checker · asks for 1 tool call" in titles
    assert "what health_checker was asked by its team" in titles
    shown = {i.raw["message"].get("content") for i in trace.items}
    kept = {m.get("content") for m in store.messages(run_id)}
    assert kept < shown  # everything the flat list had, and the team's own messages
    _assert_figures_are_the_recorded_ones(trace, _events(store, run_id))


def test_a_follow_up_starts_a_new_turn_whose_steps_count_from_one_again(service, store):
    run_id = _finished(
        service,
        "What caused the dot-com crash and how much did Amazon's price fall from 2000 to 2001?",
        Design(),
    )
    service.send_message(run_id, "And how did Apple do in 2008?")
    wait_for(
        lambda: (
            len(store.events(run_id, kinds=("end",))) == 2 and store.run(run_id).status == "done"
        ),
        what="the follow-up's turn to end",
    )
    events = _events(store, run_id)
    trace = build_trace(events)

    where = [(s.turn, s.step) for s in trace.steps]
    assert where == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2)]
    assert [s.label.split(" · ")[:2] for s in trace.steps][3] == ["Turn 2", "Step 1"]
    assert len({s.key for s in trace.steps}) == len(trace.steps)  # each its own expander
    _assert_figures_are_the_recorded_ones(trace, events)
    # the Step filter keeps step 1 of both turns
    assert [(s.turn, s.step) for s in filter_trace(trace, 1, None).steps] == [(1, 1), (2, 1)]


def test_the_filters_narrow_the_trace_to_one_step_and_one_agent(service, store):
    run_id = _finished(service, CHART_QUESTION, Design())
    trace = build_trace(_events(store, run_id))
    steps, agents = trace.filters()
    assert steps == [1, 2, 3, 4]
    assert {"planner", "executor", "data_researcher", "chart_generator"} <= set(agents)

    narrowed = filter_trace(trace, 3, "chart_generator")
    assert [(s.step, [n.agent for n in s.nodes]) for s in narrowed.steps] == [
        (3, ["chart_generator"])
    ]
    assert narrowed.steps[0].label.startswith("Step 3 · chart_generator · 2 model calls")
    assert filter_trace(trace, None, "synthesizer").steps[0].step == 4
    assert not filter_trace(trace, 1, "synthesizer").steps


def test_a_run_logged_before_calls_named_their_replies_shows_no_latency_not_a_guess(service, store):
    """The events of a run as an older version logged them: model calls without the id
    of their reply, no tool timings. Tokens still come from the messages themselves."""
    run_id = _finished(service, CHART_QUESTION, Design())
    older = []
    for event in _events(store, run_id):
        data = event["data"]
        if isinstance(data, dict) and "tool_call" in data:
            continue
        if isinstance(data, dict) and "llm_call" in data:
            call = {k: v for k, v in data["llm_call"].items() if k != "message_id"}
            event = {**event, "data": {"llm_call": call}}
        older.append(event)
    trace = build_trace(older)

    calls = [i for i in trace.items if i.is_call]
    assert calls and all(i.latency_ms is None for i in calls)
    assert all(i.tokens for i in calls if i.kind == "model")  # from the message's usage
    assert len([i for i in calls if i.kind == "model"]) == 14  # no call counted twice
    assert re.search(r"· — · [\d,]+ tokens$", trace.steps[0].label)


def test_a_call_whose_reply_was_not_kept_still_counts_in_its_step(service, store):
    """A model call the state kept no message of (a repaired or retried reply) is shown
    with its figures, so the trace adds up to the run's usage."""
    run_id = _finished(service, CHART_QUESTION, Design())
    events = _events(store, run_id)
    dropped = next(
        m["id"] for m in store.messages(run_id) if m["agent"] == "synthesizer" and m["type"] == "ai"
    )
    without = []
    for event in events:
        data = event["data"]
        if event["kind"] == "update" and isinstance(data, dict) and data.get("messages"):
            data = {**data, "messages": [m for m in data["messages"] if m.get("id") != dropped]}
            event = {**event, "data": data}
        without.append(event)
    trace = build_trace(without)

    (unkept,) = [i for i in trace.items if i.title.endswith("reply not kept")]
    calls, _ = _recorded(events)
    assert unkept.latency_ms == round(calls[dropped]["latency_s"] * 1000, 2)
    assert trace.steps[-1].step == 4 and unkept in trace.steps[-1].items
    _, total = usage_by_step([e for e in events if e["kind"] == "custom"], Settings().prices)
    assert sum(s.model_calls for s in trace.steps) == total.calls


def _shape(trace) -> list:
    """All a trace shows, as plain data."""
    return [
        (
            s.turn,
            s.step,
            s.turns_in_run,
            s.label,
            [
                (
                    n.agent,
                    [
                        (i.kind, i.title, i.text, i.key, i.tool_calls, i.latency_ms, i.tokens)
                        + (i.tokens_in, i.tokens_out, sorted(i.raw))
                        for i in n.items
                    ],
                )
                for n in s.nodes
            ],
        )
        for s in trace.steps
    ]


def test_a_trace_built_up_event_by_event_is_the_trace_built_at_once(service, store):
    """The Run page builds a live run's trace from each refresh's new events
    (``TraceBuilder``): after every event it equals the trace built from the whole log so
    far, for a plan, a team waiting inside (inner messages only) and a follow-up."""
    runs = [_finished(service, CHART_QUESTION, Design())]
    waiting = service.start(TEAMS_QUESTION, Design(system="hierarchical_teams"))
    assert service.wait(waiting, timeout=90).status == "waiting"
    runs.append(waiting)
    follow_up = _finished(
        service, BUS_QUESTION, Design(system="supervisor_bus", approvals={"writer": "never"})
    )
    service.send_message(follow_up, "And how did Apple do in 2008?")
    wait_for(
        lambda: (
            len(store.events(follow_up, kinds=("end",))) == 2
            and store.run(follow_up).status == "done"
        ),
        what="the follow-up's turn to end",
    )
    runs.append(follow_up)
    for run_id in runs:
        events = store.events(run_id)  # every kind, as the page's feed holds them
        builder = TraceBuilder()
        for k, event in enumerate(events, start=1):
            builder.add([event])
            assert _shape(builder.trace()) == _shape(build_trace(events[:k])), (run_id, k)
        assert builder.trace().items  # and the runs did show messages
    assert {s.turn for s in build_trace(store.events(follow_up)).steps} == {1, 2}


def test_an_item_is_made_again_only_when_a_figure_for_it_arrives(store):
    """A refresh reuses the items already built; a reply whose model call is logged after
    it, or a tool result whose run is, gets its figures then."""
    reply = {
        "id": "m1",
        "type": "ai",
        "name": "executor",
        "content": "go",
        "step": 1,
        "agent": "executor",
        "tool_calls": [{"id": "t1", "name": "run_sql", "args": {}}],
    }
    result = {
        "id": "m2",
        "type": "tool",
        "name": "run_sql",
        "content": "rows",
        "tool_call_id": "t1",
        "step": 1,
        "agent": "executor",
    }
    call = {"message_id": "m1", "latency_s": 0.25, "input_tokens": 3, "output_tokens": 4}
    builder = TraceBuilder().add(
        [
            {
                "seq": 1,
                "kind": "update",
                "node": "executor",
                "step": 1,
                "data": {"messages": [reply, result]},
            }
        ]
    )
    first, tool = builder.trace().items
    assert first.latency_ms is None and tool.latency_ms is None
    builder.add([{"seq": 2, "kind": "state", "node": "", "step": 1, "data": {"rows": []}}])
    again, tool_again = builder.trace().items
    assert again is first and tool_again is tool  # nothing new for them: not made again
    builder.add([{"seq": 3, "kind": "custom", "node": "", "step": 1, "data": {"llm_call": call}}])
    timed, same_tool = builder.trace().items
    assert timed is not first and (timed.latency_ms, timed.tokens) == (250.0, 7)
    assert same_tool is tool
    builder.add(
        [
            {
                "seq": 4,
                "kind": "custom",
                "node": "",
                "step": 1,
                "data": {"tool_call": {"tool_call_id": "t1", "latency_s": 0.5}},
            }
        ]
    )
    _, timed_tool = builder.trace().items
    assert timed_tool is not tool and timed_tool.latency_ms == 500.0
    assert timed_tool.tool_calls == [{"name": "run_sql", "args": {}}]


def _said(mid: str, agent: str, step: int, kind: str = "ai") -> dict:
    return {"id": mid, "type": kind, "name": agent, "content": mid, "step": step, "agent": agent}


def test_a_trace_given_out_stays_as_it_was_and_an_event_that_changes_nothing_gives_it_back():
    """The builder keeps the top-level messages' layout and adds to it; a trace it gave
    out (a page may still be drawing it) is not changed by what comes later, an event
    the trace does not show (a state, a pause) gives the same trace back, and a step
    nothing new reached is given again as it was."""
    events = [
        {
            "seq": 1,
            "kind": "update",
            "node": "executor",
            "step": 1,
            "data": {"messages": [_said("m1", "executor", 1)]},
        },
        {"seq": 2, "kind": "state", "node": "", "step": 1, "data": {"current_step": 1}},
        {"seq": 3, "kind": "custom", "node": "", "step": 1, "data": {"paced": {"seconds": 0}}},
        {
            "seq": 4,
            "kind": "update",
            "node": "executor",
            "step": 1,
            "data": {"messages": [_said("m1", "executor", 1), _said("m2", "executor", 1)]},
        },
        {
            "seq": 5,
            "kind": "update",
            "node": "model",
            "namespace": "web_researcher:x",
            "step": 2,
            "data": {"messages": [_said("m3", "web_researcher", 2)]},
        },
        {
            "seq": 6,
            "kind": "update",
            "node": "web_researcher",
            "step": 2,
            "data": {
                "messages": [_said("m3", "web_researcher", 2), _said("m4", "web_researcher", 2)]
            },
        },
    ]
    builder = TraceBuilder().add(events[:1])
    first = builder.trace()
    shown = _shape(first)
    builder.add(events[1:3])
    assert builder.trace() is first
    given = [first]
    for k in range(3, len(events)):
        builder.add([events[k]])
        given.append(builder.trace())
        assert _shape(given[-1]) == _shape(build_trace(events[: k + 1])), k
    assert _shape(first) == shown  # not changed by the three updates after it
    assert [i.key for i in given[1].items] == ["m1", "m2"]
    assert [i.key for i in given[2].items] == ["m1", "m2", "m3"]  # inner, not yet at the top
    assert [i.key for i in given[3].items] == ["m1", "m2", "m3", "m4"]  # m3 once
    assert given[3].items[0] is first.items[0]  # its item kept, not made again
    # step 1, unchanged since m2: the same step, its label made once
    assert given[3].steps[0] is given[2].steps[0] is given[1].steps[0]
    assert given[3].steps[1] is not given[2].steps[1]  # step 2 got m4
