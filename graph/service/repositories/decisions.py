"""What people asked of runs: the answers to their questions, and redirects queued for
a live run's next stop."""

from __future__ import annotations

import json
import time

from graph.service.database import Database
from graph.service.repositories.shared import dumps


class Decisions:
    """The ``decisions`` and ``queued_redirects`` tables."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- decisions

    def record(self, run_id: str, item: dict, decision: str, by: str, reason: str = "") -> None:
        """What answered a run's question, by whom (a person, or ``timeout`` when the
        design's default applied) and when: the Approvals page shows it in the card's place."""
        self.db.execute(
            "INSERT INTO decisions (interrupt_id, run_id, decision, decided_by, "
            "reason, decided_at, item_json) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (interrupt_id) DO UPDATE SET run_id = excluded.run_id, "
            "decision = excluded.decision, decided_by = excluded.decided_by, "
            "reason = excluded.reason, decided_at = excluded.decided_at, "
            "item_json = excluded.item_json",
            (item["id"], run_id, decision, by, reason, time.time(), dumps(item)),
        )

    def since(self, since: float) -> list[dict]:
        """The questions answered since ``since``, each as it was asked plus ``run_id``
        and ``decided`` ({decision, by, reason, at}), oldest answer first."""
        rows = self.db.query(
            "SELECT * FROM decisions WHERE decided_at >= ? ORDER BY decided_at, interrupt_id",
            (since,),
        )
        return self._answered(rows)

    def of_run(self, run_id: str) -> list[dict]:
        """The run's answered questions, as ``since`` gives them (its trace's events)."""
        rows = self.db.query(
            "SELECT * FROM decisions WHERE run_id = ? ORDER BY decided_at, interrupt_id",
            (run_id,),
        )
        return self._answered(rows)

    @staticmethod
    def _answered(rows: list) -> list[dict]:
        return [
            {
                **json.loads(r["item_json"]),
                "run_id": r["run_id"],
                "decided": {
                    "decision": r["decision"],
                    "by": r["decided_by"],
                    "reason": r["reason"],
                    "at": r["decided_at"],
                },
            }
            for r in rows
        ]

    # -- queued redirects

    def queue_redirect(self, run_id: str, spec: dict, note: str = "") -> int:
        """Record a redirect (a follow-up message, an edited request) asked of a live run,
        before it is applied at the run's next stop: a crash in between does not lose it.
        ``spec`` is JSON data the run service rebuilds it from; returns its id."""
        return self.db.insert_id(
            "INSERT INTO queued_redirects (run_id, spec_json, note, created_at) "
            "VALUES (?, ?, ?, ?)",
            (run_id, json.dumps(spec, ensure_ascii=False), note, time.time()),
        )

    def queued_redirects(self, run_id: str) -> list[dict]:
        """The run's redirects not yet applied, oldest first: {id, spec, note, created_at}."""
        rows = self.db.query(
            "SELECT * FROM queued_redirects WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [
            {
                "id": r["id"],
                "spec": json.loads(r["spec_json"]),
                "note": r["note"],
                "created_at": r["created_at"],
            }
            for r in rows
        ]

    def forget_redirect(self, redirect_id: int) -> None:
        """A queued redirect was applied (or refused, and logged so): it is done."""
        self.db.execute("DELETE FROM queued_redirects WHERE id = ?", (int(redirect_id),))
