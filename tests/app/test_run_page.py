"""The Run page: start a run, find it again, watch its steps, read the answer, stop it."""

import re

import pytest

from graph.kernel.design import Design
from graph.settings import get_settings
from tests.app.support import (
    button,
    graph_dots,
    killed_mid_run,
    open_page,
    texts,
    wait_status,
    watched,
)

REPORT = "What caused the dot-com crash? Save a report."
CHART_QUESTION = (
    "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
)
TESLA = "How did Tesla's stock do in 2008?"


def _plain(text: str) -> str:
    """A table cell without its colour markup (``:green[done]`` -> ``done``)."""
    return re.sub(r":\w+\[\**(.*?)\**\]", r"\1", text)


def _button(at, label):
    return next(b for b in at.button if b.label == label)


def _start(at, question: str):
    at.text_area(key="run:question").input(question).run()
    _button(at, "Run").click().run()
    return at.query_params["run"]


def test_without_runs_the_page_invites_an_example(home):
    at = open_page("app_pages/run.py")
    assert "No runs yet" in texts(at)
    assert [b.label for b in at.button][:4] == [
        CHART_QUESTION,
        "What happened to Apple when it launched the iPhone, and how did its stock price change in 2007?",
        TESLA,
        "What caused the dot-com crash and how much did Amazon's price fall from 2000 to 2001?",
    ]


def test_an_example_button_fills_the_question(home):
    at = open_page("app_pages/run.py")
    _button(at, TESLA).click().run()
    assert at.text_area(key="run:question").value == TESLA


def test_a_run_shows_its_steps_answer_citations_chart_and_graph(home, services):
    _, service = services
    at = open_page("app_pages/run.py")
    run_id = _start(at, CHART_QUESTION)
    assert service.wait(run_id, timeout=60).status == "done"
    at.run()
    steps = at.table[0].value
    assert list(steps.columns) == [
        "Step",
        "Agent",
        "Action",
        "Status",
        "Decision",
        "Replans",
        "Duration",
        "LLM calls",
        "Tokens in",
        "Tokens out",
        "LLM time",
        "Cost",
    ]
    assert list(steps["Agent"]) == [
        "data_researcher",
        "data_researcher",
        "chart_generator",
        "synthesizer",
    ]
    assert {_plain(s) for s in steps["Status"]} == {"done"}
    assert all(d.endswith(" s") for d in steps["Duration"])
    shown = texts(at)
    assert "status **done**" in shown
    assert "AAPL" in shown and "[sql:1]" in shown  # the final answer and a citation
    assert "Sources cited (2)" in [e.label for e in at.expander]
    assert "Monthly closing price" in at.get("vega_lite_chart")[0].proto.spec
    dot = graph_dots(at)[0]
    assert '__start__ -> planner [color="#e65100" penwidth=3 style=bold]' in dot  # taken edges
    assert "chart_generator -> chart_summarizer [" in dot


def test_the_run_in_the_query_string_is_found_again_after_a_reload(home, services):
    _, service = services
    first = service.start(TESLA, Design())
    second = service.start(CHART_QUESTION, Design())
    service.wait(first, timeout=60), service.wait(second, timeout=60)
    newest = open_page("app_pages/run.py")
    assert watched(newest).value == second  # the newest by default
    reloaded = open_page("app_pages/run.py", run=first)
    assert watched(reloaded).value == first
    assert "web_researcher" in list(reloaded.table[0].value["Agent"])


def test_a_rerun_carrying_the_browsers_old_address_and_choice_keeps_the_new_run(home, services):
    """Run pressed: a rerun the browser sends before it has drawn the new run still says
    the old run, in its address and in its "Run to watch" value. CI saw the page fall back
    to it (the new run waited for a decision out of sight). The address counts on a visit
    only, and a value sent for the earlier run's box is not the new box's."""
    _, service = services
    old = service.start(TESLA, Design())
    service.wait(old, timeout=60)
    at = open_page("app_pages/run.py")
    assert watched(at).value == old
    old_box = watched(at)
    old_value = old_box._widget_state  # what the browser sends for that box (its id, value)
    at.text_area(key="run:question").set_value(CHART_QUESTION)
    button(at, "Run").click().run()
    new = at.query_params["run"]
    assert new != old and watched(at).value == new
    assert watched(at).key != old_box.key  # the earlier run's box is gone
    at.query_params["run"] = old  # the browser's old address on a rerun of the page
    at.run()
    assert watched(at).value == new and at.query_params["run"] == new
    # The browser sends the earlier box's value again (it had not drawn the new box yet):
    # Streamlit keeps that box's callback and takes the value for a change (seen in whole
    # suites under load: the page went back to the old run).
    # (AppTest has no public way to send what a browser sends: its own _tree and _run.)
    stale = at._tree.get_widget_states()
    stale.widgets.append(old_value)
    at._run(widget_state=stale)
    assert watched(at).value == new and at.query_params["run"] == new
    watched(at).set_value(old).run()  # a choice in the box is the user's
    assert watched(at).value == old and at.query_params["run"] == old
    at.switch_page("app_pages/history.py").run()  # a visit elsewhere and back: kept
    at.switch_page("app_pages/run.py").run()
    assert watched(at).value == old
    service.wait(new, timeout=60)


def test_plan_history_shows_each_replan_with_the_executors_reason(home, services):
    _, service = services
    service.wait(service.start(TESLA, Design()), timeout=60)
    at = open_page("app_pages/run.py")
    titles = [e.label for e in at.expander]
    assert "Plan v1" in titles and "Plan v2 — replanned at step 1" in titles
    assert (
        "**Why the Executor asked for it:** Step 1 (data_researcher) produced no usable data"
        in texts(at)
    )
    assert list(at.table[0].value["Replans"]) == [1, 0]


def test_messages_can_be_filtered_by_step_and_agent(home, services):
    _, service = services
    service.wait(service.start(CHART_QUESTION, Design()), timeout=60)
    at = open_page("app_pages/run.py")
    at.selectbox(key="run:msg-step").set_value(3).run()
    at.selectbox(key="run:msg-agent").set_value("chart_generator").run()
    steps = [e for e in at.expander if e.label.startswith("Step ")]
    assert [e.label.split(" · ")[:2] for e in steps] == [["Step 3", "chart_generator"]]
    at.session_state["run:trace:1-3"] = True  # open it, as a click does
    at.run()
    (step,) = [e for e in at.expander if e.label.startswith("Step ")]
    assert [m.value for m in step.markdown if m.value.startswith("**")] == ["**chart_generator**"]
    assert any("make_chart(" in c.value for c in step.code)


def test_an_empty_question_is_refused_in_words(home):
    at = open_page("app_pages/run.py")
    _button(at, "Run").click().run()
    assert any("The question is empty" in e.value for e in at.error)
    assert not at.exception


def test_a_failed_run_says_why_in_words_without_a_traceback(home, services):
    store, service = services
    store.save_design(Design(recursion_limit=5))  # 15 node runs: fewer than 8 steps need
    at = open_page("app_pages/run.py")
    run_id = _start(
        at, " ".join(f"What was the highest price of AAPL in {y}?" for y in range(2001, 2009))
    )
    assert service.wait(run_id, timeout=60).status == "failed"
    at.run()
    assert any(
        e.value.startswith("The run failed: Stopped at the recursion limit (5 steps: 15 node runs)")
        for e in at.error
    )
    assert not at.exception
    assert "Traceback" not in texts(at)


@pytest.fixture
def slow_model(home, monkeypatch):
    monkeypatch.setenv("STEPWISE_SCRIPTED_DELAY", "0.2")
    get_settings.cache_clear()


def test_stop_cancels_a_live_run_and_keeps_what_it_did(slow_model, services):
    store, service = services
    at = open_page("app_pages/run.py")
    run_id = _start(at, CHART_QUESTION)
    assert store.run(run_id).is_live
    _button(at, "Stop").click().run()
    record = service.wait(run_id, timeout=60)
    assert record.status == "cancelled"
    at.run()
    assert any("The run was cancelled" in w.value for w in at.warning)
    assert store.events(run_id)  # everything so far is kept


def test_the_steps_table_counts_each_steps_model_calls_tokens_time_and_cost(home, services):
    store, service = services
    run_id = service.start(TESLA, Design())
    service.wait(run_id, timeout=60)
    at = open_page("app_pages/run.py")
    steps = at.table[0].value
    view_total = [m.value for m in at.markdown if m.value.startswith("**Run totals:**")]
    calls_1, calls_2 = (int(c) for c in steps["LLM calls"])
    assert calls_1 > calls_2 >= 1  # step 1 was replanned: the Planner and Executor again
    assert all(int(t.replace(",", "")) > 0 for t in steps["Tokens in"])
    assert set(steps["Cost"]) == {"$0.0000"}  # the offline model costs nothing, and says so
    calls = sum(int(c) for c in steps["LLM calls"])
    (total,) = view_total
    # The totals add the first plan, written before step 1, to the steps' calls.
    assert total.startswith(f"**Run totals:** {calls + 1} LLM call(s)")
    assert "including the first plan, written before step 1: 1 call(s)" in total


def test_a_waiting_run_is_decided_inline_and_the_decision_shows_in_table_and_messages(
    home, services
):
    store, service = services
    at = open_page("app_pages/run.py")
    run_id = _start(at, REPORT)
    wait_status(store, run_id, "waiting")
    at.run()
    assert "Waiting for your decision" in [h.value for h in at.subheader]
    steps = at.table[0].value
    assert _plain(steps["Status"][1]) == "waiting" and steps["Agent"][1] == "report_writer"
    assert re.search(r"\bhuman \[[^]]*fillcolor=\"#ffd54f\"", graph_dots(at)[0])  # waits there
    (item,) = store.pending_interrupts(run_id)
    key = f"run:approval:{item['id']}"
    at.text_area(key=f"{key}:query").input('Save a report titled "Inline".')
    button(at, "Approve edited query", key).click().run()
    assert service.wait(run_id, timeout=60).status == "done"
    at.run()
    steps = at.table[0].value
    assert list(steps["Decision"]) == ["", "approved with an edited query", ""]
    assert [_plain(s) for s in steps["Status"]] == ["done", "done", "done"]
    at.selectbox(key="run:msg-agent").set_value("human").run()
    (step,) = [e for e in at.expander if e.label.startswith("Step ")]
    assert step.label.startswith("Step 2 · human · 0 model calls")
    at.session_state["run:trace:1-2"] = True  # open it, as a click does
    at.run()
    (step,) = [e for e in at.expander if e.label.startswith("Step ")]
    assert any("<b>human · decision</b>" in m.value for m in step.markdown)
    assert 'Human: edit step 2 (report_writer) with the query: Save a report titled "Inline"..' in [
        t.value for t in step.text
    ]


def test_a_rejected_step_shows_rejected_with_the_reason_in_the_table(home, services):
    store, service = services
    run_id = service.start(REPORT, Design())
    wait_status(store, run_id, "waiting")
    (item,) = store.pending_interrupts(run_id)
    service.decide(run_id, item["id"], "reject", reason="too early")
    wait_status(store, run_id, "waiting")
    (again,) = store.pending_interrupts(run_id)
    service.decide(run_id, again["id"], "skip")
    service.wait(run_id, timeout=60)
    at = open_page("app_pages/run.py", run=run_id)
    assert at.table[0].value["Decision"][1] == "rejected (too early); skipped"


def test_step_mode_pauses_before_each_node_next_runs_one_and_continue_the_rest(home, services):
    store, service = services
    at = open_page("app_pages/run.py")
    at.checkbox(key="run:step-mode").check()
    run_id = _start(at, "What caused the dot-com crash?")
    wait_status(store, run_id, "paused")
    at.run()
    assert "**Paused in step mode. Next node: `planner`** — it writes the plan" in texts(at)
    button(at, "Next").click().run()
    wait_status(store, run_id, "paused")
    at.run()
    assert store.nodes_run(run_id) == ["planner"]
    assert "Next node: `executor`" in texts(at)
    state = {r["Field"]: r["Value"] for r in at.table[0].value.to_dict("records")}
    assert state["current_step"] == "1"
    assert state["plan step"].startswith("web_researcher: Search the documents")
    assert list(at.table[1].value["Agent"]) == ["web_researcher", "synthesizer"]  # the steps
    button(at, "Next").click().run()
    wait_status(store, run_id, "paused")
    at.run()
    assert store.nodes_run(run_id) == ["planner", "executor"]
    assert "Next node: `web_researcher`" in texts(at)
    state = {r["Field"]: r["Value"] for r in at.table[0].value.to_dict("records")}
    assert state["agent_query"].startswith("Search the documents for")
    assert re.search(r"\bweb_researcher \[[^]]*fillcolor=\"#ffd54f\"", graph_dots(at)[0])
    button(at, "Continue").click().run()
    assert service.wait(run_id, timeout=60).status == "done"
    at.run()
    assert not [b for b in at.button if b.label in ("Next", "Continue")]
    assert store.nodes_run(run_id)[-1] == "synthesizer"


def test_a_run_killed_mid_step_shows_interrupted_and_resume_finishes_it(home):
    # A real process runs the run and is SIGKILLed mid-way; the app starts after it.
    run_id = killed_mid_run(home, CHART_QUESTION, nodes=3)
    at = open_page("app_pages/run.py", run=run_id)
    assert any(
        "The run was interrupted: The app stopped while this run was in progress." in w.value
        for w in at.warning
    )
    _button(at, "Resume").click().run()
    from ui import services

    record = services.service().wait(run_id, timeout=120)
    assert record.status == "done", record.reason
    at.run()
    assert not [b for b in at.button if b.label == "Resume"]
    assert "status **done**" in texts(at)
    assert {_plain(s) for s in at.table[0].value["Status"]} == {"done"}


def test_the_pace_chosen_on_the_run_page_holds_each_node_and_defaults_to_the_designs(
    home, services
):
    store, service = services
    # a design's own pace (0.2 s, not among the page's choices) is the default, and a
    # choice of 0.5 s holds each node: the shortest paces that tell them apart
    store.save_design(Design(pace_s=0.2))
    at = open_page("app_pages/run.py")
    pace = at.selectbox(key="run:pace")
    assert pace.value == 0.2
    assert "as fast as possible" in pace.options
    pace.set_value(0.5).run()
    run_id = _start(at, TESLA)
    assert service.wait(run_id, timeout=60).status == "done"
    assert store.run(run_id).design["pace_s"] == 0.5
    paced = [
        e["data"]["paced"]["seconds"]
        for e in store.events(run_id, kinds=("custom",))
        if "paced" in (e.get("data") or {})
    ]
    assert paced and min(paced) >= 0.49


def test_presentation_mode_hides_the_sidebar_and_the_graphs_fullscreen_button_shows(home, services):
    _, service = services
    run_id = service.start(TESLA, Design())
    service.wait(run_id, timeout=60)
    at = open_page("app_pages/run.py", run=run_id)
    styles = lambda: "\n".join(str(h.proto) for h in at.get("html"))  # noqa: E731
    assert "stElementToolbar" in styles() and "stSidebar" not in styles()
    at.toggle(key="run:presentation").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "stSidebar" in styles()
    at.toggle(key="run:presentation").set_value(False).run()
    assert "stSidebar" not in styles()


def _in_order(node):
    """Every element of an AppTest page in the order it is drawn."""
    yield node
    for index in sorted(getattr(node, "children", {}) or {}):
        yield from _in_order(node.children[index])


def test_the_eval_set_bar_of_a_finished_run_comes_below_the_status_line(home, services):
    """Issue #28: when a run ended, "Add this run to an eval set" appeared above the status
    line and pushed everything the class was reading down."""
    _, service = services
    run_id = service.start(TESLA, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    at = open_page("app_pages/run.py", run=run_id)
    drawn = list(_in_order(at.main))
    status = next(
        i
        for i, e in enumerate(drawn)
        if e.type == "markdown" and str(getattr(e, "value", "")).startswith("status **done**")
    )
    bar = next(
        i
        for i, e in enumerate(drawn)
        if e.type == "expander" and e.label == "Add this run to an eval set"
    )
    assert bar > status


def test_an_experiments_runs_of_one_question_are_told_apart_by_variant(home, services):
    """Issue #28: "Run to watch" listed two variants' runs of the same question under
    identical labels."""
    from graph.service.eval_sets import EvalQuestion, EvalSet
    from graph.settings import Settings

    store, service = services
    runs = [service.start(TESLA, Design()) for _ in range(2)]
    for run_id in runs:
        assert service.wait(run_id, timeout=60).status == "done"
    store.create_experiment(
        "e1",
        "pace check",
        EvalSet(name="one", questions=[EvalQuestion(question=TESLA)]),
        [{"name": "A", "prompts": {}}, {"name": "B", "prompts": {}}],
        1,
        1,
        Design(),
        Settings(home=home),
    )
    for run_id, variant in zip(runs, "AB"):
        store.add_experiment_run("e1", run_id, variant, 0, 0)
    at = open_page("app_pages/run.py", run=runs[0])
    assert not at.exception, [e.value for e in at.exception]
    box = watched(at)
    shown = list(box.options)  # as the page words them
    assert len(set(shown)) == len(shown)
    assert any(s.endswith("pace check: A") for s in shown)
    assert any(s.endswith("pace check: B") for s in shown)
