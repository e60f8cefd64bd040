"""The store's schema: numbered migrations run on open, on a SQLite file and on a real
PostgreSQL server; an old file keeps every row; two processes starting at once on one
database migrate it once; a database that cannot be used is named in one sentence,
without its password."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graph.plan_execute.settings_model import PlanSettings
from graph.service.database import DatabaseTooNew, DatabaseUnavailable
from graph.service.schema import MIGRATIONS, SCHEMA_VERSION
from graph.service.store import Store
from graph.settings import Settings
from graph.supervisor_bus.settings_model import BusSettings
from tests.support import ROOT

OLD_FILE = Path(__file__).parent / "data" / "store_v2.sql"
PASSWORD = "hunter2-Very-Secret"


def test_migrations_are_numbered_from_one_without_gaps():
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert SCHEMA_VERSION == MIGRATIONS[-1].version >= 3


def test_a_version_2_file_written_by_the_old_store_migrates_forward_keeping_every_row(tmp_path):
    path = tmp_path / "stepwise.sqlite"
    old = sqlite3.connect(path)
    old.executescript(OLD_FILE.read_text())
    old.execute("PRAGMA user_version=2")
    old.close()
    store = Store(path)
    assert store.schema_version == SCHEMA_VERSION
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store._query("SELECT COUNT(*) FROM schema_version")[0][0] == 1

    saved = store.load_design()  # stored with max_replans and the rest at its top
    assert saved.settings_of(PlanSettings).max_replans == 2
    assert saved.settings_of(BusSettings).bus_timeout_s == 30.0
    active = store.active_prompts()["plan_execute/planner"]
    assert active.label == "old" and "{user_query}" in active.text
    run = store.run("run-old")
    assert (run.status, run.final_answer, run.counts) == (
        "done",
        "AAPL",
        {"steps": 1, "replans": 0},
    )
    assert run.prompt_versions == {"plan_execute/planner": active.id}
    assert [e["kind"] for e in store.events("run-old")] == ["update", "state", "end"]
    assert store.messages("run-old")[0]["content"] == "finding " * 1000  # a shelved text
    assert store.update_keys("run-old") == {"update:t1"}
    assert store.load_eval_set("basics").questions[0].question == "q1"
    experiment = store.experiment("exp1")
    assert (experiment.name, experiment.approvals) == ("first experiment", "auto")
    assert store.experiment_runs("exp1")[0]["run_id"] == "run-old"
    assert store.load_model_modes() == {("http://x/v1", "small"): {"structured": "json_object"}}
    assert store.judgement("run-old")["scores"] == {"correct": 1}
    assert store.decisions_since(0)[0]["decided"]["by"] == "alice"
    assert store.judge_job("job1")["total"] == 1
    assert store.queued_redirects("run-waiting")[0]["spec"] == {"kind": "message", "text": "hi"}
    # New rows go on after the old ones.
    newer = store.save_prompt_version("plan_execute/planner", "", active.text)
    assert newer.id > active.id and newer.label == "v2"
    store.close()
    assert Store(path).schema_version == SCHEMA_VERSION  # opening again changes nothing


def test_a_database_migrated_by_a_newer_stepwise_is_refused_saying_so(tmp_path, database_url):
    settings = Settings(home=tmp_path, database_url=database_url)
    store = Store.open(settings)
    store._write("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 5,))
    store.close()
    with pytest.raises(DatabaseTooNew, match=f"schema version {SCHEMA_VERSION + 5}, newer"):
        Store.open(settings)


OPENER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from graph.service.store import Store
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
store = Store.open()
print(store.schema_version, flush=True)
"""


def test_processes_starting_at_once_on_one_postgresql_database_migrate_it_once(postgres_url):
    env = {**os.environ, "STEPWISE_DATABASE_URL": postgres_url}
    start_at = time.time() + 6  # every process imported and waiting by then
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(ROOT), str(start_at)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 6, [err[-800:] for _, err in results]
    assert [out.strip() for out, _ in results] == [str(SCHEMA_VERSION)] * 6
    store = Store.open(Settings(database_url=postgres_url))
    assert store._query("SELECT version FROM schema_version")[0][0] == SCHEMA_VERSION
    assert store._query("SELECT COUNT(*) FROM schema_version")[0][0] == 1
    store.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_postgresql_url_is_named_in_one_sentence_without_its_password(tmp_path):
    from graph.service.run_storage import checkpointer_for

    url = f"postgresql://stepwise:{PASSWORD}@127.0.0.1:{_closed_port()}/stepwise"
    settings = Settings(home=tmp_path, database_url=url)
    for open_it in (lambda: Store.open(settings), lambda: checkpointer_for(settings)):
        with pytest.raises(DatabaseUnavailable) as caught:
            open_it()
        message = str(caught.value)
        assert PASSWORD not in message and "\n" not in message
        assert message.startswith(
            "Cannot use the PostgreSQL database at "
            f"postgresql://stepwise:[redacted]@127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}"
            "/stepwise (STEPWISE_DATABASE_URL): "
        ), message
        assert "Check that the server is running" in message
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert not (tmp_path / "stepwise.sqlite").exists()  # no silent fallback to a file
    assert PASSWORD not in str(settings.public_dict()) and PASSWORD not in repr(settings)


def test_a_missing_postgresql_database_is_named_with_the_server_s_reason(postgres):
    url = postgres.url("no_such_db").replace("://postgres@", f"://postgres:{PASSWORD}@")
    with pytest.raises(DatabaseUnavailable, match='database "no_such_db" does not exist') as e:
        Store.open(Settings(database_url=url))
    assert PASSWORD not in str(e.value) and "[redacted]" in str(e.value)


def test_a_url_that_is_not_postgresql_is_refused_saying_what_is_expected(tmp_path):
    with pytest.raises(DatabaseUnavailable, match="must start with postgresql://, not mysql://"):
        Store.open(Settings(home=tmp_path, database_url=f"mysql://u:{PASSWORD}@h/db"))


def test_a_store_opening_while_another_process_migrates_waits_for_it(database_url, tmp_path):
    """The migration lock, seen directly: while one connection holds it (as a process
    migrating would), a store opening on the same database waits, then finds it done."""
    import threading

    from graph.service.database_choice import open_database

    path = tmp_path / "stepwise.sqlite"
    holder = open_database(path=path, url=database_url)
    opened: list[Store] = []
    opener = threading.Thread(
        target=lambda: opened.append(Store.open(Settings(home=tmp_path, database_url=database_url)))
    )
    with holder.transaction(exclusive=True):
        opener.start()
        opener.join(timeout=2.0)
        assert opener.is_alive() and not opened  # waiting for the lock
    opener.join(timeout=30)
    assert opened and opened[0].schema_version == SCHEMA_VERSION
    opened[0].close()
    holder.close()
