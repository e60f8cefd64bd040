"""Experiments (graph/experiments.py): variants run as ordinary runs on a bounded pool,
compared on figures recomputed here from the store; stop, rerun (approvals:
test_experiment_approvals.py)."""

from __future__ import annotations

import json
import statistics
import threading
import time

import pytest

import graph.plan_execute  # noqa: F401  (declares the prompts read below)
from graph.kernel.design import Design
from graph.prompts import PromptSet, default_text
from graph.service.eval_sets import Check, EvalQuestion, EvalSet, load_starter
from graph.service.experiment_comparison import METRICS, compare, distribution_records, run_records
from graph.service.experiment_variants import ExperimentError, Variant
from graph.service.experiments import ExperimentRunner
from graph.service.run_service import RunService
from graph.service.side_by_side import side_by_side
from graph.service.store import Store
from graph.settings import Settings
from ui.views import panels_of

PLANNER = "plan_execute/planner"
EXECUTOR = "plan_execute/executor"
# The scripted planner plans only the agents in the prompt's "agent": "..." line: this
# edit takes data_researcher (and report_writer) away from it.
NO_DATA_PLANNER = default_text(PLANNER).replace(
    '"agent" must be one of: {agent_names}',
    '"agent" must be one of: web_researcher, chart_generator, synthesizer',
)
NO_REPLAN_EXECUTOR = default_text(EXECUTOR).replace(
    "After {max_replans} replans", "After 0 replans"
)
REPORT = "What caused the dot-com crash? Save a report."


@pytest.fixture
def slow_service(store, tmp_path):
    """Scripted model calls take 30 ms, so runs are still going when the test acts."""
    svc = RunService(
        store, Settings(home=tmp_path, provider="scripted", scripted_delay_s=0.03), timeout_tick_s=0
    )
    yield svc
    svc.shutdown()


def two_variants() -> list[Variant]:
    return [
        Variant(name="default"),
        Variant(name="no-data planner", prompts={PLANNER: NO_DATA_PLANNER}),
    ]


def one_question_set(question: str, *checks: Check) -> EvalSet:
    return EvalSet(name="one", questions=[EvalQuestion(question=question, checks=list(checks))])


def llm_figures(store: Store, run_id: str) -> tuple[int, int]:
    """LLM calls and tokens of a run, counted here straight from its events."""
    calls = [
        e["data"]["llm_call"]
        for e in store.events(run_id, kinds=("custom",))
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    ]
    return len(calls), sum(c["input_tokens"] + c["output_tokens"] for c in calls)


# ------------------------------------------------------------------ a real experiment


def test_two_variants_on_the_starter_set_give_a_comparison_matching_the_stored_runs(service):
    starter = load_starter()
    experiment_id = ExperimentRunner.of(service).start(
        "planner without data", starter, two_variants(), repeats=2
    )
    record = ExperimentRunner.of(service).wait(experiment_id, timeout=120)
    assert record.status == "done"
    assert ExperimentRunner.of(service).progress(experiment_id) == (24, 24)
    comparison = compare(service.store, experiment_id, baseline="default")

    runs = service.store.experiment_runs(experiment_id)
    assert len(runs) == 6 * 2 * 2
    history = {r.id for r in service.store.runs(limit=1000)}
    assert {r["run_id"] for r in runs} <= history  # ordinary runs, in History

    for row in comparison.rows:
        for variant in ("default", "no-data planner"):
            mine = [
                r
                for r in runs
                if r["variant"] == variant and r["question_index"] == row["question_index"]
            ]
            records = [service.store.run(r["run_id"]) for r in mine]
            figures = [llm_figures(service.store, r["run_id"]) for r in mine]
            cell = row["variants"][variant]
            assert cell["runs"] == 2
            assert cell["steps"] == statistics.fmean(r.counts["steps"] for r in records)
            assert cell["replans"] == statistics.fmean(r.counts.get("replans", 0) for r in records)
            assert cell["llm_calls"] == statistics.fmean(c for c, _ in figures)
            assert cell["tokens"] == statistics.fmean(t for _, t in figures)
            assert cell["cost"] == 0.0  # the scripted model is priced at zero
            latencies = [(r.finished_at or 0) - r.started_at for r in records]
            if all(r.finished_at for r in records):
                assert cell["latency_s"] == pytest.approx(statistics.fmean(latencies))
            assert all(r.question == row["question"] for r in records)

    # What the variants do differently, as the runs show it.
    growth = comparison.rows[0]["variants"]
    assert growth["default"]["pass_rate"] == 1.0 and growth["default"]["checks"] == [1.0] * 5
    assert growth["no-data planner"]["pass_rate"] == 0.0
    assert growth["no-data planner"]["checks"][:3] == [0.0, 0.0, 0.0]  # AAPL, chart, agents
    report = comparison.rows[5]["variants"]
    # The experiment decides the report_writer approval itself (not performed): no waiting.
    assert report["default"]["statuses"] == ["done"] and report["default"]["pass_rate"] == 1.0
    assert report["no-data planner"]["pass_rate"] == 1.0  # no report_writer, no approval

    summary = comparison.summary
    assert summary["default"]["pass_rate"] == pytest.approx(12 / 12)
    assert summary["no-data planner"]["pass_rate"] == pytest.approx(6 / 12)
    all_steps = [
        service.store.run(r["run_id"]).counts["steps"] for r in runs if r["variant"] == "default"
    ]
    assert summary["default"]["steps"]["mean"] == statistics.fmean(all_steps)
    assert summary["default"]["steps"]["median"] == statistics.median(all_steps)
    assert set(comparison.differences) == {"no-data planner"}
    marks = comparison.differences["no-data planner"]
    assert set(marks) == set(METRICS)
    assert marks["pass_rate"] == "worse" and marks["replans"] == "worse"
    assert marks["cost"] == "unclear"  # $0 every run: no difference to tell


def test_each_variant_runs_with_its_own_recorded_prompt_texts(service):
    experiment_id = ExperimentRunner.of(service).start(
        "texts",
        one_question_set("How did Tesla's stock do in 2008?"),
        [
            Variant(name="default"),
            Variant(name="strict executor", prompts={EXECUTOR: NO_REPLAN_EXECUTOR}),
        ],
    )
    ExperimentRunner.of(service).wait(experiment_id, timeout=60)
    record = service.store.experiment(experiment_id)
    by_name = {v["name"]: v["prompts"] for v in record.variants}
    assert by_name["strict executor"][EXECUTOR] == NO_REPLAN_EXECUTOR
    assert by_name["default"][EXECUTOR] == default_text(EXECUTOR)
    assert set(by_name["default"]) == {
        n
        for n in PromptSet().texts  # every prompt of its system
        if n.startswith("plan_execute/")
    }
    for row in service.store.experiment_runs(experiment_id):
        run = service.store.run(row["run_id"])
        used = PromptSet(Design.model_validate(run.design).prompts).texts
        assert {n: used[n] for n in by_name[row["variant"]]} == by_name[row["variant"]]
    replans = {r["variant"]: r["replans"] for r in run_records(service.store, experiment_id)}
    assert replans == {"default": 1, "strict executor": 0}


def test_a_variant_is_built_from_stored_prompt_versions(service, store):
    planner = store.save_prompt_version(PLANNER, "no data", NO_DATA_PLANNER)
    executor = store.save_prompt_version(EXECUTOR, "strict", NO_REPLAN_EXECUTOR)
    variant = Variant.from_versions(store, "edited", [planner.id, executor.id])
    assert variant.prompts == {PLANNER: NO_DATA_PLANNER, EXECUTOR: NO_REPLAN_EXECUTOR}
    assert variant.versions == {PLANNER: planner.id, EXECUTOR: executor.id}
    other = store.save_prompt_version(PLANNER, "again", NO_DATA_PLANNER + "\n")
    with pytest.raises(ExperimentError, match="two versions of plan_execute/planner"):
        Variant.from_versions(store, "bad", [planner.id, other.id])
    experiment_id = ExperimentRunner.of(service).start(
        "versions", one_question_set("Why did IBM sell its PC division to Lenovo?"), [variant]
    )
    ExperimentRunner.of(service).wait(experiment_id, timeout=60)
    (row,) = store.experiment_runs(experiment_id)
    assert store.run(row["run_id"]).prompt_versions == {PLANNER: planner.id, EXECUTOR: executor.id}


def test_bad_variants_are_refused_before_any_run_is_made(service, store):
    questions = one_question_set("Why did IBM sell its PC division to Lenovo?")
    with pytest.raises(ExperimentError, match="missing placeholder {user_query}"):
        ExperimentRunner.of(service).start(
            "x",
            questions,
            [Variant(name="broken", prompts={PLANNER: "{agent_list} {replan_section}"})],
        )
    with pytest.raises(ExperimentError, match="same name"):
        ExperimentRunner.of(service).start("x", questions, [Variant(name="a"), Variant(name="a")])
    with pytest.raises(ExperimentError, match="at least one variant"):
        ExperimentRunner.of(service).start("x", questions, [])
    assert store.runs() == [] and store.experiments() == []


# ------------------------------------------------------------------ concurrency, stop, waiting


def test_an_experiment_runs_at_most_max_workers_runs_at_once(slow_service):
    eval_set = EvalSet(
        name="six",
        questions=[
            EvalQuestion(question=q)
            for q in (
                "Why did IBM sell its PC division to Lenovo?",
                "What was the average price of each stock in 2008?",
                "How did Tesla's stock do in 2008?",
            )
        ],
    )
    experiment_id = ExperimentRunner.of(slow_service).start(
        "bounded", eval_set, two_variants(), max_workers=2
    )
    peak, stop = 0, threading.Event()

    def watch():
        nonlocal peak
        while not stop.is_set():
            running = [
                r
                for r in slow_service.store.experiment_runs(experiment_id)
                if r["status"] == "running"
            ]
            peak = max(peak, len(running))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    ExperimentRunner.of(slow_service).wait(experiment_id, timeout=120)
    stop.set()
    watcher.join()
    assert peak == 2  # concurrent, and never more than the pool allows
    assert slow_service.store.experiment(experiment_id).max_workers == 2


def test_the_worker_count_defaults_to_the_experiment_workers_setting(store, tmp_path):
    svc = RunService(
        store, Settings(home=tmp_path, provider="scripted", experiment_workers=3), timeout_tick_s=0
    )
    try:
        experiment_id = ExperimentRunner.of(svc).start(
            "default workers",
            one_question_set("Why did IBM sell its PC division to Lenovo?"),
            [Variant(name="default")],
        )
        ExperimentRunner.of(svc).wait(experiment_id, timeout=60)
        assert store.experiment(experiment_id).max_workers == 3
    finally:
        svc.shutdown()


def test_stop_experiment_cancels_queued_and_live_runs(slow_service):
    experiment_id = ExperimentRunner.of(slow_service).start(
        "to stop", load_starter(), two_variants(), repeats=2, max_workers=1
    )
    store = slow_service.store
    deadline = time.time() + 30
    while not any(r["status"] == "running" for r in store.experiment_runs(experiment_id)):
        assert time.time() < deadline
        time.sleep(0.01)
    cancelled = ExperimentRunner.of(slow_service).stop(experiment_id)
    record = ExperimentRunner.of(slow_service).wait(experiment_id, timeout=30)
    statuses = [r["status"] for r in store.experiment_runs(experiment_id)]
    assert record.status == "stopped"
    assert cancelled >= 20  # every queued run and the live one
    assert statuses.count("cancelled") >= 20 and "queued" not in statuses
    assert slow_service.live_runs() == []
    assert ExperimentRunner.of(slow_service).progress(experiment_id) == (24, 24)


# ------------------------------------------------------------------ rerun


def test_rerun_runs_exactly_the_recorded_prompts_design_and_questions(service, store):
    design = Design(
        max_replans=1, enabled_agents=["web_researcher", "data_researcher", "synthesizer"]
    )
    experiment_id = ExperimentRunner.of(service).start(
        "original",
        one_question_set("How did Tesla's stock do in 2008?"),
        [Variant(name="strict", prompts={EXECUTOR: NO_REPLAN_EXECUTOR}), Variant(name="default")],
        repeats=2,
        design=design,
    )
    ExperimentRunner.of(service).wait(experiment_id, timeout=60)
    # Meanwhile someone activates another executor version: the rerun must not pick it up.
    other = store.save_prompt_version(EXECUTOR, "meanwhile", default_text(EXECUTOR) + "\nBe brief.")
    store.set_active_prompt(EXECUTOR, other.id)

    rerun_id = ExperimentRunner.of(service).rerun(experiment_id)
    ExperimentRunner.of(service).wait(rerun_id, timeout=60)
    original, rerun = store.experiment(experiment_id), store.experiment(rerun_id)
    assert rerun.rerun_of == experiment_id and rerun.name == "original (rerun)"
    assert rerun.variants == original.variants
    assert (rerun.design, rerun.eval_set, rerun.repeats) == (original.design, original.eval_set, 2)

    def used(experiment):
        out = {}
        for row in store.experiment_runs(experiment):
            run = store.run(row["run_id"])
            out.setdefault(row["variant"], set()).add(
                json.dumps(
                    [
                        run.question,
                        run.design["enabled_agents"],
                        run.design["settings"]["plan_execute"]["max_replans"],
                        PromptSet(run.design["prompts"]).texts[EXECUTOR],
                    ]
                )
            )
        return out

    assert used(rerun_id) == used(experiment_id)
    assert all(len(texts) == 1 for texts in used(rerun_id).values())
    assert [r["replans"] for r in run_records(store, rerun_id)] == [
        r["replans"] for r in run_records(store, experiment_id)
    ]


def test_rerun_is_refused_when_the_model_settings_differ_naming_the_difference(store, tmp_path):
    recorded = Settings(
        home=tmp_path,
        openai_base_url="http://127.0.0.1:9/v1",
        openai_api_key="k",
        planner_model="model-a",
        worker_model="model-a",
    )
    store.create_experiment(
        "e1",
        "on model-a",
        load_starter(),
        [{"name": "default", "prompts": {}, "versions": {}}],
        1,
        1,
        Design(),
        recorded,
    )
    elsewhere = RunService(
        store, recorded.model_copy(update={"planner_model": "model-b"}), timeout_tick_s=0
    )
    offline = RunService(store, Settings(home=tmp_path, provider="scripted"), timeout_tick_s=0)
    try:
        with pytest.raises(ExperimentError, match="planner_model was 'model-a', now 'model-b'"):
            ExperimentRunner.of(elsewhere).rerun("e1")
        with pytest.raises(ExperimentError, match="resolved_provider was 'openai', now 'scripted'"):
            ExperimentRunner.of(offline).rerun("e1")
    finally:
        elsewhere.shutdown(), offline.shutdown()
    assert [e.id for e in store.experiments()] == ["e1"] and store.runs() == []


def test_no_api_key_is_stored_with_an_experiment(store, tmp_path):
    secret = "sk-test-NEVER-STORED"
    settings = Settings(home=tmp_path, openai_api_key=secret, tavily_api_key="tvly-SECRET")
    store.create_experiment("e1", "keys", load_starter(), [], 1, 1, Design(), settings)
    assert store.experiment("e1").settings["openai_api_key"] == "set"
    store.close()
    for path in tmp_path.glob("stepwise.sqlite*"):
        data = path.read_bytes()
        assert secret.encode() not in data and b"tvly-SECRET" not in data


# ------------------------------------------------------------------ comparison arithmetic


def crafted_experiment(store: Store, runs: list[tuple[str, int, int, list]]) -> str:
    """An experiment of crafted runs: (variant, steps, replans, [(model, in, out)])."""
    eval_set = one_question_set("q", Check(kind="max_steps", value=3))
    store.create_experiment(
        "c",
        "crafted",
        eval_set,
        [{"name": "base", "prompts": {}}, {"name": "new", "prompts": {}}],
        2,
        1,
        Design(),
        Settings(),
    )
    for n, (variant, steps, replans, calls) in enumerate(runs):
        run_id = f"run{n}"
        store.create_run(run_id, "q", Design(), "crafted")
        store.set_run_status(run_id, "running")
        seq = 0
        for model, read, wrote in calls:
            seq += 1
            store.append_event(
                run_id,
                {
                    "seq": seq,
                    "ts": time.time(),
                    "kind": "custom",
                    "node": "",
                    "namespace": "",
                    "step": 1,
                    "data": {
                        "llm_call": {
                            "model": model,
                            "node": "x",
                            "input_tokens": read,
                            "output_tokens": wrote,
                            "latency_s": 0.1,
                        }
                    },
                },
            )
        store.append_event(
            run_id,
            {
                "seq": seq + 1,
                "ts": time.time(),
                "kind": "state",
                "node": "",
                "namespace": "",
                "step": 1,
                "data": {
                    "rows": [{}] * steps,
                    "final_answer": "a",
                    "replan_attempts": {"1": replans},
                    "counts": {"steps": steps, "replans": replans},
                },
            },
        )
        store.append_event(
            run_id,
            {
                "seq": seq + 2,
                "ts": time.time(),
                "kind": "end",
                "node": "",
                "namespace": "",
                "step": 1,
                "data": {"status": "done", "reason": ""},
            },
        )
        store.add_experiment_run("c", run_id, variant, 0, n % 2)
    return "c"


def test_comparison_cost_is_the_mean_of_priced_runs_and_unknown_when_any_is_unpriced(store):
    prices = {"cheap": (1.0, 2.0), "dear": (10.0, 20.0)}
    experiment = crafted_experiment(
        store,
        [
            ("base", 2, 0, [("cheap", 1000, 500)]),  # $0.002
            ("base", 4, 2, [("cheap", 2000, 1000)]),  # $0.004
            ("new", 2, 0, [("dear", 1000, 500)]),  # $0.02
            ("new", 2, 1, [("dear", 1000, 500), ("mystery", 10, 10)]),
        ],
    )  # unknown
    comparison = compare(store, experiment, "base", prices=prices)
    base, new = comparison.summary["base"], comparison.summary["new"]
    assert base["cost"]["mean"] == pytest.approx(0.003)
    assert base["cost"]["median"] == pytest.approx(0.003)
    assert new["cost"]["mean"] is None and new["cost"]["median"] is None
    assert new["cost"]["low"] is None and new["unpriced"] == ["mystery"]
    assert comparison.rows[0]["variants"]["new"]["cost"] is None
    assert base["steps"]["mean"] == 3 and base["tokens"]["mean"] == 2250
    assert base["pass_rate"] == 0.5  # 4 steps > at most 3
    marks, contrasts = comparison.differences["new"], comparison.contrasts["new"]
    assert marks["cost"] == "unknown"
    # Two runs a side: the means differ, but too little to call (issue #27)
    assert contrasts["steps"]["estimate"] == -1 and contrasts["replans"]["estimate"] == -0.5
    assert contrasts["pass_rate"]["estimate"] == 0.5 and contrasts["tokens"]["estimate"] == -740
    assert contrasts["llm_calls"]["estimate"] == 0.5  # 1.5 calls a run against 1
    # Latency is this machine's timing of the crafted calls, so it is left out here.
    assert {m: marks[m] for m in marks if m not in ("cost", "latency_s")} == dict.fromkeys(
        ("pass_rate", "steps", "replans", "llm_calls", "tokens"), "unclear"
    )


def test_a_baseline_that_is_not_a_variant_is_refused_naming_the_variants(store):
    experiment = crafted_experiment(store, [("base", 2, 0, [("cheap", 10, 10)])])
    with pytest.raises(ValueError, match="No variant 'old'.*base, new"):
        compare(store, experiment, "old")


def test_distribution_records_hold_one_value_per_counted_run_and_metric(store):
    experiment = crafted_experiment(
        store, [("base", 2, 0, [("cheap", 10, 10)]), ("new", 3, 1, [("mystery", 10, 10)])]
    )
    records = distribution_records(store, experiment, prices={"cheap": (1.0, 1.0)})
    by_run = {}
    for r in records:
        by_run.setdefault(r["run_id"], {})[r["metric"]] = r["value"]
    assert by_run["run0"]["steps"] == 2 and by_run["run1"]["replans"] == 1
    assert by_run["run0"]["cost"] == pytest.approx(20 / 1_000_000)
    assert "cost" not in by_run["run1"]  # unknown: left out, never plotted as zero
    assert {r["variant"] for r in records} == {"base", "new"}


def test_side_by_side_shows_both_runs_plans_decisions_and_answers(service):
    experiment_id = ExperimentRunner.of(service).start(
        "pair",
        one_question_set("How did Tesla's stock do in 2008?"),
        [Variant(name="default"), Variant(name="strict", prompts={EXECUTOR: NO_REPLAN_EXECUTOR})],
    )
    ExperimentRunner.of(service).wait(experiment_id, timeout=60)
    runs = {r["variant"]: r["run_id"] for r in service.store.experiment_runs(experiment_id)}
    view = side_by_side(service.store, runs["default"], runs["strict"])
    assert view["same_question"]
    a, b = view["a"], view["b"]
    plans = {
        side: next(p for p in panels_of(view[side]) if p.key == "plans").items
        for side in ("a", "b")
    }
    assert [i["label"].split(" ")[1] for i in plans["a"]] == ["v1", "v2"]
    assert len(plans["b"]) == 1
    assert plans["a"][1]["rows"][0]["Agent"] == "web_researcher"  # the replan's revision
    assert a["router"] == "executor"
    assert any(d["parsed"]["goto"] == "planner" and d["parsed"]["replan"] for d in a["decisions"])
    assert not any(d["parsed"]["replan"] for d in b["decisions"])
    assert all(d["step"] for d in a["decisions"] + b["decisions"])
    assert "Tesla" in a["answer"] and "Tesla" in b["answer"]
    assert a["answer"] == service.store.run(runs["default"]).final_answer
    assert b["answer"] == service.store.run(runs["strict"]).final_answer
