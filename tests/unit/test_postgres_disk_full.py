"""A full disk under a PostgreSQL store, for real: the test database's tablespace on a
small tmpfs only the server sees (``tests/support_procs/postgres_small_disk.py``), filled
by the test. PostgreSQL then refuses to extend a table with SQLSTATE 53100 ("could not
extend file ...: No space left on device"); a person starting a run must read a
sentence, not psycopg's text, and no run may be left "running" by a write refused.
"""

from __future__ import annotations

import pytest

from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.disk_space import DiskFull
from graph.service.run_service import RunService
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs import postgres_small_disk
from tests.unit.conftest import wait_for

pytestmark = pytest.mark.skipif(
    bool(postgres_small_disk.unusable()),
    reason=f"no PostgreSQL on a small disk here: {postgres_small_disk.unusable()}",
)

FULL = "The disk holding the store is full"
QUESTION = "What caused the dot-com crash?"
RAW = ("psycopg", "53100", "No space left", "could not extend", "DiskFull(")


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own, its databases on a small disk."""
    server = postgres_small_disk.start()
    yield server
    server.stop()


def test_postgresql_on_a_full_disk_says_so_and_leaves_no_run_running(tmp_path, own_postgres):
    url = own_postgres.create_database()
    settings = Settings(home=tmp_path, provider="scripted", database_url=url)
    service = RunService(
        Store.open(settings),  # its tables made while there is room, and empty
        settings,
        timeout_tick_s=0,
        model_factory=lambda role: ScriptedChatModel(delay_s=0.2),
    )
    store = service.store
    try:
        own_postgres.fill()
        with pytest.raises(DiskFull) as refused:  # a new run's row needs a new page
            service.start(QUESTION, Design())
        said = str(refused.value)
        assert said.startswith(f"{FULL}: "), said
        assert not any(raw in said for raw in RAW), said
        assert store.runs() == []  # nothing recorded half-way

        own_postgres.free()
        run_id = service.start(QUESTION, Design())
        wait_for(lambda: len(store.events(run_id)) >= 4, timeout=120, what="the run mid-way")
        own_postgres.fill()
        ended = service.wait(run_id, timeout=120)  # the disk still full: how it ended, held
        assert ended.status == "interrupted", (ended.status, ended.reason)
        assert ended.reason.startswith(f"{FULL}: "), ended.reason
        own_postgres.free()
        # Written at once, or (no room even for that) once the store takes it again.
        record = wait_for(
            lambda: (r := store.run(run_id)).status not in ("queued", "running") and r,
            timeout=60,
            what="the cut-off run's end to be recorded",
        )
        assert record.status == "interrupted", (record.status, record.reason)
        assert record.reason.startswith(f"{FULL}: ") and "resume the run" in record.reason
        assert not any(raw in record.reason for raw in RAW), record.reason
        service.resume(run_id)
        assert service.wait(run_id, timeout=120).status == "done"
    finally:
        service.shutdown()
