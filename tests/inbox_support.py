"""Waiting runs for the Approvals inbox tests: real runs on the offline scripted model,
some recorded as an experiment's runs the way the experiment runner records them."""

from __future__ import annotations

import time
import uuid

from graph.kernel.design import Design
from graph.service.eval_sets import EvalSet
from graph.settings import Settings

REPORT = "What caused the dot-com crash? Save a report."
IBM = "Why did IBM sell its PC division? Save a report."
APPLE = "Why did Apple's stock fall in 2008? Save a report."


def wait_waiting(store, run_id: str, timeout: float = 60) -> None:
    """Block until the run waits for a human (report_writer always asks by default)."""
    deadline = time.time() + timeout
    while (record := store.run(run_id)).status != "waiting":
        assert time.time() < deadline, f"run {run_id} is {record.status}, not waiting"
        time.sleep(0.05)


def waiting_run(store, service, question: str = REPORT, design: Design | None = None) -> str:
    run_id = service.start(question, design or Design())
    wait_waiting(store, run_id)
    return run_id


def waiting_experiment(
    store, service, name: str, questions: list[str], variants=("A", "B")
) -> tuple[str, dict[tuple[str, int], str]]:
    """An experiment's record and one waiting run per question x variant (no approval
    timeout, as experiment runs have); its id and {(variant, question index): run id}."""
    design = Design(approval_timeout_s=0)
    experiment_id = uuid.uuid4().hex
    store.create_experiment(
        experiment_id,
        name,
        EvalSet(name=name, questions=[{"question": q} for q in questions]),
        [{"name": v, "prompts": {}, "versions": {}} for v in variants],
        1,
        1,
        design,
        Settings(provider="scripted"),
    )
    runs = {}
    for variant in variants:
        for index, question in enumerate(questions):
            run_id = waiting_run(store, service, question, design)
            store.add_experiment_run(experiment_id, run_id, variant, index, 0)
            runs[(variant, index)] = run_id
    return experiment_id, runs
