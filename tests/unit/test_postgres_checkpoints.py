"""Runs whose checkpoints live in PostgreSQL (``langgraph-checkpoint-postgres``, with our
serializer): approved from another app process, resumed, forked, long texts stored once.
A real PostgreSQL server started by the tests; nothing goes to a SQLite file."""

from __future__ import annotations

import psycopg
import pytest

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.conftest import assert_backend
from tests.unit.conftest import wait_status

REPORT = "What caused the dot-com crash? Save a report."
TESLA = "How did Tesla's stock do in 2008?"


@pytest.fixture
def pg_services(tmp_path, postgres_url):
    """Run services on one PostgreSQL database, as app processes on several machines."""
    settings = Settings(home=tmp_path, provider="scripted", database_url=postgres_url)
    made: list[RunService] = []

    def make() -> RunService:
        made.append(RunService(Store.open(settings), settings, timeout_tick_s=0))
        return made[-1]

    yield make
    for service in made:
        service.shutdown()
    assert_backend(tmp_path, postgres_url)


def checkpoints_in_postgres(url: str, run_id: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE thread_id = %s", (run_id,)
        ).fetchone()[0]


def test_an_approval_answered_in_another_process_resumes_the_run_from_postgresql(
    pg_services, postgres_url
):
    first, second = pg_services(), pg_services()
    run_id = first.start(REPORT, Design())
    wait_status(first, run_id, "waiting")
    assert checkpoints_in_postgres(postgres_url, run_id) > 0
    (pending,) = second.pending_approvals()
    second.decide(run_id, pending["id"], "approve")
    record = second.wait(run_id, timeout=60)
    assert record.status == "done", record.reason
    ends = [e["data"]["status"] for e in first.store.events(run_id, kinds=("end",))]
    assert ends == ["waiting", "done"]
    assert first.store.nodes_run(run_id).count("synthesizer") == 1
    assert first.state(run_id)["final_answer"] == record.final_answer  # read from PostgreSQL


def test_a_stopped_run_resumes_and_a_fork_starts_from_a_postgresql_checkpoint(pg_services):
    service = pg_services()
    run_id = service.start(TESLA, Design(), step_mode=True)
    wait_status(service, run_id, "paused")
    service.resume(run_id)
    assert service.wait(run_id, timeout=60).status == "done"
    other = pg_services()  # another process reads the same checkpoints
    timeline = other.timeline(run_id)
    assert [row["node"] for row in timeline][:4] == ["input", "__start__", "planner", "executor"]
    after_plan = next(row for row in timeline if row["node"] == "planner")
    plan = {
        "1": {"agent": "web_researcher", "action": "Search the documents for: the 2008 crisis"},
        "2": {"agent": "synthesizer", "action": "Answer from the findings."},
    }
    fork = other.fork(run_id, after_plan["checkpoint_id"], {"plan": plan})
    record = other.wait(fork, timeout=60)
    assert record.status == "done", record.reason
    assert (record.parent_run, record.parent_checkpoint) == (run_id, after_plan["checkpoint_id"])
    rows = other.store.snapshot(fork)["rows"]
    assert [r["agent"] for r in rows] == ["web_researcher", "synthesizer"]


def test_a_long_text_in_postgresql_checkpoints_is_stored_once_and_read_back(tmp_path, postgres_url):
    from graph.service.run_storage import checkpointer_for

    saver = checkpointer_for(Settings(home=tmp_path, database_url=postgres_url))
    try:
        text = "finding " * 2000
        kind, blob = saver.serde.dumps_typed({"a": text, "b": [text]})
        assert len(blob) < 1000
        assert saver.serde.loads_typed((kind, blob)) == {"a": text, "b": [text]}
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("SELECT COUNT(*) FROM stepwise_texts").fetchone()[0] == 1
    finally:
        saver.conn.close()
    assert not (tmp_path / "checkpoints.sqlite").exists()
