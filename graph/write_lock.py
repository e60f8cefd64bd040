"""One writer at a time on a SQLite file, handed over at once between processes.

When run worker processes write to one SQLite file, a writer that finds it locked waits in
SQLite's busy handler, which polls: it sleeps 1 ms, then 2, 5, 10 ms and longer before
looking again, though the lock was usually given back within a fraction of a millisecond.
With two workers that is hundreds of sleeps per worker for 20 runs. Writers that queue on a
blocking ``flock`` beside the file instead are woken by the kernel the moment the holder
lets go. SQLite's own locking stays as it is: this lock only orders the writers that take
it, so a writer that does not (another program, an older Stepwise) is still safe, as
before, and merely polls.

One lock per file per process (every connection of this process on that file shares it):
two file descriptions of one process would block each other. Threads of this process
queue on a reentrant lock in front of it.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

if sys.platform == "win32":  # no fcntl: threads of one process are still ordered
    fcntl = None
else:
    import fcntl

_LOCKS: dict[str, WriteLock] = {}
_LOCKS_LOCK = threading.Lock()


class WriteLock:
    """An exclusive lock on ``<database file>.write-lock``, reentrant within a thread."""

    def __init__(self, database: Path):
        self.path = Path(f"{database}.write-lock")
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the file's write turn (queued behind other processes' writers)."""
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def acquire(self) -> None:
        """Take the write turn; each ``acquire`` is followed by one ``release`` on the same
        thread (``held`` pairs them; a caller on a hot path pairs them itself)."""
        self._thread_lock.acquire()
        try:
            if self._depth == 0 and fcntl is not None:
                if self._fd is None:
                    self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread_lock.release()
            raise
        self._depth += 1

    def release(self) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()


def write_lock(database: Path | str) -> WriteLock:
    """The write lock of the SQLite file ``database``, the same object for every caller in
    this process."""
    key = os.path.realpath(database)
    with _LOCKS_LOCK:
        if key not in _LOCKS:
            _LOCKS[key] = WriteLock(Path(key))
        return _LOCKS[key]
