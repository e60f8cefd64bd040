"""The Run page's messages as a trace (issue #15, point 4): one collapsed expander per
step, its label giving the calls, time and tokens; opened, each call with its bars, its
text and its raw JSON one click away. The History page's Run tab shows the same."""

from __future__ import annotations

import re

from graph.kernel.design import Design
from tests.app.support import open_page
from ui.trace_builder import build_trace

CHART_QUESTION = (
    "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
)
STEP_LABEL = re.compile(
    r"^Step \d · [\w, ]+ · \d+ model calls? · (\d+ tool calls? · )?[\d.]+ m?s · [\d,]+ tokens$"
)


def _finished_run(services) -> tuple[str, list[str]]:
    store, service = services
    run_id = service.start(CHART_QUESTION, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    trace = build_trace(store.events(run_id, kinds=("update", "custom")))
    return run_id, [s.label for s in trace.steps]


def _steps(at):
    return [e for e in at.expander if e.label.startswith("Step ")]


def test_a_finished_run_shows_its_steps_collapsed_with_their_figures(home, services):
    run_id, labels = _finished_run(services)
    at = open_page("app_pages/run.py", run=run_id)

    steps = _steps(at)
    assert [e.label for e in steps] == labels and len(labels) == 4
    assert all(STEP_LABEL.match(label) for label in labels), labels
    assert not any(e.proto.expanded for e in steps)
    # collapsed: the calls are not drawn at all (no card list under the steps)
    assert not any("model call ·" in m.value for m in at.markdown)
    assert not at.json


def test_an_opened_step_shows_its_calls_with_bars_text_and_raw_json(home, services):
    store, _ = services
    run_id, labels = _finished_run(services)
    at = open_page("app_pages/run.py", run=run_id)
    at.session_state["run:trace:1-3"] = True  # what a click on "Step 3 · …" sets
    at.run()
    assert not at.exception, [e.value for e in at.exception]

    (opened,) = [e for e in _steps(at) if e.label.startswith("Step 3 ·")]
    cards = [m.value for m in opened.markdown if "stepwise-trace-item" in m.value]
    assert any("<b>tool call · make_chart</b>" in c for c in cards)
    model_call = next(c for c in cards if "<b>model call · chart_generator" in c)
    assert re.search(r"latency [\d.]+ m?s", model_call)
    assert re.search(r"[\d,]+ tokens \([\d,]+ in, [\d,]+ out\)", model_call)
    assert re.search(r"width:\d+(\.\d)?%", model_call)  # the bars, against the run's largest
    assert any(c.value.startswith("make_chart(") for c in opened.code)
    raw = [e for e in opened.expander if e.label == "Raw JSON"]
    assert raw and not any(e.proto.expanded for e in raw)
    assert not at.json  # the raw JSON waits for its click

    trace = build_trace(store.events(run_id, kinds=("update", "custom")))
    tool = next(i for i in trace.steps[2].items if i.title == "tool call · make_chart")
    at.session_state[f"run:raw:{tool.key}"] = True
    at.run()
    (shown,) = at.json
    assert '"tool_call_id"' in shown.value and '"recorded run"' in shown.value


def test_the_history_page_shows_the_same_trace(home, services):
    run_id, labels = _finished_run(services)
    at = open_page("app_pages/history.py", run=run_id)
    assert [e.label for e in _steps(at)] == labels
