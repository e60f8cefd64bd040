"""Eval sets from real runs and as tables: a run opened in History (or on the Run page)
added to a new set with its proposed checks edited first, and the Evals page's table
editor saving an edited check, or showing why not while keeping the edit."""

from __future__ import annotations

from graph.kernel.design import Design
from graph.service.eval_sets import Check, EvalQuestion, EvalSet
from tests.app.support import button, open_page, texts

CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
SMALL = EvalSet(
    name="small",
    questions=[
        EvalQuestion(question=CHART, checks=[Check(kind="answer_contains", value="AAPL")]),
        EvalQuestion(
            question="Why did IBM sell its PC division to Lenovo?",
            checks=[
                Check(kind="uses_agents", value=["web_researcher"]),
                Check(kind="max_steps", value=3),
            ],
        ),
    ],
)


def _chart_run(services) -> str:
    _, service = services
    run_id = service.start(CHART, Design())
    assert service.wait(run_id, timeout=60).status == "done"
    return run_id


def _edit(at, key: str, edits: dict):
    at.session_state[key] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    return at.run()


def _unfold(at, page_key: str):
    at.session_state[f"{page_key}:to-set-open"] = True  # what a click on its title sets
    return at.run()


def _row_of(frame, kind: str) -> int:
    return list(frame["Kind"]).index(kind)


def test_a_run_opened_in_history_goes_into_a_new_set_with_a_check_edited_first(home, services):
    store, _ = services
    run_id = _chart_run(services)
    at = open_page("app_pages/history.py", run=run_id)
    base = f"history:to-set:{run_id}"
    # Folded, the control draws (and reads) nothing: the proposal reads every message.
    assert not [t for t in at.text_area if t.key == f"{base}:question"]
    at = _unfold(at, "history")
    assert at.text_area(key=f"{base}:question").value == CHART
    proposed = at.data_editor(key=f"{base}:checks").value
    assert list(proposed["Value"])[_row_of(proposed, "uses_agents")] == (
        "data_researcher, chart_generator, chart_summarizer, synthesizer"
    )
    assert "chart_produced" in list(proposed["Kind"]) and "AAPL" in list(proposed["Value"])
    steps = _row_of(proposed, "max_steps")
    assert proposed["Value"][steps] == "4"
    _edit(at, f"{base}:checks", {steps: {"Value": "6"}})
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key=f"{base}:target").value == "A new eval set…"
    at.text_input(key=f"{base}:new-name").input("from history").run()
    button(at, "Add to eval set").click().run()

    assert any(
        "Saved the new eval set “from history” with this question" in s.value for s in at.success
    ), texts(at)
    saved = store.load_eval_set("from history")
    (question,) = saved.questions
    assert question.question == CHART
    checks = {c.kind: c.value for c in question.checks}
    assert checks["max_steps"] == 6  # the edit, not the run's 4
    assert checks["uses_agents"] == [
        "data_researcher",
        "chart_generator",
        "chart_summarizer",
        "synthesizer",
    ]
    assert "chart_produced" in checks and "no_human_help" in checks


def test_a_bad_proposed_check_is_named_and_nothing_is_saved(home, services):
    store, _ = services
    run_id = _chart_run(services)
    at = _unfold(open_page("app_pages/history.py", run=run_id), "history")
    base = f"history:to-set:{run_id}"
    proposed = at.data_editor(key=f"{base}:checks").value
    steps = _row_of(proposed, "max_steps")
    _edit(at, f"{base}:checks", {steps: {"Value": "a few"}})
    assert [e.value for e in at.error] == [
        f"Not saved yet: Check row {steps + 1} (max_steps): max_steps needs a whole "
        "number of 0 or more."
    ]
    assert button(at, "Add to eval set").disabled
    at.run()  # a redraw keeps the edit, so its message too
    assert at.error[0].value.startswith(f"Not saved yet: Check row {steps + 1} (max_steps)")
    at.text_area(key=f"{base}:question").input("  ").run()
    assert any("The question is empty" in e.value for e in at.error)
    assert store.eval_set_names() == []


def test_the_run_page_offers_the_same_control_and_adds_to_an_existing_set(home, services):
    store, _ = services
    store.save_eval_set(SMALL)
    run_id = _chart_run(services)
    at = _unfold(open_page("app_pages/run.py", run=run_id), "run")
    base = f"run:to-set:{run_id}"
    assert at.selectbox(key=f"{base}:target").value == "small"
    button(at, "Add to eval set").click().run()
    assert any("“small” already asked this question (question 1)" in s.value for s in at.success)
    saved = store.load_eval_set("small")
    assert len(saved.questions) == 2
    assert "uses_agents" in [c.kind for c in saved.questions[0].checks]
    assert saved.questions[1] == SMALL.questions[1]


def test_the_sets_tab_table_editor_saves_an_edited_check(home, services):
    store, _ = services
    store.save_eval_set(SMALL)
    at = open_page("app_pages/evals.py")
    questions = at.data_editor(key="evals:table:questions:small:0").value
    assert list(questions["Question"]) == [q.question for q in SMALL.questions]
    checks = at.data_editor(key="evals:table:checks:small:0").value
    assert list(checks["Question"]) == [1, 2, 2]
    assert list(checks["Value"]) == ["AAPL", "web_researcher", "3"]
    _edit(at, "evals:table:checks:small:0", {2: {"Value": "5"}})
    assert not at.error, [e.value for e in at.error]
    at.button(key="evals:table-save").click().run()

    assert any("Saved “small”" in s.value for s in at.success)
    saved = store.load_eval_set("small")
    assert saved.questions[1].checks[1] == Check(kind="max_steps", value=5)
    assert saved.questions[0] == SMALL.questions[0]
    assert list(at.data_editor(key="evals:table:checks:small:1").value["Value"]) == [
        "AAPL",
        "web_researcher",
        "5",
    ]


def test_a_bad_table_edit_shows_the_message_keeps_the_edit_and_saves_nothing(home, services):
    store, _ = services
    store.save_eval_set(SMALL)
    at = open_page("app_pages/evals.py")
    _edit(at, "evals:table:checks:small:0", {1: {"Value": "web_researcher, nobody"}})
    (error,) = [e.value for e in at.error]
    assert error.startswith("Not valid: Check row 2 (uses_agents): uses_agents names unknown")
    assert "nobody" in error
    assert at.button(key="evals:table-save").disabled
    at.run()  # a redraw keeps the edit (the editor's state), so its message too
    assert [e.value for e in at.error] == [error]
    assert at.session_state["evals:table:checks:small:0"]["edited_rows"] == {
        1: {"Value": "web_researcher, nobody"}
    }
    assert store.load_eval_set("small") == SMALL
