"""What every chaos case of issue 34 counts, and how it is printed: per case and in total.

Double runs (a run that ran its end a second time: more than one ``done`` end event, or
its last node twice), lost runs (a run that should have ended ``done`` and did not, or a
refused input that was stored all the same), uncaught errors (an exception out of the
engine or a page, a traceback, a reason or message that is raw exception text), keys
shown (a canary key found in what a page, a message or a reason shows).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

COLUMNS = ("double", "lost", "uncaught", "keys")
CANARY = "sk-canary-" + "5e1b0d" * 6

# Text that is an exception's, not a sentence (as chaos.py's RAW_REASON, for messages).
RAW_TEXT = re.compile(
    r"Traceback|File \"|\b[A-Z]\w*(Error|Exception)\b|<[a-z_.]+ object at 0x|NoneType|"
    r"maximum recursion depth|has no attribute|not subscriptable|consuming input failed|"
    r"server closed the connection|the connection is closed|psycopg|sqlite3\."
)


@dataclass
class Tally:
    case: str
    tried: int = 0
    double: int = 0
    lost: int = 0
    uncaught: int = 0
    keys: int = 0
    notes: list[str] = field(default_factory=list)

    def note(self, text: str, limit: int = 6) -> None:
        if len(self.notes) < limit:
            self.notes.append(text[:220])

    def line(self) -> str:
        counts = ", ".join(f"{name} {getattr(self, name)} [0]" for name in COLUMNS)
        return f"{self.case.upper()}: {self.tried} tried: {counts}"


TALLIES: list[Tally] = []


def tally(case: str) -> Tally:
    found = Tally(case)
    TALLIES.append(found)
    return found


def show(found: Tally) -> None:
    for note in found.notes:
        print(f"  {note}")
    print(found.line(), flush=True)


def is_raw(text: str | None) -> bool:
    return bool(text and RAW_TEXT.search(text))


def settings_line(extra: str = "") -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}" + (
        f"; {extra}" if extra else ""
    )


def totals() -> str:
    sums = {name: sum(getattr(t, name) for t in TALLIES) for name in COLUMNS}
    tried = sum(t.tried for t in TALLIES)
    counts = ", ".join(f"{name} {sums[name]}" for name in COLUMNS)
    return (
        f"TOTAL over {len(TALLIES)} new cases, {tried} tried: {counts} [all 0]; {settings_line()}"
    )
