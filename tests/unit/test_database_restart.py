"""A PostgreSQL restart under a live app process costs the run it cut off, nothing more.

Before the fix, the side-effect ledger kept the connection it opened first, so after a
restart every later run that recorded a side effect failed ("consuming input failed:
server closed the connection unexpectedly", then "the connection is closed"); the run the
outage cut off stayed "running", its resume refused as "already in progress" until its
lease ran out, and then it read "The app stopped while this run was in progress", or raw
psycopg text. A real PostgreSQL server of this test's own (it is halted with
``pg_ctl stop -m immediate`` and started again), the run service in this process.
"""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.kernel.ledger import side_effect_ledger
from graph.models.scripted import ScriptedChatModel
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.unit.conftest import wait_for

REPORT = "What caused the dot-com crash? Save a report."
CHART = "Which stock in the database grew the most between 2005 and 2009? Chart the prices."
NO_APPROVAL = Design(approvals={"report_writer": "never"})


@pytest.fixture
def own_postgres():
    """A PostgreSQL server for this test alone: halting the session's would cut the
    other tests' databases."""
    from tests.support_procs import postgres_server

    server = postgres_server.start()
    yield server
    server.stop()


def test_after_a_postgresql_restart_later_runs_succeed_and_the_cut_off_run_resumes_at_once(
    tmp_path, own_postgres
):
    url = own_postgres.create_database()
    # A lease far longer than the test: the cut-off run must be resumable without it
    # running out.
    settings = Settings(home=tmp_path, provider="scripted", database_url=url, run_lease_s=300)
    service = RunService(
        Store.open(settings),
        settings,
        timeout_tick_s=0,
        model_factory=lambda role: ScriptedChatModel(delay_s=0.3),
    )
    try:
        before = service.start(REPORT, NO_APPROVAL)  # store, checkpoints and ledger in use
        assert service.wait(before, timeout=120).status == "done"
        assert side_effect_ledger(settings).count(before, finished_only=True) == 1

        cut = service.start(CHART, Design(max_replans=2, recursion_limit=60))
        wait_for(lambda: len(service.store.nodes_run(cut)) >= 2, what="the run to be mid-way")
        own_postgres.halt()
        wait_for(
            lambda: not service.is_live(cut), timeout=120, what="the outage to cut the run off"
        )
        own_postgres.restart()

        # Marked with the true reason, in words, and let go of: resumable at once.
        record = wait_for(
            lambda: (r := service.store.run(cut)).status != "running" and r,
            timeout=60,
            what="the cut-off run's end to be recorded once the database is back",
        )
        assert record.status == "interrupted", record.reason
        assert record.reason.startswith("The database went away during this run"), record.reason
        assert "stopped while this run" not in record.reason
        assert "consuming input" not in record.reason and "connection" not in record.reason
        assert service.store.run_lease(cut) == (None, None)
        service.resume(cut)
        resumed = service.wait(cut, timeout=120)
        assert resumed.status == "done", resumed.reason
        ends = [e["data"]["status"] for e in service.store.events(cut, kinds=("end",))]
        assert ends == ["done"], ends  # the outage's end could not be written: one end

        # Every later run succeeds, the ones with a side effect too (the ledger's
        # connection, the checkpointer's pool and the store's connection all renewed).
        later = [service.start(REPORT, NO_APPROVAL), service.start(CHART, Design())]
        for run_id in later:
            finished = service.wait(run_id, timeout=120)
            assert finished.status == "done", finished.reason
        assert side_effect_ledger(settings).count(later[0], finished_only=True) == 1
        assert len(list((tmp_path / "reports").glob("*.md"))) == 2
    finally:
        service.shutdown()
