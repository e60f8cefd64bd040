"""Side effects carried out once, even across a crash: the ledger a tool is given, and
``write_file_once``.

A tool with a side effect (a report file, a draft file) is handed a ledger (the kernel's
``SideEffectLedger``) and a key naming the call. The intent (the file's path) is recorded
before the file is written, the file is written to a temporary name and renamed into
place, and only then is the key marked done. A crash anywhere in between leaves an
intent: the re-run writes to the path recorded, or finds the file already renamed into
place, so there is still one file per key, never a second one.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

FINISHED = ("done", "sent")


@dataclass(frozen=True)
class Effect:
    """One ledger entry: ``state`` is intent/sending (under way) or done/sent (finished)."""

    key: str
    state: str
    detail: str  # what the intent was: a file's path, an HTTP call
    result: str

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


class Ledger(Protocol):
    def entry(self, key: str) -> Effect | None: ...

    def begin(self, key: str, state: str, detail: str) -> Effect: ...

    def finish(self, key: str, result: str, state: str = "done") -> None: ...

    def forget(self, key: str) -> None: ...

    def recorded(self, key: str) -> str | None: ...


def slug(title: str) -> str:
    """A file-name-safe form of a title."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "report"


def key_digest(key: str) -> str:
    """A short, stable name for a ledger key (file names, Idempotency-Key headers)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def keyed_path(folder: Path, title: str, key: str) -> Path:
    """One file per ledger key: the title's slug, then a digest of the whole key."""
    return folder / f"{slug(title)}-{key_digest(key)}.md"


def _write_atomically(path: Path, text: str) -> None:
    """Write a temporary file named after ``path`` (so after the key), then rename it
    into place: the file is either absent or whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def write_file_once(ledger: Ledger, key: str, unit: str, path: Path, text: str, saved: str) -> str:
    """Write ``text`` to ``path`` once for ``key``; ``saved`` starts the result ("Report
    saved to"). A key already done returns its result, saying it was not repeated for
    this ``unit`` (step, message...); a key left mid-way by a crash is finished on the
    path first recorded, without writing a file that is already in place."""
    if (found := ledger.entry(key)) is not None and found.finished:
        return f"{found.result} (already done for this {unit}: not repeated)"
    intent = ledger.begin(key, "intent", str(path))
    target = Path(intent.detail) if intent.detail else path
    if not target.exists():
        _write_atomically(target, text)
    result = f"{saved} {target}"
    ledger.finish(key, result)
    return result
