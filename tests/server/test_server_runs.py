"""The app's LangGraph Server runtime against a real ``langgraph dev`` (no fake server):
runs started, streamed to their answer and mirrored into the store as a local run writes
them, an approval answered through the runtime, a run cancelled, forked and listed, and a
server that is down said in one sentence.

The served graphs' scripted model pauses 0.3 s per call, so a run lasts long enough to be
stopped half way.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graph.kernel.design import Design
from graph.prompts import default_text
from graph.service.eval_sets import Check, EvalQuestion, EvalSet
from graph.service.experiment_comparison import compare
from graph.service.experiment_variants import Variant
from graph.service.experiments import ExperimentRunner
from graph.service.run_service import RunService
from graph.service.server_runs import (
    ServerGraph,
    ServerRunService,
    ServerUnavailable,
    open_run_service,
    thread_of,
)
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs import langgraph_server

QUESTION = "What was Apple's revenue in 2023?"
ASK_EACH_STEP = "What caused the dot-com crash? Ask me before each step."
# What only one runtime writes: tool timings (a local run's callback), the note naming the
# server run. Model calls are reported by both (compared on their own below: their
# latencies differ).
RUNTIME_NOTES = ("llm_call", "tool_call", "server", "paced")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    served = langgraph_server.start(
        tmp_path_factory.mktemp("langgraph-dev"), env={"STEPWISE_SCRIPTED_DELAY": "0.3"}
    )
    yield served
    served.stop()


@pytest.fixture
def settings(tmp_path, server) -> Settings:
    return Settings(home=tmp_path, provider="scripted", server_url=server.url)


@pytest.fixture
def store(settings):
    opened = Store.open(settings)
    yield opened
    opened.close()


@pytest.fixture
def runs(store, settings):
    service = ServerRunService(store, settings, timeout_tick_s=0)
    yield service
    service.shutdown()


def _log(store: Store, run_id: str) -> list[tuple]:
    """A run's event log as the pages read it, without the runtimes' own notes."""
    return [
        (e["kind"], e["node"], e["namespace"].split(":")[0], e["step"])
        for e in store.events(run_id)
        if not (e["kind"] == "custom" and set(e["data"] or {}) & set(RUNTIME_NOTES))
    ]


def _wait(store: Store, run_id: str, statuses: tuple[str, ...], timeout: float = 60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        record = store.run(run_id)
        if record and record.status in statuses:
            return record
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} is {store.run(run_id).status}, not in {statuses}")


def test_the_runtime_is_the_server_only_when_its_url_is_set(store, settings):
    local = open_run_service(store, settings.model_copy(update={"server_url": ""}))
    remote = open_run_service(store, settings, timeout_tick_s=0)
    try:
        assert type(local) is RunService
        assert isinstance(remote, ServerRunService) and remote.url == settings.server_url
    finally:
        local.shutdown()
        remote.shutdown()


def test_a_server_run_streams_to_its_answer_and_is_logged_as_a_local_run_is(
    runs, store, settings, tmp_path
):
    assert runs.health() == ""
    run_id = runs.start(QUESTION, Design())
    record = runs.wait(run_id, timeout=60)
    assert record.status == "done", record.reason
    assert record.final_answer.startswith(f'Answer to "{QUESTION}"')

    home = tmp_path / "local"
    local_settings = settings.model_copy(update={"home": home, "server_url": ""})
    local_store = Store.open(local_settings)
    local = RunService(local_store, local_settings, timeout_tick_s=0)
    try:
        local_id = local.start(QUESTION, Design())
        assert local.wait(local_id, timeout=60).status == "done"
        # Same events in the same order, each node update keyed by its task, sub-agents'
        # updates under their namespace; same messages; same snapshot of the state.
        assert _log(store, run_id) == _log(local_store, local_id)
        assert ("update", "model", "web_researcher", 1) in _log(store, run_id)
        calls = [
            (e["namespace"].split(":")[0], e["data"]["llm_call"]["node"])
            for e in store.events(run_id, kinds=("custom",))
            if "llm_call" in (e["data"] or {})
        ]
        assert calls and calls == [
            (e["namespace"].split(":")[0], e["data"]["llm_call"]["node"])
            for e in local_store.events(local_id, kinds=("custom",))
            if "llm_call" in (e["data"] or {})
        ]
        keys = store.update_keys(run_id)
        assert keys and len(keys) == len(local_store.update_keys(local_id))
        strip = lambda ms: [{k: v for k, v in m.items() if k != "id"} for m in ms]  # noqa: E731
        assert strip(store.messages(run_id)) == strip(local_store.messages(local_id))
        ours, theirs = store.snapshot(run_id), local_store.snapshot(local_id)
        # (the conversation's turns carry their own ids and times)
        assert {**ours, "conversation": None} == {**theirs, "conversation": None}
        assert ours["conversation"].keys() == theirs["conversation"].keys()
    finally:
        local.shutdown()
        local_store.close()

    # It ran on the server: its thread holds the run, which the server lists as done.
    (listed,) = runs.server_runs(run_id)
    assert listed["status"] == "success" and listed["thread_id"] == thread_of(run_id)
    note = next(e["data"]["server"] for e in store.events(run_id) if "server" in e["data"])
    assert note == {"url": settings.server_url, "thread_id": thread_of(run_id), **note}
    assert runs.state(run_id)["final_answer"] == record.final_answer


def test_an_approval_is_answered_through_the_runtime_with_command_resume(runs, store):
    run_id = runs.start(ASK_EACH_STEP, Design())
    assert runs.wait(run_id, timeout=60).status == "waiting"
    (pending,) = runs.pending_approvals()
    assert pending["run_id"] == run_id and pending["agent"] == "web_researcher"
    with pytest.raises(ValueError, match="no longer pending"):
        runs.decide(run_id, "not-an-interrupt", "approve")

    runs.decide(run_id, pending["id"], "approve")
    record = _wait(store, run_id, ("done", "failed", "waiting"))
    while record.status == "waiting":  # the planner asks before each step
        for item in runs.pending_approvals():
            runs.decide(run_id, item["id"], "approve")
        record = _wait(store, run_id, ("done", "failed", "waiting"))
    assert record.status == "done", record.reason
    assert runs.pending_approvals() == []
    assert {d["decided"]["decision"] for d in store.decisions_since(0)} == {"approve"}
    # The first run waited, each decision was a run resuming the thread.
    listed = runs.server_runs(run_id)
    assert len(listed) >= 2 and {r["status"] for r in listed} == {"success"}


def test_a_cancelled_server_run_stops_there_and_keeps_its_progress(runs, store):
    run_id = runs.start(QUESTION, Design())
    _wait(store, run_id, ("running",))
    deadline = time.time() + 30
    while not any(e["kind"] == "update" for e in store.events(run_id)):
        assert time.time() < deadline, "no node finished"
        time.sleep(0.05)
    assert runs.cancel(run_id)
    record = runs.wait(run_id, timeout=30)
    assert record.status == "cancelled"
    assert not record.final_answer
    assert runs.server_runs(run_id)[0]["status"] == "interrupted"
    assert runs.state(run_id).get("plan")  # the planner's work is kept on the server
    assert not runs.cancel(run_id)  # no longer live


def test_a_fork_is_a_new_server_thread_going_on_from_the_checkpoint(runs, store):
    run_id = runs.start(QUESTION, Design())
    assert runs.wait(run_id, timeout=60).status == "done"
    timeline = runs.timeline(run_id)
    assert [row["node"] for row in timeline][-3:] == ["web_researcher", "executor", "synthesizer"]
    after_planner = next(row for row in timeline if row["node"] == "planner")

    new_plan = {
        "1": {"agent": "web_researcher", "action": "Search the documents for: the dot-com crash"},
        "2": {"agent": "synthesizer", "action": "Answer from the findings."},
    }
    fork_id = runs.fork(run_id, after_planner["checkpoint_id"], {"plan": new_plan})
    record = runs.wait(fork_id, timeout=60)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (
        run_id,
        after_planner["checkpoint_id"],
    )
    assert [r["action"] for r in store.snapshot(fork_id)["rows"]] == [
        s["action"] for s in new_plan.values()
    ]
    # Its own thread: it starts at the forked checkpoint, the parent's is unchanged.
    assert [row["node"] for row in runs.timeline(fork_id)][:2] == ["input", "executor"]
    assert runs.state(run_id)["plan"] != runs.state(fork_id)["plan"]
    with pytest.raises(ValueError, match="run's input"):
        runs.fork(run_id, timeline[0]["checkpoint_id"])


def test_a_prompt_fork_is_a_new_server_thread_with_the_parents_calls_before_it_copied(runs, store):
    """A fork with another prompt goes through the executor as a fork does: a new server
    thread from the checkpoint (none in this process's checkpointer), the parent's calls
    before the checkpoint copied into its log as replayed, read from the server's
    checkpoints (the local checkpointer has none: this failed before)."""
    executor_prompt = "plan_execute/executor"
    run_id = runs.start(QUESTION, Design())
    assert runs.wait(run_id, timeout=60).status == "done"
    after_planner = next(row for row in runs.timeline(run_id) if row["node"] == "planner")
    text = "Tuned for the fork: say why in one short sentence.\n" + default_text(executor_prompt)

    fork_id = runs.fork_with_prompt(run_id, after_planner["checkpoint_id"], executor_prompt, text)
    record = runs.wait(fork_id, timeout=60)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (run_id, after_planner["checkpoint_id"])
    [version] = store.prompt_versions(executor_prompt)
    assert record.prompt_versions[executor_prompt] == version.id
    assert [row["node"] for row in runs.timeline(fork_id)][:2] == ["input", "executor"]
    assert not list(runs.checkpointer.list({"configurable": {"thread_id": fork_id}}))
    calls = [
        e["data"]["llm_call"]
        for e in store.events(fork_id, kinds=("custom",))
        if "llm_call" in (e.get("data") or {})
    ]
    replayed = [c["node"] for c in calls if c.get("replayed_from") == f"run {run_id}"]
    assert replayed and set(replayed) == {"planner"}
    assert any(not c.get("replayed") and c["node"] == "executor" for c in calls)


def test_a_forks_first_checkpoint_forks_again_on_the_server_and_a_runs_input_does_not(runs, store):
    """One check for both runtimes (``fork_point``): the server refused a fork's first
    checkpoint as "the run's input"."""
    run_id = runs.start(QUESTION, Design())
    assert runs.wait(run_id, timeout=60).status == "done"
    timeline = runs.timeline(run_id)
    after_planner = next(row for row in timeline if row["node"] == "planner")
    first = runs.fork(run_id, after_planner["checkpoint_id"])
    assert runs.wait(first, timeout=60).status == "done"
    opening = runs.timeline(first)[0]
    assert timeline[0]["input"] and not opening["input"]

    second = runs.fork(first, opening["checkpoint_id"])
    record = runs.wait(second, timeout=60)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (first, opening["checkpoint_id"])
    went = [(row["node"], row["next"]) for row in runs.timeline(second)]
    assert went[1:] == [(row["node"], row["next"]) for row in runs.timeline(first)][1:]
    with pytest.raises(ValueError, match="this one is the run's input"):
        runs.fork(run_id, timeline[0]["checkpoint_id"])


def test_an_experiment_fans_out_as_server_runs_and_is_compared_as_locally(runs, store):
    eval_set = EvalSet(
        name="two",
        questions=[
            EvalQuestion(question=QUESTION, checks=[Check(kind="answer_contains", value="Apple")]),
            EvalQuestion(question="How did IBM's stock do in 2008?"),
        ],
    )
    experiments = ExperimentRunner.of(runs)
    experiment_id = experiments.start(
        "on the server", eval_set, [Variant(name="default")], repeats=2, approvals="auto"
    )
    experiments.wait(experiment_id, timeout=120)
    assert experiments.progress(experiment_id) == (4, 4)
    run_ids = [r["run_id"] for r in store.experiment_runs(experiment_id)]
    for run_id in run_ids:
        assert store.run(run_id).status == "done"
        assert [r["status"] for r in runs.server_runs(run_id)] == ["success"]
        calls = [e for e in store.events(run_id, kinds=("custom",)) if "llm_call" in e["data"]]
        assert calls  # the comparison's calls and tokens come from these
    summary = compare(store, experiment_id, "default").summary["default"]
    assert summary["runs"] == 4 and summary["passed"] == 4
    assert summary["llm_calls"]["mean"] > 0 and summary["tokens"]["mean"] > 0


def test_a_server_that_is_down_is_said_in_one_sentence_and_nothing_recorded(store, settings):
    down = ServerRunService(
        store, settings.model_copy(update={"server_url": "http://127.0.0.1:9"}), timeout_tick_s=0
    )
    try:
        started = time.monotonic()
        with pytest.raises(ServerUnavailable, match="did not answer") as caught:
            down.start(QUESTION, Design())
        assert time.monotonic() - started < 5  # no long back-off before saying so
        assert "nothing was lost" in str(caught.value) and "\n" not in str(caught.value)
        assert store.runs() == [] and down.live_runs() == []
        assert down.health() == str(caught.value)
    finally:
        down.shutdown()


def test_a_follow_up_to_a_finished_server_run_starts_a_new_turn_on_its_thread(runs, store):
    run_id = runs.start("How did Tesla's stock do in 2008?", Design())
    assert runs.wait(run_id, timeout=60).status == "done"
    first = store.snapshot(run_id)["final_answer"]
    runs.send_message(run_id, "How did IBM's stock do in 2008?")
    record = runs.wait(run_id, timeout=60)
    assert record.status == "done", record.reason
    snapshot = store.snapshot(run_id)
    turns = snapshot["conversation"]["turns"]
    assert [t["status"] for t in turns] == ["answered", "answered"]
    assert turns[0]["answer"] == first and snapshot["final_answer"] != first
    assert "IBM" in snapshot["final_answer"]
    assert [r["step"] for r in snapshot["rows"]][0] == 1
    assert len(runs.server_runs(run_id)) == 2  # the follow-up was a run on the same thread
    with pytest.raises(ValueError, match="empty"):
        runs.send_message(run_id, "   ")


def test_a_message_to_a_server_run_waiting_for_a_human_is_refused_in_words(runs, store):
    run_id = runs.start(ASK_EACH_STEP, Design())
    assert runs.wait(run_id, timeout=60).status == "waiting"
    with pytest.raises(ValueError, match="answer or resume it first"):
        runs.send_message(run_id, "And Amazon?")
    assert store.run(run_id).status == "waiting"
    assert runs.pending_approvals()  # still there to answer


def test_a_run_whose_app_process_was_killed_is_followed_again_to_its_end(server, tmp_path):
    """The app process dies mid-run; the run goes on on the server; the next process on
    the same home follows it again: nothing lost, nothing logged twice."""
    settings = Settings(home=tmp_path, provider="scripted", server_url=server.url, run_lease_s=1.0)
    host = Path(__file__).resolve().parents[1] / "support_procs" / "server_host.py"
    done = subprocess.run(
        [sys.executable, str(host), str(tmp_path), server.url, QUESTION],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    run_id = done.stdout.split()[0]
    store = Store.open(settings)
    assert store.run(run_id).status == "running"
    time.sleep(1.2)  # the dead process's lease runs out
    again = ServerRunService(store, settings, timeout_tick_s=0)
    try:
        assert again.followed_at_start == 1
        record = again.wait(run_id, timeout=60)
        assert record.status == "done", record.reason
        top = [e["node"] for e in store.events(run_id, kinds=("update",)) if not e["namespace"]]
        assert top == ["planner", "executor", "web_researcher", "executor", "synthesizer"]
        assert [e["kind"] for e in store.events(run_id)].count("end") == 1
        assert store.snapshot(run_id)["final_answer"] == record.final_answer
    finally:
        again.shutdown()
        store.close()


def test_a_step_mode_server_run_pauses_before_each_node_and_resumes_one_at_a_time(runs, store):
    run_id = runs.start(QUESTION, Design(), step_mode=True)
    record = runs.wait(run_id, timeout=60)
    assert record.status == "paused" and "planner" in record.reason
    graph = ServerGraph(runs.prepare(Design())[0], runs)
    assert graph.get_state({"configurable": {"thread_id": run_id}}).next == ("planner",)
    runs.resume(run_id, step_mode=True)
    record = runs.wait(run_id, timeout=60)
    assert record.status == "paused" and "executor" in record.reason
    assert [e["node"] for e in store.events(run_id, kinds=("update",))] == ["planner"]
    runs.resume(run_id)
    assert runs.wait(run_id, timeout=60).status == "done"
    with pytest.raises(ValueError, match="cannot be resumed"):
        runs.resume(run_id)


def test_on_a_shared_postgresql_store_an_approval_from_another_app_process_resumes_once(
    server, tmp_path, postgres_url
):
    """Two app processes (two homes: two machines) share one PostgreSQL store and one
    server: a run started by the first waits; the second sees the approval, answers it,
    and the server run resumes once to the end, which both see."""
    services = []
    for machine in ("a", "b"):
        settings = Settings(
            home=tmp_path / machine,
            provider="scripted",
            server_url=server.url,
            database_url=postgres_url,
        )
        services.append(ServerRunService(Store.open(settings), settings, timeout_tick_s=0))
    first, second = services
    try:
        run_id = first.start(ASK_EACH_STEP, Design())
        assert first.wait(run_id, timeout=60).status == "waiting"
        decided = 0
        record = second.store.run(run_id)
        while record.status == "waiting":
            for item in second.pending_approvals():
                second.decide(run_id, item["id"], "approve")
                decided += 1
            record = _wait(second.store, run_id, ("done", "failed", "waiting"))
        assert record.status == "done", record.reason
        assert decided >= 1
        assert first.store.run(run_id).status == "done"
        assert len(second.store.decisions_since(0)) == decided
        # each decision resumed the thread once: the first run plus one per decision
        assert len(second.server_runs(run_id)) == 1 + decided
        assert not (tmp_path / "a" / "stepwise.sqlite").exists()
    finally:
        for service in services:
            service.shutdown()
