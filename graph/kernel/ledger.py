"""The side-effect ledger: keys of side effects already carried out, in SQLite so they
survive a crash, a replay and a fork.

A run can be resumed after a crash, which re-executes the node that was in progress; a
fork or a replay runs nodes again. Each side effect is keyed (run, step or message,
attempt, call number); a key found here returns the recorded result instead of acting
twice. Tools reach it through ``graph.tools.effects.Ledger`` (they never import this).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from functools import lru_cache
from pathlib import Path


class SideEffectLedger:
    """Keys of side effects already carried out, with their results."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS side_effects (key TEXT PRIMARY KEY, "
            "result TEXT NOT NULL, at REAL NOT NULL)"
        )
        self.conn.commit()

    def recorded(self, key: str) -> str | None:
        with self._lock:
            row = self.conn.execute(
                "SELECT result FROM side_effects WHERE key = ?", (key,)
            ).fetchone()
        return row[0] if row else None

    def record(self, key: str, result: str) -> None:
        with self._lock:
            self.conn.execute(
                "INSERT OR IGNORE INTO side_effects VALUES (?, ?, ?)", (key, result, time.time())
            )
            self.conn.commit()

    def count(self, prefix: str = "") -> int:
        with self._lock:
            return self.conn.execute(
                "SELECT COUNT(*) FROM side_effects WHERE key LIKE ?", (prefix + "%",)
            ).fetchone()[0]


@lru_cache(maxsize=8)
def side_effect_ledger(home: Path) -> SideEffectLedger:
    """The ledger of a ``STEPWISE_HOME``, one per process."""
    return SideEffectLedger(Path(home) / "side_effects.sqlite")
