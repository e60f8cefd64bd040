"""Runs on worker processes (STEPWISE_RUN_PROCESSES): real spawned processes on one home,
real SQLite store and checkpointer, killed with SIGKILL where the test says so.

The owning service keeps the run's record, lease, approvals and final status; a worker
process drives the stream. Each test checks the stream really ran in a worker (its CPU
time grew) and that what the owner does today still holds: Stop, approvals answered
once, an experiment's figures, a killed worker's or owner's run resumed once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from graph.kernel.design import Design
from graph.service.eval_sets import load_starter
from graph.service.experiment_comparison import compare, run_records
from graph.service.experiments import ExperimentRunner
from graph.service.run_controls import StopSignal
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.conftest import wait_for
from tests.unit.test_conversation import FOLLOW_UP, QUESTION, _redirects, _updates
from tests.unit.test_experiments import two_variants
from tests.unit.test_restart import host, kill

GROWTH = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
REPORT = "What caused the dot-com crash? Save a report."


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def workers_of(pid: int) -> list[int]:
    """The run worker processes ``pid`` started."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == pid and b"worker_main" in command:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def end_statuses(store: Store, run_id: str) -> list[str]:
    return [e["data"]["status"] for e in store.events(run_id, kinds=("end",))]


@pytest.fixture
def pooled(tmp_path, monkeypatch):
    """A run service whose runs go to worker processes on its own home."""
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    made: list[RunService] = []

    def make(processes: int = 1, delay: float = 0.0, lease: float = 30.0, home=tmp_path):
        home.mkdir(exist_ok=True)
        settings = Settings(
            home=home, provider="scripted", scripted_delay_s=delay, run_lease_s=lease
        )
        service = RunService(Store.open(settings), settings, timeout_tick_s=0, processes=processes)
        made.append(service)
        return service

    yield make
    for service in made:
        service.shutdown()


def test_an_experiment_on_worker_processes_gives_the_figures_it_gives_on_threads(pooled, tmp_path):
    questions = load_starter()
    questions = questions.model_copy(update={"questions": questions.questions[:2]})
    figures = {}
    for processes in (0, 2):
        service = pooled(processes, home=tmp_path / f"p{processes}")
        busy_before = sum(cpu_s(p) for p in service.processes.pids()) if processes else 0
        runner = ExperimentRunner.of(service)
        experiment_id = runner.start("same either way", questions, two_variants(), repeats=2)
        assert runner.wait(experiment_id, timeout=300).status == "done"
        if processes:  # the runs' work was done in the workers, not here
            assert sum(cpu_s(p) for p in service.processes.pids()) - busy_before > 1.0
        comparison = compare(service.store, experiment_id, baseline="default").as_dict()
        for row in comparison["rows"]:
            for cell in row["variants"].values():
                cell.pop("latency_s")
            for marks in (*row["differences"].values(), *row["contrasts"].values()):
                marks.pop("latency_s")
        for summary in comparison["summary"].values():
            summary.pop("latency_s")
        comparison["differences"]["no-data planner"].pop("latency_s")
        comparison["contrasts"]["no-data planner"].pop("latency_s")
        comparison.pop("experiment_id")
        records = sorted(
            (
                r["variant"],
                r["question_index"],
                r["repeat"],
                r["status"],
                r["passed"],
                r["steps"],
                r["llm_calls"],
                r["tokens"],
                r["final_answer"],
            )
            for r in run_records(service.store, experiment_id)
        )
        figures[processes] = (comparison, records)
    assert figures[2] == figures[0]
    assert figures[2][0]["summary"]["default"]["pass_rate"] == 1.0
    assert len(figures[2][1]) == 8


def test_stop_reaches_a_run_in_a_worker_process_and_the_worker_goes_on_serving(pooled):
    service = pooled(1, delay=0.3)
    (worker,) = service.processes.pids()
    run_id = service.start(GROWTH, Design())
    wait_for(lambda: service.store.nodes_run(run_id), what="the run to get going")
    assert service.cancel(run_id)
    record = service.wait(run_id, timeout=60)
    assert record.status == "cancelled", record.reason
    assert end_statuses(service.store, run_id) == ["cancelled"]
    nodes = service.store.nodes_run(run_id)
    assert "synthesizer" not in nodes
    time.sleep(1.0)  # stopped means stopped: nothing more is written
    assert service.store.nodes_run(run_id) == nodes
    assert service.store.run_lease(run_id) == (None, None)
    busy = cpu_s(worker)
    service.resume(run_id)  # the same worker takes it on from its checkpoint
    assert service.wait(run_id, timeout=120).status == "done"
    assert service.processes.pids() == [worker] and cpu_s(worker) > busy
    assert end_statuses(service.store, run_id) == ["cancelled", "done"]


def test_an_approval_decided_in_the_owner_resumes_the_run_in_a_worker_once(pooled, tmp_path):
    service = pooled(1)
    (worker,) = service.processes.pids()
    run_id = service.start(REPORT, Design())
    wait_for(lambda: service.store.run(run_id).status == "waiting", what="the approval")
    (pending,) = service.pending_approvals()
    assert pending["agent"] == "report_writer"
    busy = cpu_s(worker)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def decide() -> None:
        barrier.wait()
        try:
            service.decide(run_id, pending["id"], "approve")
            outcomes.append("decided")
        except ValueError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=decide) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("decided") == 1, outcomes
    record = service.wait(run_id, timeout=120)
    assert record.status == "done", record.reason
    assert cpu_s(worker) > busy
    assert end_statuses(service.store, run_id) == ["waiting", "done"]
    assert service.store.nodes_run(run_id).count("report_writer") == 1
    assert len(list((tmp_path / "reports").glob("*.md"))) == 1
    assert service.pending_approvals() == []


def test_a_killed_worker_process_s_run_is_interrupted_let_go_and_resumes_to_the_end_once(
    pooled,
):
    service = pooled(1, delay=0.3)
    (worker,) = service.processes.pids()
    run_id = service.start(GROWTH, Design())
    wait_for(lambda: len(service.store.nodes_run(run_id)) >= 2, what="the run to be mid-way")
    os.kill(worker, signal.SIGKILL)
    record = wait_for(
        lambda: (r := service.store.run(run_id)).status == "interrupted" and r,
        timeout=30,
        what="the run of the killed worker to be marked interrupted",
    )
    assert f"worker process (pid {worker}) stopped" in record.reason
    assert not service.is_live(run_id)
    assert service.store.run_lease(run_id) == (None, None)  # free to take over now
    service.resume(run_id)  # on a new worker process
    finished = service.wait(run_id, timeout=120)
    assert finished.status == "done", finished.reason
    assert worker not in service.processes.pids()
    assert end_statuses(service.store, run_id) == ["done"]
    assert service.store.nodes_run(run_id).count("synthesizer") == 1


def test_a_killed_owner_s_workers_stop_and_its_run_is_taken_over_once_after_its_lease(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    monkeypatch.setenv("STEPWISE_RUN_PROCESSES", "1")
    proc, run_id = host(tmp_path, GROWTH, delay=0.4, lease=2.0)
    monkeypatch.delenv("STEPWISE_RUN_PROCESSES")
    settings = Settings(home=tmp_path, provider="scripted", run_lease_s=2.0)
    watch = Store.open(settings)
    second = None
    try:
        (worker,) = wait_for(lambda: workers_of(proc.pid), what="the host's worker")
        wait_for(lambda: len(watch.nodes_run(run_id)) >= 2, what="the hosted run to be mid-way")
        busy = cpu_s(worker)
        assert busy > 0.5  # the hosted run's stream is driven there
        second = RunService(Store.open(settings), settings, timeout_tick_s=0, processes=0)
        with pytest.raises(ValueError, match="in progress in another app process"):
            second.resume(run_id)
        kill(proc)
        wait_for(lambda: not alive(worker), timeout=30, what="the orphaned worker to exit")
        wait_for(
            lambda: watch.run(run_id).status == "interrupted",
            timeout=30,
            what="the dead owner's run to be marked interrupted",
        )
        second.resume(run_id)
        finished = second.wait(run_id, timeout=120)
        assert finished.status == "done", finished.reason
        assert end_statuses(watch, run_id) == ["done"]
        assert watch.nodes_run(run_id).count("synthesizer") == 1
    finally:
        if proc.poll() is None:
            kill(proc)
        if second is not None:
            second.shutdown()
        watch.close()


def test_a_follow_up_sent_in_the_owner_redirects_a_run_in_a_worker_that_then_answers_it(pooled):
    service = pooled(1, delay=0.12)
    (worker,) = service.processes.pids()
    run_id = service.start(QUESTION, Design(guardrail=True))
    wait_for(
        lambda: (service.store.snapshot(run_id) or {}).get("current_step", 0) >= 2,
        what="step 2",
    )
    busy = cpu_s(worker)
    service.send_message(run_id, FOLLOW_UP)
    record = service.wait(run_id, timeout=120)
    assert record.status == "done", record.reason
    assert cpu_s(worker) > busy  # the redirected run went on in the worker
    (redirect,) = _redirects(service.store, run_id)
    assert redirect["goto"] == "guardrail"
    nodes = _updates(service.store, run_id)
    assert nodes[nodes.index("guardrail", 1) + 1] == redirect["was_next"][0]
    turns = service.store.snapshot(run_id)["conversation"]["turns"]
    assert [t["status"] for t in turns] == ["answered", "answered"]
    assert end_statuses(service.store, run_id) == ["done"]
    assert service.store.queued_redirects(run_id) == []


def _spans(store: Store, run_ids: list[str]) -> list[tuple[float, float]]:
    """When each run's stream wrote its first and last event (in its worker), in order."""
    spans = []
    for run_id in run_ids:
        stamps = [e["ts"] for e in store.events(run_id, kinds=("state", "update", "custom"))]
        spans.append((min(stamps), max(stamps)))
    return sorted(spans)


def test_runs_that_never_wait_take_a_worker_each_and_the_others_queue(pooled, tmp_path):
    """On the offline model answering at once a run is pure computing: three on one
    worker run one after another (not taking turns on its GIL); runs whose model makes
    them wait share the worker at once."""
    computing = pooled(processes=1, home=tmp_path / "computing")
    assert computing.computes_without_pause(Design())
    assert not computing.computes_without_pause(Design(pace_s=0.5))  # paced: it waits
    ids = [computing.start(GROWTH, Design()) for _ in range(3)]
    for run_id in ids:
        assert computing.wait(run_id, timeout=120).status == "done"
    spans = _spans(computing.store, ids)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans

    waiting = pooled(processes=1, delay=0.2, home=tmp_path / "waiting")
    assert not waiting.computes_without_pause(Design())
    ids = [waiting.start(GROWTH, Design()) for _ in range(2)]
    for run_id in ids:
        assert waiting.wait(run_id, timeout=120).status == "done"
    (first, second) = _spans(waiting.store, ids)
    assert second[0] < first[1], (first, second)  # side by side on the one worker


def test_a_run_queued_for_a_busy_worker_is_stopped_before_it_starts(pooled):
    """Stop on a run waiting for a worker ends it there; the worker was never asked."""
    service = pooled(processes=1)
    pool = service.processes
    with pool._lock:
        (worker,) = pool._workers
        worker.alone.add(-1)  # a run that never waits holds the only worker
    cancel = StopSignal()
    ended: list = []
    queued = threading.Thread(
        target=lambda: ended.append(pool.run("r-queued", Design(), None, False, cancel, alone=True))
    )
    queued.start()
    time.sleep(0.6)
    assert queued.is_alive() and not worker.jobs  # waiting, not sent
    cancel.set()
    queued.join(timeout=5)
    assert ended == [("cancelled", "Cancelled before it started.")]
    with pool._lock:
        worker.alone.discard(-1)
    run_id = service.start(GROWTH, Design())  # the worker serves the next as before
    assert service.wait(run_id, timeout=120).status == "done"
