"""``save_report``: the one tool with a side effect (it writes a file), made idempotent.

A run can be resumed after a crash, which re-executes the node that was in progress.
Each call carries a key (run, step, attempt, call number); the ledger remembers keys
already carried out, so a resumed step returns the recorded result instead of
writing the file a second time.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from pathlib import Path

from langchain_core.tools import StructuredTool

_lock = threading.Lock()


class SideEffectLedger:
    """Keys of side effects already carried out, in SQLite so they survive a crash."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS side_effects (key TEXT PRIMARY KEY, "
                          "result TEXT NOT NULL, at REAL NOT NULL)")
        self.conn.commit()

    def recorded(self, key: str) -> str | None:
        with _lock:
            row = self.conn.execute("SELECT result FROM side_effects WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def record(self, key: str, result: str) -> None:
        with _lock:
            self.conn.execute("INSERT OR IGNORE INTO side_effects VALUES (?, ?, ?)",
                              (key, result, time.time()))
            self.conn.commit()

    def count(self, prefix: str = "") -> int:
        with _lock:
            return self.conn.execute("SELECT COUNT(*) FROM side_effects WHERE key LIKE ?",
                                     (prefix + "%",)).fetchone()[0]


def write_once(ledger: SideEffectLedger, key: str, unit: str, write) -> str:
    """Carry out ``write()`` unless ``key`` is already done; then return its recorded
    result, saying it was not repeated for this ``unit`` (step, message...)."""
    if (done := ledger.recorded(key)) is not None:
        return f"{done} (already done for this {unit}: not repeated)"
    result = write()
    ledger.record(key, result)
    return result


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "report"


def save_report_tool(folder: Path, ledger: SideEffectLedger, key_prefix: str) -> StructuredTool:
    """A ``save_report`` bound to one step execution; ``key_prefix`` names it."""
    calls = {"n": 0}

    def save_report(title: str, body: str) -> str:
        calls["n"] += 1

        def write() -> str:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{_slug(title)}-{key_prefix.replace('/', '-')[:24]}.md"
            path.write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
            return f"Report saved to {path}"

        return write_once(ledger, f"{key_prefix}/save_report/{calls['n']}", "step", write)

    return StructuredTool.from_function(
        save_report, name="save_report",
        description="Write the report (a title and a Markdown body) to the reports folder. "
        "This has a side effect: a file is written.")


def report_body(findings: dict[str, str]) -> str:
    return "\n".join(f"- Step {k}: {v}" for k, v in sorted(findings.items(), key=lambda kv: int(kv[0])))


__all__ = ["SideEffectLedger", "save_report_tool", "report_body"]
