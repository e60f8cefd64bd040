"""Experiments decide their own approvals (issue 16, point 1): by default the experiment
answers the approval gate itself (read-only steps approved, side-effecting steps not
performed and recorded as such), so nothing waits; "ask a human" leaves runs waiting and
the experiment waiting with them until they are decided; "the design's policy" keeps the
design's own timeout and default. Real SQLite store, real checkpoints, offline model."""

from __future__ import annotations

import time

import pytest

from graph.kernel.approval import NOT_PERFORMED
from graph.kernel.design import Design
from graph.service.eval_sets import Check, EvalQuestion, EvalSet
from graph.service.experiment_comparison import compare
from graph.service.experiment_variants import ExperimentError, Variant
from graph.service.experiments import ExperimentRunner, refresh_status, status_words
from tests.unit.conftest import wait_for

REPORT = "What caused the dot-com crash? Save a report."
TESLA = "How did Tesla's stock do in 2008?"
# data_researcher (read-only) asks every time; report_writer (side-effecting) asks by default.
ALWAYS_ASK = Design(approvals={"data_researcher": "always"})
QUESTIONS = EvalSet(
    name="asking",
    questions=[
        EvalQuestion(
            question=REPORT,
            checks=[
                Check(kind="answer_contains", value="kb:dotcom-crash"),
                Check(kind="no_human_help"),
            ],
        ),
        EvalQuestion(question=TESLA, checks=[Check(kind="uses_agents", value=["data_researcher"])]),
    ],
)


def _runs(service, experiment_id: str) -> dict[int, str]:
    return {r["question_index"]: r["run_id"] for r in service.store.experiment_runs(experiment_id)}


def test_by_default_the_experiment_decides_and_no_run_waits(service, tmp_path):
    runner = ExperimentRunner.of(service)
    experiment_id = runner.start("auto", QUESTIONS, [Variant(name="default")], design=ALWAYS_ASK)
    record = runner.wait(experiment_id, timeout=60)

    assert record.status == "done" and record.approvals == "auto"
    assert runner.progress(experiment_id) == (2, 2)
    store = service.store
    assert [store.run(r).status for r in _runs(service, experiment_id).values()] == ["done"] * 2
    assert service.pending_approvals() == []  # the Approvals page has nothing to show

    report, tesla = _runs(service, experiment_id)[0], _runs(service, experiment_id)[1]
    # The side-effecting step did not run, and the run says so, in its table and decisions.
    row = next(r for r in store.snapshot(report)["rows"] if r["agent"] == "report_writer")
    assert row["status"] == "skipped" and row["result"] == NOT_PERFORMED
    assert "report_writer" not in store.nodes_run(report)
    assert not list((tmp_path / "reports").glob("*.md"))  # no report file written
    decisions = [m["content"] for m in store.messages(report, agent="human")]
    assert any(
        d.startswith("The experiment decided automatically: skip step")
        and f"(report_writer). Reason: {NOT_PERFORMED}" in d
        for d in decisions
    ), decisions
    # The read-only step that always asks was approved, and ran.
    assert "data_researcher" in store.nodes_run(tesla)
    assert any(
        "approve step" in m["content"] and "(data_researcher)" in m["content"]
        for m in store.messages(tesla, agent="human")
    )
    # The experiment's own decisions are no human's help: both questions pass.
    comparison = compare(store, experiment_id, "default")
    assert comparison.waiting == 0 and comparison.summary["default"]["pass_rate"] == 1.0


@pytest.mark.parametrize(
    ("system", "question", "side_effecting"),
    [
        ("supervisor_bus", "What caused the dot-com crash? Write a draft.", "writer"),
        (
            "hierarchical_teams",
            "Find news sites about AI and send them to the API.",
            "site_requester",
        ),
    ],
)
def test_the_other_systems_runs_do_not_wait_either(service, system, question, side_effecting):
    runner = ExperimentRunner.of(service)
    eval_set = EvalSet(name="one", questions=[EvalQuestion(question=question)])
    experiment_id = runner.start(
        "auto", eval_set, [Variant(name="v")], design=Design(system=system)
    )
    assert runner.wait(experiment_id, timeout=60).status == "done"
    (run_id,) = _runs(service, experiment_id).values()
    assert service.store.run(run_id).status in ("done", "failed")  # ended, not waiting
    approvals = service.state(run_id).get("approvals") or []
    mine = [a for a in approvals if a.get("agent") == side_effecting]
    assert mine and all(
        a["by"] == "experiment" and a["decision"] == "skip" and a["reason"] == NOT_PERFORMED
        for a in mine
    ), approvals


def test_asking_a_human_keeps_the_experiment_waiting_until_its_runs_are_decided(service):
    runner = ExperimentRunner.of(service)
    experiment_id = runner.start(
        "ask", QUESTIONS, [Variant(name="default")], design=ALWAYS_ASK, approvals="human"
    )
    record = runner.wait(experiment_id, timeout=60)  # settled: every run waits

    assert record.status == "waiting" and record.approvals == "human"
    assert not runner.is_finished(experiment_id)
    assert runner.progress(experiment_id) == (0, 2)
    assert refresh_status(service.store, experiment_id) == (0, 2, 2)
    before = compare(service.store, experiment_id, "default")
    assert before.status == "waiting" and before.waiting == 2
    assert status_words(before.status, before.waiting) == "waiting (2 runs wait for a decision)"
    assert before.summary["default"]["runs"] == 0  # a waiting run is not counted as failed
    assert before.summary["default"]["pass_rate"] is None
    assert service.apply_timeouts(now=time.time() + 3600) == 0  # no timeout decides for them

    pending = service.pending_approvals()
    assert {p["run_id"] for p in pending} == set(_runs(service, experiment_id).values())
    for item in pending:
        service.decide(item["run_id"], item["id"], "approve")
    wait_for(lambda: runner.is_finished(experiment_id), what="the decided runs to end")

    after = compare(service.store, experiment_id, "default")
    assert service.store.experiment(experiment_id).status == "done"
    assert after.status == "done" and after.waiting == 0 and after.progress == (2, 2)
    assert after.summary["default"]["runs"] == 2
    # A person approved: the report question fails "no human help", the other passes.
    assert after.summary["default"]["pass_rate"] == 0.5
    assert after.rows[1]["variants"]["default"]["pass_rate"] == 1.0


def test_the_designs_policy_keeps_the_designs_timeout_and_default(service):
    runner = ExperimentRunner.of(service)
    design = ALWAYS_ASK.model_copy(update={"approval_timeout_s": 5.0, "timeout_action": "skip"})
    experiment_id = runner.start(
        "design",
        EvalSet(name="one", questions=[EvalQuestion(question=TESLA)]),
        [Variant(name="default")],
        design=design,
        approvals="design",
    )
    assert runner.wait(experiment_id, timeout=60).status == "waiting"
    (run_id,) = _runs(service, experiment_id).values()
    assert service.store.run(run_id).status == "waiting"
    assert service.apply_timeouts(now=time.time() + 3600) == 1  # the design's timeout
    wait_for(lambda: runner.is_finished(experiment_id), what="the run to end")
    assert service.store.experiment(experiment_id).status == "done"
    assert "data_researcher" not in service.store.nodes_run(run_id)  # skipped by default


def test_an_unknown_approvals_setting_is_refused_in_words(service):
    with pytest.raises(ExperimentError, match="Approvals must be one of: auto, human, design"):
        ExperimentRunner.of(service).start(
            "x", QUESTIONS, [Variant(name="v")], approvals="sometimes"
        )
    assert service.store.runs() == []
