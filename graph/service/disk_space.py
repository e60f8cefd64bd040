"""A full disk under the store, said in words, and a little room kept to say it with.

SQLite answers a full disk with "database or disk is full" (``SQLITE_FULL``), the file
system with ``ENOSPC``, PostgreSQL with SQLSTATE 53100; any of them, raw, reached the
person starting a run. ``DiskFull`` is the sentence they get instead; nothing written
before is lost (the failed transaction is rolled back whole).

A run cut off by a full disk must still be marked as ended, and that write needs room
too: on a disk with nothing left, even an UPDATE of one row needs new pages in SQLite's
write-ahead log. So a run service keeps a small file beside the store (``DiskReserve``)
while there is room, and gives it back when a write fails for want of space, just before
writing how the run ended; it is made again once the disk has room.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from graph.errors import StepwiseError

log = logging.getLogger(__name__)

RESERVE_BYTES = 512 * 1024  # room for the ends of a few dozen runs (a few WAL frames each)
# The reserve is made again only with this many times its size free: never what fills it.
RESERVE_MARGIN = 8
_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


class DiskFull(StepwiseError, ValueError):
    """The disk holding the store has no room left for a write; the message is one
    sentence saying so and what to do. A ValueError like the other refusals callers
    already show in words (starting a run, a decision)."""


def disk_full(error: BaseException) -> bool:
    """Whether ``error``, or an error it came from, is a disk (or quota) with no room left."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DiskFull):
            return True
        if isinstance(current, sqlite3.Error) and (
            getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or "database or disk is full" in str(current)
        ):
            return True
        if isinstance(current, OSError) and current.errno in _FULL_ERRNOS:
            return True
        if getattr(current, "sqlstate", None) == "53100":  # PostgreSQL's disk_full
            return True
        current = current.__cause__ or current.__context__
    return False


def full_message(location: str, then: str = "try again") -> str:
    """The sentence for a write refused by a full disk at ``location``."""
    return (
        f"The disk holding the store is full: {location} could not be written. Nothing "
        f"saved before is lost; free some space on that disk, then {then}."
    )


def no_room_message(location: str) -> str:
    """The sentence for new work refused while the reserve is given back: a run started
    now could not be recorded to its end."""
    return (
        f"The disk holding the store is full: {location} has less than "
        f"{RESERVE_BYTES * RESERVE_MARGIN // (1024 * 1024)} MB free, too little to record a "
        "run to its end. Nothing saved before is lost; free some space on that disk, then "
        "try again."
    )


def run_cut_off_reason(location: str) -> str:
    """What a run cut off by a full disk says: it can go on once there is room."""
    return (
        f"The disk holding the store is full: {location} could not be written, so the run "
        "stopped. Everything saved before is kept: free some space on that disk, then "
        "resume the run to go on from its last checkpoint."
    )


@contextmanager
def said_when_full(location: str) -> Iterator[None]:
    """Turn a write refused for want of space into ``DiskFull`` naming ``location``."""
    try:
        yield
    except DiskFull:
        raise
    except (sqlite3.Error, OSError) as exc:
        if disk_full(exc):
            raise DiskFull(full_message(location)) from exc
        raise
    except Exception as exc:  # psycopg's DiskFull, without importing psycopg here
        if getattr(exc, "sqlstate", None) == "53100":
            raise DiskFull(full_message(location)) from exc
        raise


class DiskReserve:
    """``RESERVE_BYTES`` held in a file beside the store, given back on a full disk."""

    def __init__(self, store_file: Path | None):
        self.path = Path(f"{store_file}.reserve") if store_file is not None else None

    def keep(self) -> bool:
        """Make the reserve if it is missing and the disk has ample room; whether it is
        there now. Never raises: it is a precaution."""
        if self.path is None:
            return False
        if self.path.exists():
            return True
        try:
            stat = os.statvfs(self.path.parent)
            if stat.f_bavail * stat.f_frsize < RESERVE_BYTES * RESERVE_MARGIN:
                return False
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _allocate(fd, RESERVE_BYTES)
            finally:
                os.close(fd)
        except FileExistsError:
            return True  # another process on this home made it meanwhile
        except OSError as exc:
            log.warning("No room kept beside the store for a full disk: %s", exc)
            self.path.unlink(missing_ok=True)
            return False
        return True

    def release(self) -> bool:
        """Give the reserve's room back to the disk; whether there was one to give."""
        if self.path is None:
            return False
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        log.warning(
            "The disk holding the store is full: its reserve of %d KB given back.",
            RESERVE_BYTES // 1024,
        )
        return True


def _allocate(fd: int, size: int) -> None:
    """Blocks really held (a sparse file would hold none): fallocate, else zeros."""
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, size)
            return
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
    os.write(fd, b"\0" * size)
