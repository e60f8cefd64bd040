"""The event log agrees with the checkpoints after a crash: real processes SIGKILLed at
chosen points (tests/support_procs/kill_host.py), resumed by a new service.

After the resume, the run's top-level path is the path of the same run never killed
(each node once, no LangGraph pseudo-node), there is one end event, and the log holds
one llm_call event per model call really made (counted in a file by both processes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_records import event_record
from graph.service.run_service import RunService
from graph.service.runs import continue_run
from graph.service.store import Store
from graph.settings import Settings
from tests.conftest import assert_backend
from tests.support import ROOT
from tests.unit.conftest import wait_for

HOST = ROOT / "tests" / "support_procs" / "kill_host.py"
QUESTION = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
LEASE_S = 1.0


def design() -> Design:
    return Design(max_replans=2, recursion_limit=60)  # as kill_host.py runs it


def counting_model(calls_file):
    class CountingModel(ScriptedChatModel):
        def _generate(self, *args, **kwargs):
            result = super()._generate(*args, **kwargs)
            with open(calls_file, "a") as calls:
                calls.write("call\n")
            return result

    return CountingModel()


def llm_calls(store: Store, run_id: str) -> int:
    return sum(
        1
        for e in store.events(run_id, kinds=("custom",))
        if isinstance(e["data"], dict) and "llm_call" in e["data"]
    )


@pytest.fixture(scope="module")
def reference_path(tmp_path_factory) -> list[str]:
    """The top-level nodes of the run never killed."""
    home = tmp_path_factory.mktemp("reference")
    settings = Settings(home=home, provider="scripted")
    service = RunService(Store.open(settings), settings, timeout_tick_s=0)
    try:
        run_id = service.start(QUESTION, design())
        assert service.wait(run_id, timeout=60).status == "done"
        return service.store.nodes_run(run_id)
    finally:
        service.shutdown()


@pytest.mark.parametrize(
    "trigger",
    [
        "call:1",  # mid-planner, right after its model call
        "call:5",  # inside a sub-agent
        "call:9",
        "saved:planner",  # its writes checkpointed, its update not yet logged
        "stored:planner",  # its writes checkpointed and its update logged
        "stored:chart_generator",  # a sub-agent node
        "stored:synthesizer",  # the last node: its end not logged yet, nothing left to run
    ],
)
def test_a_run_killed_at_any_point_resumes_with_a_log_matching_its_checkpoints(
    trigger, reference_path, tmp_path, monkeypatch
):
    kill_and_resume(trigger, reference_path, tmp_path, monkeypatch, None)


@pytest.mark.parametrize("trigger", ["call:5", "saved:planner", "stored:chart_generator"])
def test_a_run_killed_on_postgresql_resumes_with_a_log_matching_its_checkpoints(
    trigger, reference_path, tmp_path, monkeypatch, postgres_url
):
    """The same, with the store and the checkpoints in one PostgreSQL database."""
    kill_and_resume(trigger, reference_path, tmp_path, monkeypatch, postgres_url)
    assert_backend(tmp_path, postgres_url)


def kill_and_resume(trigger, reference_path, tmp_path, monkeypatch, database_url) -> None:
    """Kill a hosting process at ``trigger``, resume its run in a new service: the log
    ends as the never-killed run's, with one end and every model call in it."""
    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path))
    calls_file = tmp_path / "model_calls.txt"
    env = {**os.environ, "STEPWISE_HOME": str(tmp_path), "STEPWISE_RUN_LEASE": str(LEASE_S)}
    env.pop("STEPWISE_DATABASE_URL", None)
    if database_url:
        env["STEPWISE_DATABASE_URL"] = database_url
    proc = subprocess.Popen(
        [sys.executable, str(HOST), QUESTION, trigger, str(calls_file)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    run_id = proc.stdout.readline().strip()
    assert run_id, "the host process did not start a run"
    assert proc.wait(timeout=90) == -signal.SIGKILL, proc.stdout.read()

    settings = Settings(
        home=tmp_path, provider="scripted", run_lease_s=LEASE_S, database_url=database_url
    )
    service = RunService(
        Store.open(settings),
        settings,
        timeout_tick_s=0,
        model_factory=lambda role: counting_model(calls_file),
    )
    try:
        wait_for(
            lambda: service.store.run(run_id).status == "interrupted",
            timeout=15,
            what="the killed run to be marked interrupted",
        )
        service.resume(run_id)
        assert service.wait(run_id, timeout=120).status == "done"
        store = service.store
        assert store.nodes_run(run_id) == reference_path
        assert not [e for e in store.events(run_id, kinds=("update",)) if e["node"][:2] == "__"]
        assert [e["data"]["status"] for e in store.events(run_id, kinds=("end",))] == ["done"]
        assert llm_calls(store, run_id) == len(calls_file.read_text().splitlines())
    finally:
        service.shutdown()


def test_replaying_a_checkpointed_update_already_in_the_log_stores_it_once(settings):
    """Without a kill: stop the stream right after the executor's update (its writes
    saved, the next checkpoint not written), then resume from there with that update
    already logged; LangGraph replays it, and the log keeps one copy and no pseudo-node."""
    from graph.plan_execute import SYSTEM
    from graph.service.run_records import missed_updates
    from graph.service.run_storage import checkpointer_for

    store = Store.open(settings)
    store.create_run("t-replay", QUESTION, design(), "offline scripted model")
    graph = SYSTEM.build_graph(design(), settings=settings, checkpointer=checkpointer_for(settings))

    def log(event):
        store.append_event("t-replay", event_record(event, "plan_execute"))
        if event.kind == "update" and event.node == "executor" and not event.namespace:
            raise KeyboardInterrupt  # stop here, as a kill would (not caught by the run)

    with pytest.raises(KeyboardInterrupt):
        continue_run(
            graph,
            SYSTEM.initial_state(QUESTION, design()),
            "t-replay",
            design(),
            settings=settings,
            on_event=log,
        )
    assert store.nodes_run("t-replay") == ["planner", "executor"]
    assert missed_updates(graph, "t-replay", store.update_keys("t-replay")) == []
    outcome = continue_run(
        graph,
        None,
        "t-replay",
        design(),
        settings=settings,
        on_event=lambda e: store.append_event("t-replay", event_record(e, "plan_execute")),
    )
    assert outcome.status == "done"
    nodes = store.nodes_run("t-replay")
    assert nodes[:3] == ["planner", "executor", "data_researcher"], nodes
    assert not [n for n in nodes if n.startswith("__")]
    store.close()


def test_an_update_missing_from_the_log_is_recovered_from_the_checkpoints_on_resume(
    settings,
):
    """A kill after the checkpoint after a node was written, before the node's update was
    logged, loses the update for good unless resume reads it back from the checkpoints."""
    from graph.service.run_records import missed_updates

    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    compiled = service.models.graph(design())[0]
    store.create_run("t-lost", QUESTION, design(), "offline scripted model")
    dropped: list[str] = []

    def log_all_but_the_first_executor_update(event):
        if event.kind == "update" and event.node == "executor" and not dropped:
            dropped.append(event.key)
            return
        store.append_event("t-lost", event_record(event, "plan_execute"))

    from graph.plan_execute import SYSTEM

    outcome = continue_run(
        compiled,
        SYSTEM.initial_state(QUESTION, design()),
        "t-lost",
        design(),
        settings=settings,
        on_event=log_all_but_the_first_executor_update,
    )
    assert outcome.status == "done" and dropped
    nodes = store.nodes_run("t-lost")
    assert nodes[:2] == ["planner", "data_researcher"]  # the executor's first step is missing
    (missing,) = missed_updates(compiled, "t-lost", store.update_keys("t-lost"))
    assert (missing.node, missing.key) == ("executor", dropped[0])
    service.reconcile_events("t-lost", design(), compiled)
    assert store.nodes_run("t-lost").count("executor") == nodes.count("executor") + 1
    assert missed_updates(compiled, "t-lost", store.update_keys("t-lost")) == []
    service.shutdown()
