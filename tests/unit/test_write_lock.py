"""Writers of several processes on one SQLite file queue on its write lock (issue #18,
point 5): the store's and the checkpointer's writes wait while another process holds it
and go on the moment it is let go, instead of polling in SQLite's busy handler; reads do
not wait; a thread nesting writes does not block itself.

Real parts: a second Python process holding the lock, real SQLite files, LangGraph's
checkpointer interface.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from graph.kernel.checkpoints import open_checkpointer
from graph.service.database import SqliteDatabase
from graph.settings import REPO_ROOT
from graph.write_lock import write_lock

_HOLDER = (
    "import sys; from graph.write_lock import write_lock\n"
    "with write_lock(sys.argv[1]).held():\n"
    "    print('held', flush=True); sys.stdin.readline()\n"
)


class OtherProcess:
    """A second process holding ``database``'s write lock until ``release``."""

    def __init__(self, database: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(database)],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0


def _waits_for(other: OtherProcess, write) -> None:
    """``write`` (on a thread) has not finished while ``other`` holds the lock, and
    finishes once it is released."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: (write(), done.set()), daemon=True)
    thread.start()
    assert not done.wait(0.5), "the write did not wait for the other process's turn"
    other.release()
    assert done.wait(30), "the write never went on after the lock was let go"


def test_store_writes_wait_for_another_process_and_reads_do_not(tmp_path):
    db = SqliteDatabase(tmp_path / "stepwise.sqlite")
    db.execute("CREATE TABLE t (x INTEGER)")
    other = OtherProcess(tmp_path / "stepwise.sqlite")
    assert db.query("SELECT COUNT(*) FROM t")[0][0] == 0  # a read goes on meanwhile
    _waits_for(other, lambda: db.execute("INSERT INTO t VALUES (1)"))
    assert db.query("SELECT x FROM t")[0][0] == 1
    db.close()


def test_nested_transactions_of_one_thread_do_not_block_themselves(tmp_path):
    db = SqliteDatabase(tmp_path / "stepwise.sqlite")
    with db.transaction() as tx:
        tx.execute("CREATE TABLE t (x INTEGER)")
        with write_lock(tmp_path / "stepwise.sqlite").held():
            tx.execute("INSERT INTO t VALUES (1)")
    assert db.query("SELECT x FROM t")[0][0] == 1
    db.close()


CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _checkpoint() -> dict:
    """A checkpoint with one channel, ``notes`` = ["a"], at version "1"."""
    return {
        "v": 4,
        "id": "1",
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": {"notes": ["a"]},
        "channel_versions": {"notes": "1"},
        "versions_seen": {},
        "updated_channels": ["notes"],
    }


def test_checkpoint_writes_wait_for_another_process_and_reads_do_not(tmp_path):
    path = tmp_path / "checkpoints.sqlite"
    saver = open_checkpointer(path)
    config, checkpoint = CONFIG, _checkpoint()
    saver.setup()
    other = OtherProcess(path)
    assert saver.get_tuple(config) is None  # a read goes on meanwhile
    _waits_for(other, lambda: saver.put(config, checkpoint, {}, {"notes": "1"}))
    assert saver.get_tuple(config).checkpoint["channel_values"] == {"notes": ["a"]}


def test_a_checkpoint_write_whose_turn_cannot_be_taken_says_why_and_the_next_one_works(
    tmp_path, monkeypatch
):
    """The lock file refuses (an I/O error): the write fails with that error, not with the
    saver releasing a turn it never took, writes nothing, and the next write goes on."""
    import graph.write_lock

    path = tmp_path / "checkpoints.sqlite"
    saver = open_checkpointer(path)
    config, checkpoint = CONFIG, _checkpoint()
    saver.setup()
    flock = graph.write_lock.fcntl.flock

    def refusing(fd: int, operation: int) -> None:
        if operation == graph.write_lock.fcntl.LOCK_EX:
            raise OSError(5, "Input/output error")
        flock(fd, operation)

    monkeypatch.setattr(graph.write_lock.fcntl, "flock", refusing)
    with pytest.raises(OSError, match="Input/output error"):
        saver.put(config, checkpoint, {}, {"notes": "1"})
    assert saver.get_tuple(config) is None
    monkeypatch.setattr(graph.write_lock.fcntl, "flock", flock)
    saver.put(config, checkpoint, {}, {"notes": "1"})
    assert saver.get_tuple(config).checkpoint["channel_values"] == {"notes": ["a"]}
