"""Who changed what (issue 29): the prompt versions saved and made active, the design's
changes. Decisions keep their own record (``decisions``, with who decided); the two
together are the audit trail a team reads and exports."""

from __future__ import annotations

import time

from graph.kernel.design import Design
from graph.service.database import Database


class Audit:
    """The ``audit_log`` table, appended to and never rewritten."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, by: str, action: str, subject: str, detail: str = "") -> None:
        """``by``: a signed-in person's e-mail, or ``human`` (single-user, the CLI)."""
        self.db.execute(
            "INSERT INTO audit_log (at, by_whom, action, subject, detail) VALUES (?, ?, ?, ?, ?)",
            (time.time(), by, action, subject, detail),
        )

    def entries(self, since: float = 0.0) -> list[dict]:
        """{at, by, action, subject, detail} since ``since``, oldest first."""
        rows = self.db.query("SELECT * FROM audit_log WHERE at >= ? ORDER BY at, id", (since,))
        return [
            {
                "at": r["at"],
                "by": r["by_whom"],
                "action": r["action"],
                "subject": r["subject"],
                "detail": r["detail"],
            }
            for r in rows
        ]


def design_changes(before: Design | None, after: Design) -> str:
    """What a save changed, field by field ("pace_s: 0 → 0.5; approvals"); "" for none.
    The first save of a design is itself the change."""
    if before is None:
        return f"first saved ({after.system})"
    old, new = before.model_dump(), after.model_dump()
    changed = []
    for name, value in new.items():
        if old.get(name) == value:
            continue
        scalar = not isinstance(value, dict | list) and not isinstance(old.get(name), dict | list)
        changed.append(f"{name}: {old.get(name)} → {value}" if scalar else name)
    return "; ".join(changed)
