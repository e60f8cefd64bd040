"""The Evals page: eval sets (starter offered, edited as JSON, bad JSON refused inline,
export/import), an experiment of two variants started and compared, the baseline
switch, rerun, stop, and the judge only with a real model."""

from __future__ import annotations

import json
import re
import statistics

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import graph.plan_execute  # noqa: F401  (declares the prompts read below)
from graph.prompts import default_text
from graph.service.eval_sets import Check, EvalQuestion, EvalSet, import_eval_set, load_starter
from graph.service.experiment_comparison import compare
from graph.service.experiment_variants import Variant
from graph.service.experiments import ExperimentRunner
from graph.settings import get_settings
from tests.app.support import open_page, texts
from tests.support_procs.fake_server import LocalOpenAIServer
from ui import moved_tabs

PAGE = "app_pages/evals.py"
PLANNER = "plan_execute/planner"
# The scripted planner plans only the agents named in this line of its prompt.
NO_DATA_PLANNER = default_text(PLANNER).replace(
    '"agent" must be one of: {agent_names}', '"agent" must be one of: web_researcher, synthesizer'
)
CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
IBM = "Why did IBM sell its PC division to Lenovo?"
SMALL = EvalSet(
    name="small",
    questions=[
        EvalQuestion(
            question=CHART,
            checks=[
                Check(kind="answer_contains", value="AAPL"),
                Check(kind="uses_agents", value=["data_researcher"]),
            ],
        ),
        EvalQuestion(
            question=IBM, checks=[Check(kind="answer_contains", value="kb:ibm-lenovo-2005")]
        ),
    ],
)


def _evals():
    return open_page(PAGE)


def _plain(text: str) -> str:
    """A table cell without its Markdown colour marks (":red[**…**]")."""
    return re.sub(r":(?:red|green)\[\*\*(.*?)\*\*\]", r"\1", text)


def _frame(at, column):
    """The first table on the page with this column (a name, or a (variant, name) pair)."""
    return next(d.value for d in [*at.dataframe, *at.table] if column in list(d.value.columns))


def _no_data_version(store):
    return store.save_prompt_version(PLANNER, "no data", NO_DATA_PLANNER)


def _experiment(services, repeats: int = 1) -> str:
    """SMALL run by "default" (shipped prompts) and "no data" (the planner without
    data_researcher), straight through the run service; its id once it has finished."""
    store, service = services
    version = _no_data_version(store)
    store.save_eval_set(SMALL)
    experiment_id = ExperimentRunner.of(service).start(
        "small",
        SMALL,
        [Variant(name="default"), Variant.from_versions(store, "no data", [version.id])],
        repeats=repeats,
    )
    assert ExperimentRunner.of(service).wait(experiment_id, timeout=120).status == "done"
    return experiment_id


# ------------------------------------------------------------------ eval sets


def test_without_eval_sets_the_starter_set_is_offered_and_saved(home, services):
    store, _ = services
    at = _evals()
    assert any("No eval set saved yet" in i.value for i in at.info)
    at.button(key="evals:starter").click().run()

    assert store.eval_set_names() == ["starter"]
    assert store.load_eval_set("starter") == load_starter()
    assert at.selectbox(key="evals:set").value == "starter"
    questions = at.data_editor(key="evals:table:questions:starter:1").value
    assert list(questions["Question"]) == [q.question for q in load_starter().questions]
    checks = at.data_editor(key="evals:table:checks:starter:1").value
    assert (checks["Question"][0], checks["Kind"][0], checks["Value"][0]) == (
        1,
        "answer_contains",
        "AAPL",
    )
    assert any("Saved the starter set" in s.value for s in at.success)


def test_a_bad_eval_set_json_shows_the_reason_inline_and_is_not_saved(home, services):
    store, _ = services
    store.save_eval_set(SMALL)
    at = _evals()
    editor = at.text_area(key="evals:editor:small")
    document = json.loads(editor.value)
    document["questions"][1]["checks"][0] = {"kind": "max_steps", "value": -1}
    editor.input(json.dumps(document)).run()

    assert [e.value for e in at.error] == [
        "Not valid: question 2, check 1: max_steps needs a whole number of 0 or more."
    ]
    assert at.button(key="evals:save").disabled
    at.text_area(key="evals:editor:small").input('{"name": "small", "questions": [').run()
    assert at.error[0].value.startswith("Not valid: Not valid JSON:")
    assert store.load_eval_set("small") == SMALL


def test_an_edited_eval_set_is_saved_and_a_new_name_saves_a_copy(home, services):
    store, _ = services
    store.save_eval_set(SMALL)
    at = _evals()
    document = json.loads(at.text_area(key="evals:editor:small").value)
    document["questions"][1]["checks"].append({"kind": "max_replans", "value": 0})
    at.text_area(key="evals:editor:small").input(json.dumps(document)).run()
    assert not at.error
    at.button(key="evals:save").click().run()
    assert store.load_eval_set("small").questions[1].checks[-1] == Check(
        kind="max_replans", value=0
    )

    document["name"] = "small copy"
    at.text_area(key="evals:editor:small").input(json.dumps(document)).run()
    assert "Saving stores a new eval set “small copy”" in texts(at)
    at.button(key="evals:save").click().run()
    assert store.eval_set_names() == ["small", "small copy"]
    assert at.selectbox(key="evals:set").value == "small copy"


def test_a_file_that_is_not_an_eval_set_is_refused_with_the_reason(home, services):
    store, _ = services
    at = _evals()
    at.file_uploader(key="evals:import").upload(
        "plan.json", b'{"format": "stepwise-design", "design": {}}', "application/json"
    )
    at.run()
    assert [e.value for e in at.error] == [
        'plan.json was not imported: Not a Stepwise eval set file (its "format" is not '
        "'stepwise-eval-set')."
    ]
    assert store.eval_set_names() == []


def test_an_exported_eval_set_imports_back_unchanged(home, services, downloads):
    store, _ = services
    store.save_eval_set(load_starter())
    at = _evals()
    data = downloads(at.get("download_button")[0])
    assert import_eval_set(data) == load_starter()

    at.button(key="evals:delete").click().run()
    assert store.eval_set_names() == []
    at.file_uploader(key="evals:import").upload("starter.json", data, "application/json")
    at.run()
    assert store.load_eval_set("starter") == load_starter()
    assert any("Imported “starter” from starter.json" in s.value for s in at.success)


# ------------------------------------------------------------------ experiments


def test_an_experiment_of_two_variants_runs_and_its_table_matches_compare(home, services):
    store, service = services
    version = _no_data_version(store)
    store.save_eval_set(SMALL)
    at = _evals()
    assert at.selectbox(key="evals:variant:1:planner").value == version.id  # the newest
    at.text_input(key="evals:variant:0:name").input("default")
    at.text_input(key="evals:variant:1:name").input("no data")
    at.button(key="evals:start").click().run()

    (record,) = store.experiments()
    assert record.name == "small: default vs no data" and record.total == 4
    assert [v["versions"] for v in record.variants] == [{}, {PLANNER: version.id}]
    assert at.session_state[moved_tabs.drawn_key("evals:tab", at.session_state)] == (
        "Compare variants"
    )
    ExperimentRunner.of(service).wait(record.id, timeout=120)
    at.run()
    assert not at.exception

    comparison = compare(store, record.id, "default", get_settings().prices)
    # one row per question, the whole question once, one column per variant (issue #16)
    table = next(t.value for t in at.table if "default (baseline)" in list(t.value.columns))
    assert list(table.columns) == ["No.", "Question", "default (baseline)", "no data"]
    assert list(table["Question"]) == [CHART, IBM]
    for i, row in enumerate(comparison.rows):
        for variant, column in (("default", "default (baseline)"), ("no data", "no data")):
            cell = row["variants"][variant]
            shown = _plain(table.iloc[i][column])
            assert shown.startswith("✓ passed" if cell["pass_rate"] == 1 else "✗ failed")
            for text in (
                f"{cell['steps']:g} steps",
                f"{cell['replans']:g} replans",
                f"{cell['llm_calls']:g} LLM calls",
                f"{cell['tokens']:,.0f} tokens",
                f"${cell['cost']:.4f}",
            ):
                assert text in shown, (text, shown)
    # What the runs did, read from the store: only the shipped planner used the database.
    runs = {
        (r["variant"], r["question_index"]): r["run_id"] for r in store.experiment_runs(record.id)
    }
    assert "data_researcher" in store.nodes_run(runs["default", 0])
    assert "data_researcher" not in store.nodes_run(runs["no data", 0])
    chart_row = table.iloc[0]
    assert _plain(chart_row["default (baseline)"]).startswith("✓ passed · checks ✓ ✓")
    # one run each cannot tell a difference (issue #27): failed, but not marked worse
    assert chart_row["no data"].startswith("✗ failed · ")
    assert "checks ✗ ✗" in chart_row["no data"]
    steps = [store.run(runs["default", q]).counts["steps"] for q in (0, 1)]
    summary = _frame(at, "Figure").set_index("Figure")
    assert float(summary.loc["steps", "default"].split(" ")[0]) == statistics.fmean(steps)
    assert summary.loc["steps", "default"].endswith("(2 completed of 2)")
    assert summary.loc["pass rate", "no data"] == "50% [9% – 91%] (1 of 2 runs)"  # Wilson

    checks = _frame(at, "Check").to_dict("records")
    assert checks[0]["Question"] == CHART  # the question once, on its first check's row
    assert checks[1] == {
        "No.": "1.2",
        "Question": "",
        "Check": "uses data_researcher",
        "default": "✓",
        "no data": "✗",
    }
    links = _frame(at, "Open")
    assert set(links["Open"]) == {f"run?run={run_id}" for run_id in runs.values()}
    assert {p.proto.query_string for p in at.get("page_link")} >= {
        f"run={runs['default', 0]}",
        f"run={runs['no data', 0]}",
    }  # the two runs side by side
    assert "Judging plan quality" in texts(at)  # the scripted model cannot judge
    assert not [b for b in at.button if (b.key or "").startswith("evals:judge")]


def test_switching_the_baseline_switches_the_better_and_worse_marks(home, services):
    experiment_id = _experiment(services, repeats=4)  # 8 runs a variant: enough to tell
    at = _evals()
    summary = _frame(at, "Figure").set_index("Figure")
    assert "default vs no data" not in summary.columns
    # 4 of 8 against 8 of 8: −50 points, Newcombe's 95% interval below zero
    assert summary.loc["pass rate", "no data vs default"].startswith("▼ worse: −50 pts [−")
    assert summary.loc["LLM calls", "no data vs default"].startswith("▲ better: −")

    at.selectbox(key=f"evals:baseline:{experiment_id}").set_value("no data").run()
    summary = _frame(at, "Figure").set_index("Figure")
    assert "no data vs default" not in summary.columns
    assert summary.loc["pass rate", "default vs no data"].startswith("▲ better: +50 pts")
    assert summary.loc["LLM calls", "default vs no data"].startswith("▼ worse: +")
    assert summary.loc["replans", "default vs no data"] == (
        "no clear difference (8 completed runs each)"
    )


def test_the_comparison_shows_intervals_its_level_and_each_variants_prompt_diff(home, services):
    _experiment(services, repeats=2)
    at = _evals()
    shown = texts(at)
    assert "Intervals are 95% intervals from the runs" in shown
    assert "leaves out zero; otherwise “no clear difference”" in shown
    summary = _frame(at, "Figure").set_index("Figure")
    # each figure with its interval and the runs it counts
    assert summary.loc["pass rate", "default"] == "100% [51% – 100%] (4 of 4 runs)"  # Wilson
    assert re.fullmatch(  # an interval unless every run took the same time, as shown
        r"[\d.]+ s( \[[\d.]+ s – [\d.]+ s\])? \(4 completed of 4\)",
        summary.loc["latency", "no data"],
    )
    assert summary.loc["steps", "no data"].endswith(" (4 completed of 4)")
    assert summary.loc["pass rate", "no data vs default"] == "no clear difference (4 runs each)"
    # how many repeats would tell the pass rates apart (−50 points): said in words
    advice = at.markdown
    assert any(
        "**no data**, pass rate: a difference of −50 pts would take about" in m.value
        and "four times in five (this experiment ran 2)" in m.value
        for m in advice
    )
    # above the figures: which prompt differs, the diff side by side, each model
    headline = next(m.value for m in advice if m.value.startswith("**no data** against"))
    assert headline == (
        "**no data** against **default**: prompts that differ: **planner**; both on "
        "offline scripted model."
    )
    (diff,) = [m.value for m in advice if 'class="prompt-diff"' in m.value]
    assert "web_researcher, synthesizer" in diff  # the variant's line, on the right
    assert diff.index("{agent_names}") < diff.index("web_researcher, synthesizer")
    order = [m.value for m in advice]
    assert order.index(headline) < next(
        i for i, m in enumerate(order) if m.startswith("Runs passed:")
    )


def test_rerun_makes_a_new_experiment_and_is_refused_when_the_model_settings_differ(home, services):
    store, service = services
    experiment_id = _experiment(services)
    at = _evals()
    at.button(key="evals:rerun").click().run()
    rerun = store.experiments()[0]
    assert rerun.rerun_of == experiment_id and rerun.name == "small (rerun)"
    assert at.selectbox(key="evals:experiment").value == rerun.id
    ExperimentRunner.of(service).wait(rerun.id, timeout=120)

    recorded = {**store.experiment(experiment_id).settings, "resolved_provider": "openai"}
    store._write(
        "UPDATE experiments SET settings_json = ? WHERE id = ?",
        (json.dumps(recorded), experiment_id),
    )
    at.selectbox(key="evals:experiment").set_value(experiment_id).run()
    at.button(key="evals:rerun").click().run()
    assert len(store.experiments()) == 2
    assert at.error[0].value.startswith(
        "Cannot rerun 'small' as it ran: the model settings "
        "differ from the recorded ones (resolved_provider was "
        "'openai', now 'scripted')"
    )


def test_a_running_experiment_shows_its_progress_and_stops(home, services, monkeypatch):
    monkeypatch.setenv("STEPWISE_SCRIPTED_DELAY", "0.3")  # read when the service is made
    get_settings.cache_clear()
    store, service = services
    store.save_eval_set(SMALL)
    at = _evals()
    at.button(key="evals:start").click().run()
    (record,) = store.experiments()
    (bar,) = at.get("progress")
    assert bar.proto.text.endswith(" of 4 runs finished")
    assert "The comparison appears here when every run has finished." in texts(at)

    at.button(key="evals:stop").click().run()
    assert store.experiment(record.id).status == "stopped"
    assert any(w.value.startswith("Stopped:") for w in at.warning)
    ExperimentRunner.of(service).wait(record.id, timeout=60)
    at.run()
    assert any("This experiment was stopped" in w.value for w in at.warning)
    # its bar is gone (the Review tab's own bar shows once two runs of a question ended)
    assert not [p for p in at.get("progress") if "runs finished" in p.proto.text]


# ------------------------------------------------------------------ judge

SCORES = {
    "plan_quality": {"score": 4, "reason": "Sensible steps."},
    "plan_adherence": {"score": 5, "reason": "Followed the plan."},
    "execution_efficiency": {"score": 3, "reason": "One wasted call."},
    "logical_consistency": {"score": 4, "reason": "Answer matches findings."},
}


class FixedScores(BaseChatModel):
    """A judge behind a real OpenAI-compatible endpoint that always gives SCORES."""

    @property
    def _llm_type(self) -> str:
        return "fixed-scores"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=json.dumps(SCORES)))]
        )


def test_with_a_real_model_a_run_is_judged_from_the_page(home, services, monkeypatch):
    store, service = services
    experiment_id = _experiment(services)  # run on the scripted model
    run_id = next(
        r["run_id"]
        for r in store.experiment_runs(experiment_id)
        if r["variant"] == "default" and r["question_index"] == 0
    )
    with LocalOpenAIServer(FixedScores) as server:
        # The judge uses the active model profile (the Model page's).
        service.profiles.add("judge", server.base_url, "stepwise-local")
        service.profiles.activate("judge")
        at = _evals()
        assert "needs a real model" not in texts(at)
        at.button(key=f"evals:judge:{run_id}").click().run()
    assert store.judgement(run_id)["scores"] == SCORES
    assert any(s.value == "Judged 1 run(s)." for s in at.success)
    judged = next(t.value for t in at.table if "Why" in t.value.columns)
    assert judged.to_dict("records")[0] == {
        "Score": "plan quality",
        "1-5": 4,
        "Why": "Sensible steps.",
    }
    means = next(t.value for t in at.table if "Runs judged" in t.value.columns)
    assert means.to_dict("records") == [
        {
            "Variant": "default",
            "Runs judged": 1,
            "plan quality": "4",
            "plan adherence": "5",
            "execution efficiency": "3",
            "logical consistency": "4",
        }
    ]


# ------------------------------------------------------------------ what the cells say


def test_figures_read_as_words_unknown_cost_and_repeats_included():
    from ui.evals import results_view

    assert (
        results_view.figure("cost", None) == "unknown"
        and results_view.figure("cost", 0.00123) == "$0.0012"
    )
    assert results_view.figure("steps", 2.5) == "2.5" and results_view.figure("steps", 3.0) == "3"
    assert (
        results_view.figure("tokens", 12345.4) == "12,345"
        and results_view.figure("latency_s", 1.26) == "1.3 s"
    )
    cell = {"runs": 2, "pass_rate": 0.5, "checks": [1.0, 0.5, 0.0], "statuses": ["done"]}
    assert (
        results_view.result_cell(cell) == "1 of 2 passed"
        and results_view.checks_cell(cell) == "✓ ◐ ✗"
    )
    waiting = {"runs": 1, "pass_rate": 0.0, "checks": [1.0], "statuses": ["waiting"]}
    assert results_view.result_cell(waiting) == "✗ failed (waiting)"
    assert (
        results_view.result_cell(
            {"runs": 0, "pass_rate": None, "checks": [None], "statuses": ["cancelled"]}
        )
        == "not counted (cancelled)"
    )


def test_the_editor_text_round_trips_and_a_whole_exported_file_may_be_pasted():
    from graph.service.eval_sets import export_eval_set
    from ui.evals import setup_view

    starter = load_starter()
    text = setup_view.eval_set_text(starter)
    assert '        {"kind": "chart_produced"},\n' in text  # one check a line, no null value
    assert setup_view.parse_eval_set_text(text) == starter
    assert setup_view.parse_eval_set_text(json.dumps(export_eval_set(starter))) == starter


# ------------------------------------------------------------------ the field's formats


LANGFUSE_FILE = (
    json.dumps({"id": "i1", "input": IBM, "expectedOutput": "Focus.", "status": "ACTIVE"})
    + "\n"
    + json.dumps(
        {
            "input": CHART,
            "metadata": {"stepwise_checks": [{"kind": "answer_contains", "value": "AAPL"}]},
        }
    )
    + "\n"
).encode()


def test_a_langfuse_jsonl_file_is_imported_and_exported_back_unchanged(home, services, downloads):
    store, _ = services
    at = _evals()
    at.file_uploader(key="evals:import").upload("deals.jsonl", LANGFUSE_FILE, "application/jsonl")
    at.run()
    assert any("Imported “deals” from deals.jsonl" in s.value for s in at.success)
    imported = store.load_eval_set("deals")
    assert [q.question for q in imported.questions] == [IBM, CHART]
    assert imported.questions[1].checks == [Check(kind="answer_contains", value="AAPL")]
    assert "Not saved yet" not in texts(at)  # the tables show it as stored: no edit
    button = next(
        b for b in at.get("download_button") if b.proto.label.startswith("Export Langfuse")
    )
    assert downloads(button) == LANGFUSE_FILE


def test_a_jsonl_file_with_a_bad_line_is_refused_naming_it_and_nothing_is_imported(home, services):
    store, _ = services
    bad = LANGFUSE_FILE + b'{"input": "Why?", "metadata": {"stepwise_checks": [{"kind": "x"}]}}\n'
    at = _evals()
    at.file_uploader(key="evals:import").upload("deals.jsonl", bad, "application/jsonl")
    at.run()
    (error,) = [e.value for e in at.error]
    assert error.startswith(
        "deals.jsonl was not imported: line 3, field metadata.stepwise_checks[0]: Input should be"
    )
    assert store.eval_set_names() == []
