"""A run cut off by a full PostgreSQL disk is shown stopped, with why, on the Run page.

The run's worker ends it "interrupted" and keeps that end until the store takes it again
(``RunWrites.end_or_keep``), but the store's row still said "running": the page read
only the row, so it showed the run running, with a Stop button, for as long as the disk
stayed full. The database's tablespace is on a small tmpfs the test fills
(``tests/support_procs/postgres_small_disk.py``, root only), as in
``tests/unit/test_postgres_disk_full.py``, and the room left inside its tables' pages
too (``tests/support_procs/postgres_full_tables.py``): a full disk with room in the runs
table's page still took the run's end (an UPDATE of its row fits in its own page once
the row is written once a batch), and the page was never put to the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from graph.kernel.design import Design
from graph.settings import get_settings
from tests.app.support import APP, TIMEOUT, button, texts
from tests.support_procs import postgres_small_disk
from tests.unit.conftest import wait_for

pytestmark = pytest.mark.skipif(
    bool(postgres_small_disk.unusable()),
    reason=f"no PostgreSQL on a small disk here: {postgres_small_disk.unusable()}",
)

FULL = "The disk holding the store is full: "
RAW = ("psycopg", "53100", "No space left", "could not extend", "DiskFull(")


def open_run_page(run_id: str) -> AppTest:
    """The Run page on ``run_id``, in this process: its run service is the one that ran
    the run and holds how it ended."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["run"] = run_id
    at.run()
    at.switch_page("app_pages/run.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def own_postgres():
    """A PostgreSQL server of this test's own, its databases on a small disk."""
    server = postgres_small_disk.start()
    yield server
    server.stop()


@pytest.fixture
def app_on_small_disk(tmp_path, monkeypatch, own_postgres):
    """The app's store and run service on a database of that server (scripted model)."""
    from ui import services

    monkeypatch.setenv("STEPWISE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STEPWISE_DATABASE_URL", own_postgres.create_database())
    monkeypatch.setenv("STEPWISE_PROVIDER", "scripted")
    monkeypatch.setenv("STEPWISE_SCRIPTED_DELAY", "0.2")
    get_settings.cache_clear()
    Path(tmp_path / "home").mkdir()
    try:
        yield services.store(), services.service()
    finally:
        own_postgres.free()
        services.service().shutdown(wait=True)
        services._service.clear()
        services._store.clear()
        services._compiled.clear()
        get_settings.cache_clear()


def test_a_run_cut_off_by_a_full_database_is_shown_stopped_with_the_reason(
    app_on_small_disk, own_postgres
):
    store, service = app_on_small_disk
    run_id = service.start("What caused the dot-com crash?", Design())
    wait_for(lambda: len(store.events(run_id)) >= 4, timeout=120, what="the run mid-way")
    own_postgres.fill()
    assert service.wait(run_id, timeout=120).status == "interrupted"
    assert store.run(run_id).status == "running"  # what the store can say while full

    at = open_run_page(run_id)
    shown = texts(at)
    assert "status **interrupted**" in shown and "status **running**" not in shown, shown
    warning = [str(w.value) for w in at.warning if FULL in str(w.value)]
    assert warning and warning[0].startswith(f"The run was interrupted: {FULL}"), shown
    assert "not recorded in the store yet" in warning[0], warning
    assert not any(raw in shown for raw in RAW), shown
    assert not [b for b in at.button if b.label == "Stop"], "a Stop button for a stopped run"

    # Resume while the disk is still full says so, and does not call the run in progress.
    button(at, "Resume").click().run()
    refused = [str(e.value) for e in at.error]
    assert refused and FULL in refused[0] and "in progress" not in refused[0], refused
    assert store.run(run_id).status == "running"

    own_postgres.free()  # room again: the held end is written, and the page says the same
    wait_for(
        lambda: store.run(run_id).status == "interrupted",
        timeout=60,
        what="the held end to be written",
    )
    at = open_run_page(run_id)
    shown = texts(at)
    assert "status **interrupted**" in shown and "not recorded in the store yet" not in shown
    button(at, "Resume").click().run()
    assert service.wait(run_id, timeout=120).status == "done"
