"""Side effects carried out once: the ledger a tool is given, and ``write_once``.

A tool with a side effect (a report file, a draft file) is handed a ledger (the kernel's
``SideEffectLedger``; anything with ``recorded`` and ``record``) and a key naming the
call; ``write_once`` acts only if the key is not in the ledger yet.
"""

from __future__ import annotations

import re
from typing import Callable, Protocol


class Ledger(Protocol):
    def recorded(self, key: str) -> str | None: ...

    def record(self, key: str, result: str) -> None: ...


def write_once(ledger: Ledger, key: str, unit: str, write: Callable[[], str]) -> str:
    """Carry out ``write()`` unless ``key`` is already done; then return its recorded
    result, saying it was not repeated for this ``unit`` (step, message...)."""
    if (done := ledger.recorded(key)) is not None:
        return f"{done} (already done for this {unit}: not repeated)"
    result = write()
    ledger.record(key, result)
    return result


def slug(title: str) -> str:
    """A file-name-safe form of a title."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "report"
