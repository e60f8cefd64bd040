"""One run, one process: two app processes on one STEPWISE_HOME, or on one PostgreSQL
database, never run it twice.

The process running a run holds a lease on it in the store and renews it while the run is
live; another process marks the run interrupted, or resumes it, only once that lease has
run out. Real SQLite files and a real PostgreSQL server (each test runs on both, through
the ``database_url`` fixture), real checkpointers, and for the kill a real second process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import SCHEMA_VERSION, Store
from graph.settings import Settings
from tests.conftest import assert_backend
from tests.support import ROOT
from tests.unit.conftest import wait_for
from tests.unit.test_restart import host, kill

QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."


MODEL_CALLS: list[int] = []  # one entry per model call really made


class CountedSlowModel(ScriptedChatModel):
    """The scripted model, slowed down, counting the calls it makes in MODEL_CALLS."""

    delay_s: float = 0.25  # slept by ScriptedChatModel itself

    def _generate(self, *args, **kwargs):
        MODEL_CALLS.append(1)
        return super()._generate(*args, **kwargs)


def llm_calls(store: Store, run_id: str) -> int:
    return sum(
        1
        for e in store.events(run_id, kinds=("custom",))
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    )


def end_events(store: Store, run_id: str) -> list[dict]:
    return store.events(run_id, kinds=("end",))


def test_a_lease_held_by_one_owner_is_refused_to_another_until_it_runs_out(tmp_path, database_url):
    store = Store.open(Settings(home=tmp_path, database_url=database_url))
    assert store.dialect == ("postgresql" if database_url else "sqlite")
    store.create_run("r", QUESTION, Design(), "m", owner="first", lease_s=0.5)
    store.set_run_status("r", "running")
    assert not store.claim_run("r", "second", 30)
    assert store.mark_interrupted() == 0 and store.run("r").status == "running"
    assert store.renew_leases("first", ["r"], 0.5) == 1
    time.sleep(0.6)  # the first owner stopped renewing
    assert store.mark_interrupted() == 1 and store.run("r").status == "interrupted"
    assert store.claim_run("r", "second", 30)
    assert store.run_lease("r")[0] == "second"
    assert not store.claim_run("r", "first", 30)
    store.release_run("r", "second")
    assert store.run_lease("r") == (None, None)
    store.close()


class HeartbeatAnsweredLate:
    """The real store, except that the heartbeat's answer (``keep_leases``) reaches the
    process only after ``meanwhile`` has run: the order two threads can take."""

    def __init__(self, store: Store, meanwhile) -> None:
        self.store, self.meanwhile = store, meanwhile

    def keep_leases(self, owner: str, run_ids, lease_s: float) -> set[str]:
        kept = self.store.keep_leases(owner, run_ids, lease_s)
        self.meanwhile()
        return kept

    def __getattr__(self, name: str):
        return getattr(self.store, name)


def test_a_heartbeat_answered_after_the_runs_next_leg_claimed_it_does_not_take_it_away(
    tmp_path, database_url
):
    """A leg ends waiting for a decision (its lease released) while the heartbeat renews
    the runs it listed as live; the decision comes and the next leg claims the run before
    the heartbeat's answer (not renewed: nobody held it) is read. That answer was taken
    as the run lost: the next leg stopped, logged as lost to this very process, and the
    run ended "cancelled" (seen in bench/app_memory.py's fill)."""
    from graph.service.leases import LeaseLost, Leases

    store = Store.open(Settings(home=tmp_path, database_url=database_url))
    store.create_run("r", QUESTION, Design(), "m", owner="me", lease_s=30)
    lost: list[str] = []

    def next_leg_claims_it() -> None:
        assert store.claim_run("r", "me", 30)
        leases.hold("r")

    leases = Leases(HeartbeatAnsweredLate(store, next_leg_claims_it), "me", 30, lost.append)
    leases.hold("r")
    leases.let_go("r")  # the first leg ends: waiting for a decision
    store.release_run("r", "me")
    leases.renew(["r"])  # listed live before the release; its answer read after the claim
    assert lost == [] and not leases.is_lost("r")
    leases.check("r")  # the next leg writes on
    # a run really taken over while held is still lost
    store.release_run("r", "me")
    assert store.claim_run("r", "other", 30)
    leases.store = store
    leases.renew(["r"])
    assert lost == ["r"]
    with pytest.raises(LeaseLost):
        leases.check("r")
    store.close()


def test_an_old_store_file_gains_the_lease_columns_on_open(tmp_path):
    import sqlite3

    path = tmp_path / "stepwise.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE schema_version (version INTEGER NOT NULL);"
        "INSERT INTO schema_version VALUES (1);"
        "CREATE TABLE runs (id TEXT PRIMARY KEY, question TEXT NOT NULL, system TEXT NOT NULL,"
        " design_json TEXT NOT NULL, prompt_versions_json TEXT NOT NULL DEFAULT '{}',"
        " settings_json TEXT NOT NULL DEFAULT '{}', status TEXT NOT NULL,"
        " reason TEXT NOT NULL DEFAULT '', model_label TEXT NOT NULL DEFAULT '',"
        " created_at REAL NOT NULL, started_at REAL, finished_at REAL, final_answer TEXT,"
        " step_count INTEGER NOT NULL DEFAULT 0, replan_count INTEGER NOT NULL DEFAULT 0,"
        " parent_run TEXT, parent_checkpoint TEXT, snapshot_json TEXT);"
        "INSERT INTO runs (id, question, system, design_json, status, created_at)"
        " VALUES ('old', 'q', 'plan_execute', '{}', 'running', 0);"
        "CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL,"
        " kind TEXT NOT NULL, node TEXT NOT NULL DEFAULT '', namespace TEXT NOT NULL DEFAULT '',"
        " step INTEGER, data_json TEXT NOT NULL, PRIMARY KEY (run_id, seq));"
    )
    old.commit()
    old.close()
    store = Store(path)
    assert store.schema_version == SCHEMA_VERSION
    assert store.run_lease("old") == (None, None)
    assert store.mark_interrupted() == 1  # a run from before leases: nobody holds it
    store.close()


@pytest.fixture
def two_services(tmp_path, database_url):
    """Two run services on one home (or one PostgreSQL database), as two app processes
    would be: each its own store connection, checkpointer and owner id; a short lease."""
    # Long enough that a renewal delayed by a busy machine does not let it run out.
    settings = Settings(
        home=tmp_path, provider="scripted", run_lease_s=2.0, database_url=database_url
    )
    made: list[RunService] = []

    def make() -> RunService:
        service = RunService(
            Store.open(settings),
            settings,
            timeout_tick_s=0,
            model_factory=lambda role: CountedSlowModel(),
        )
        made.append(service)
        return service

    MODEL_CALLS.clear()
    yield make
    for service in made:
        service.shutdown()
    assert_backend(tmp_path, database_url)


def test_a_second_service_leaves_a_live_run_alone_and_refuses_to_resume_it(two_services):
    first = two_services()
    run_id = first.start(QUESTION, Design(max_replans=2, recursion_limit=60))
    wait_for(lambda: first.store.nodes_run(run_id), what="the run to get going")
    second = two_services()
    assert second.interrupted_at_start == 0
    assert second.store.run(run_id).status == "running"
    with pytest.raises(ValueError, match="in progress in another app process"):
        second.resume(run_id)
    # Longer than the lease: the first keeps renewing it, the second's sweep leaves it.
    time.sleep(2.5)
    assert second.store.run(run_id).status == "running"
    with pytest.raises(ValueError, match="in progress in another app process"):
        second.resume(run_id)
    finished = first.wait(run_id, timeout=60)
    assert finished.status == "done", finished.reason
    assert len(end_events(second.store, run_id)) == 1
    assert llm_calls(second.store, run_id) == len(MODEL_CALLS)
    assert second.store.run_lease(run_id) == (None, None)  # let go when it ended
    assert first.owner != second.owner


def test_only_one_of_two_services_resuming_an_interrupted_run_at_once_wins(two_services):
    first, second = two_services(), two_services()
    run_id = first.start(QUESTION, Design(max_replans=2, recursion_limit=60))
    wait_for(lambda: first.store.nodes_run(run_id), what="the run to get going")
    first.cancel(run_id)
    assert first.wait(run_id, timeout=30).status == "cancelled"
    outcomes: list = []
    barrier = threading.Barrier(2)

    def resume(service: RunService) -> None:
        barrier.wait()
        try:
            service.resume(run_id)
            outcomes.append("resumed")
        except ValueError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=resume, args=(s,)) for s in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("resumed") == 1, outcomes
    winner = (
        first
        if first.is_live(run_id) or first.store.run_lease(run_id)[0] == first.owner
        else second
    )
    assert winner.wait(run_id, timeout=60).status == "done"
    ends = [e["data"]["status"] for e in end_events(first.store, run_id)]
    assert ends == ["cancelled", "done"]


def test_a_killed_app_process_s_run_is_taken_over_only_after_its_lease_and_ends_once(
    tmp_path, monkeypatch, database_url
):
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    if database_url:  # the host process shares the database through its environment
        monkeypatch.setenv("STEPWISE_DATABASE_URL", database_url)
    proc, run_id = host(tmp_path, QUESTION, delay=0.6, lease=2.0)
    settings = Settings(
        home=tmp_path, provider="scripted", run_lease_s=2.0, database_url=database_url
    )
    watch = Store.open(settings)
    wait_for(lambda: len(watch.nodes_run(run_id)) >= 2, what="the hosted run to be mid-way")
    second = RunService(Store.open(settings), settings, timeout_tick_s=0)
    try:
        assert second.interrupted_at_start == 0
        with pytest.raises(ValueError, match="in progress in another app process"):
            second.resume(run_id)
        time.sleep(3.0)  # over a lease: the host renews, so its run stays its own
        assert watch.run(run_id).status == "running"
        kill(proc)
        wait_for(
            lambda: watch.run(run_id).status == "interrupted",
            timeout=15,
            what="the killed host's run to be marked interrupted once its lease ran out",
        )
        second.resume(run_id)
        finished = second.wait(run_id, timeout=120)
        assert finished.status == "done", finished.reason
        assert len(end_events(watch, run_id)) == 1
        assert watch.nodes_run(run_id).count("synthesizer") == 1
        assert_backend(tmp_path, database_url)
    finally:
        if proc.poll() is None:
            kill(proc)
        second.shutdown()
        watch.close()


def test_a_restarted_app_takes_over_at_once_the_runs_of_the_dead_process_it_replaces(
    tmp_path, monkeypatch, database_url
):
    """Same machine, the owner's process gone: no need to wait out its (default) lease."""
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    if database_url:
        monkeypatch.setenv("STEPWISE_DATABASE_URL", database_url)
    proc, run_id = host(tmp_path, QUESTION, delay=0.3, lease=30.0)
    watch = Store.open(Settings(home=tmp_path, database_url=database_url))
    wait_for(lambda: watch.nodes_run(run_id), what="the hosted run to get going")
    assert watch.run_lease(run_id)[1] > time.time() + 20  # a long lease, still held
    kill(proc)
    settings = Settings(home=tmp_path, provider="scripted", database_url=database_url)
    service = RunService(Store.open(settings), settings, timeout_tick_s=0)
    try:
        assert service.interrupted_at_start == 1
        assert watch.run(run_id).status == "interrupted"
        service.resume(run_id)
        assert service.wait(run_id, timeout=120).status == "done"
        assert_backend(tmp_path, database_url)
    finally:
        service.shutdown()
        watch.close()


RESUME_HOST = ROOT / "tests" / "support_procs" / "resume_host.py"


def test_two_app_processes_resuming_one_run_at_the_same_moment_run_it_once(tmp_path, database_url):
    """Two real processes sharing the home (or the PostgreSQL database) both try to resume
    the same stopped run at one instant: one runs it, the other makes no model call."""
    settings = Settings(
        home=tmp_path, provider="scripted", run_lease_s=2.0, database_url=database_url
    )
    first = RunService(
        Store.open(settings), settings, timeout_tick_s=0, model_factory=lambda r: CountedSlowModel()
    )
    MODEL_CALLS.clear()
    run_id = first.start(QUESTION, Design(max_replans=2, recursion_limit=60))
    wait_for(lambda: first.store.nodes_run(run_id), what="the run to get going")
    first.cancel(run_id)
    assert first.wait(run_id, timeout=30).status == "cancelled"
    first.shutdown()
    calls_before = len(MODEL_CALLS)
    env = {
        **os.environ,
        "STEPWISE_HOME": str(tmp_path),
        "STEPWISE_PROVIDER": "scripted",
        "STEPWISE_RUN_LEASE": "2.0",
    }
    env.pop("STEPWISE_DATABASE_URL", None)
    if database_url:
        env["STEPWISE_DATABASE_URL"] = database_url
    start_at = time.time() + 8  # both processes imported and waiting by then
    procs = [
        subprocess.Popen(
            [sys.executable, str(RESUME_HOST), run_id, str(start_at)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=180) for proc in procs]
    lines = [out.splitlines() for out, _ in outputs]
    assert all(proc.returncode == 0 for proc in procs), [err for _, err in outputs]
    winners = [i for i, out in enumerate(lines) if "resumed" in out]
    assert len(winners) == 1, lines
    winner, loser = lines[winners[0]], lines[1 - winners[0]]
    assert "ended: done" in winner
    assert any("in progress in another app process" in line for line in loser), loser
    assert "call" not in loser  # the loser never ran a step
    watch = Store.open(settings)
    try:
        ends = [e["data"]["status"] for e in end_events(watch, run_id)]
        assert ends == ["cancelled", "done"]
        assert watch.nodes_run(run_id).count("synthesizer") == 1
        assert llm_calls(watch, run_id) == calls_before + winner.count("call")
    finally:
        watch.close()
    assert_backend(tmp_path, database_url)


def test_on_postgresql_a_machine_whose_clock_runs_ahead_cannot_take_over_a_held_run(
    tmp_path, postgres_url, monkeypatch
):
    """Leases are kept in the server's clock: an app process on a machine an hour ahead
    still sees another's fresh lease as held."""
    settings = Settings(home=tmp_path, database_url=postgres_url)
    here, ahead = Store.open(settings), Store.open(settings)
    here.create_run("r", QUESTION, Design(), "m", owner="here", lease_s=30)
    here.set_run_status("r", "running")
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 3600)
    assert not ahead.claim_run("r", "ahead", 30)
    assert ahead.mark_interrupted() == 0 and ahead.run("r").status == "running"
    assert abs(ahead.lease_clock() - real_time()) < 5  # the server's time, not this one's
    monkeypatch.undo()
    here.close(), ahead.close()
