"""The run records and the leases on them: which runs there are, in what status, and
which process holds each live one. A run's record and its lease are one row, written by
the same statements (an interruption ends the lease), so they are one repository.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterable

from graph.kernel.design import Design
from graph.redaction import redact
from graph.service.database import Database
from graph.service.import_checks import (
    check_run_export,
    shown_counts,
    shown_design,
    shown_object,
    shown_time,
)
from graph.service.leases import LeaseLost
from graph.service.repositories.shared import (
    EXPORT_FORMAT,
    INTERRUPTED_REASON,
    LEASE_FREE,
    LIVE_STATUSES,
    RUN_COLUMNS,
    STATUSES,
    TERMINAL_STATUSES,
    RunRecord,
    dumps,
    like,
)
from graph.service.state_deltas import StateLog
from graph.settings import Settings, get_settings

# The columns of ``create``'s values, in order.
_CREATED = (
    "id",
    "question",
    "system",
    "design_json",
    "prompt_versions_json",
    "settings_json",
    "model_label",
    "created_at",
    "parent_run",
    "parent_checkpoint",
)


class Runs:
    """The ``runs`` table: records, statuses, leases, and runs imported from a file."""

    def __init__(self, db: Database, states: StateLog) -> None:
        self.db = db
        self._states = states  # shared with the event log: a deleted run's bases go

    def _run_record(self, row: Any) -> RunRecord:
        """A run as pages read it; odd values an unchecked import once stored (a time in
        words, a design that is no object) read as unknown, so the run still lists,
        opens and can be deleted."""
        return RunRecord(
            id=row["id"],
            question=str(row["question"]),
            system=str(row["system"]),
            design=shown_design(row["design_json"]),
            prompt_versions=shown_object(row["prompt_versions_json"]),
            status=row["status"],
            reason=str(row["reason"] or ""),
            model_label=str(row["model_label"] or ""),
            created_at=shown_time(row["created_at"]) or 0.0,
            started_at=shown_time(row["started_at"]),
            finished_at=shown_time(row["finished_at"]),
            final_answer=row["final_answer"],
            counts=shown_counts(row["counts_json"]),
            parent_run=row["parent_run"],
            parent_checkpoint=row["parent_checkpoint"],
            settings_json=row["settings_json"],
        )

    def create(
        self,
        run_id: str,
        question: str,
        design: Design,
        model_label: str,
        prompt_versions: dict[str, int] | None = None,
        parent_run: str | None = None,
        parent_checkpoint: str | None = None,
        settings: Settings | None = None,
        owner: str | None = None,
        lease_s: float = 0.0,
    ) -> RunRecord:
        """Record a run before it starts ("queued"), with the design and the prompt versions
        it runs with; ``settings`` are stored in their public form (secrets as set/unset).
        ``owner`` holds it for ``lease_s`` from the start, so no other process takes it over
        before its worker has begun."""
        public = settings.public_dict() if settings is not None else {}
        values = (
            run_id,
            question,
            design.system,
            design.model_dump_json(),
            dumps(prompt_versions or {}),
            dumps(public),
            model_label,
            time.time(),
            parent_run,
            parent_checkpoint,
        )
        self.db.execute(
            f"INSERT INTO runs ({RUN_COLUMNS}, owner, lease_until) VALUES "
            "(?, ?, ?, ?, ?, ?, 'queued', '', ?, ?, NULL, NULL, NULL, '{}', ?, ?, ?, ?)",
            (*values, owner, self.db.clock() + lease_s if owner else None),
        )
        # The record as written (the values as the database stores them), not read back.
        return self._run_record(
            dict(zip(_CREATED, self.db.params(values)))
            | dict.fromkeys(("started_at", "finished_at", "final_answer"))
            | {"status": "queued", "reason": "", "counts_json": "{}"}
        )

    def set_status(
        self, run_id: str, status: str, reason: str = "", owner: str | None = None
    ) -> None:
        """``owner``: only while it holds the run (``LeaseLost`` otherwise, nothing
        changed): a worker that lost its run never ends it for the process that has it."""
        if status not in STATUSES:
            raise ValueError(f"Unknown run status {status!r}; one of: {', '.join(STATUSES)}.")
        reason = redact(reason)  # an echoed server error may carry an API key
        now = time.time()
        if status == "running":
            sql = (
                "UPDATE runs SET status = ?, reason = ?, "
                "started_at = COALESCE(started_at, ?), finished_at = NULL WHERE id = ?"
            )
            params: tuple = (status, reason, now, run_id)
        elif status in TERMINAL_STATUSES:
            sql = "UPDATE runs SET status = ?, reason = ?, finished_at = ? WHERE id = ?"
            params = (status, reason, now, run_id)
        else:
            sql = "UPDATE runs SET status = ?, reason = ? WHERE id = ?"
            params = (status, reason, run_id)
        if owner is None:
            self.db.execute(sql, params)
            return
        if self.db.execute(sql + " AND owner = ?", (*params, owner)).rowcount == 0 and self.get(
            run_id
        ):
            raise LeaseLost(run_id)

    def get(self, run_id: str) -> RunRecord | None:
        rows = self.db.query(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return self._run_record(rows[0]) if rows else None

    def find(
        self,
        status: str | None = None,
        text: str | None = None,
        limit: int = 200,
        forks: bool = False,
    ) -> list[RunRecord]:
        """Newest first; ``text`` matches anywhere in the question, ignoring case;
        ``forks``: only runs made from another run's checkpoint (a parent run named)."""
        where, params = [], []
        if forks:
            where.append("parent_run IS NOT NULL")
        if status:
            where.append("status = ?")
            params.append(status)
        if text and text.strip():
            where.append("LOWER(question) LIKE LOWER(?) ESCAPE '\\'")
            params.append(like(text.strip()))
        sql = f"SELECT {RUN_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        return [self._run_record(r) for r in self.db.query(sql, [*params, int(limit)])]

    def count(self, status: str) -> int:
        """How many runs are in ``status`` (counted by the store: none is read)."""
        return self.db.query("SELECT COUNT(*) FROM runs WHERE status = ?", (status,))[0][0]

    def delete(self, run_id: str) -> None:
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
            self._states.forget(run_id)
            tx.execute("DELETE FROM queued_redirects WHERE run_id = ?", (run_id,))
            tx.execute("DELETE FROM decisions WHERE run_id = ?", (run_id,))
            tx.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    def mark_interrupted(self) -> int:
        """Runs a dead process left queued or running can never finish: say so. A run
        whose owner still renews its lease is live in another process and left alone."""
        now = self.db.clock()
        cursor = self.db.execute(
            "UPDATE runs SET status = 'interrupted', reason = ?, finished_at = ?, "
            "owner = NULL, lease_until = NULL "
            f"WHERE status IN ({', '.join('?' * len(LIVE_STATUSES))}) AND {LEASE_FREE}",
            (INTERRUPTED_REASON, now, *LIVE_STATUSES, now),
        )
        return cursor.rowcount

    # -- leases

    def claim(self, run_id: str, owner: str, lease_s: float) -> bool:
        """Hold a run for ``owner`` for ``lease_s`` seconds, in one statement so two
        processes never both win; False when another owner's lease has not run out."""
        now = self.db.clock()
        cursor = self.db.execute(
            "UPDATE runs SET owner = ?, lease_until = ? "
            f"WHERE id = ? AND (owner = ? OR {LEASE_FREE})",
            (owner, now + lease_s, run_id, owner, now),
        )
        return cursor.rowcount == 1

    def renew_leases(self, owner: str, run_ids: Iterable[str], lease_s: float) -> int:
        """The owner's heartbeat: its live runs stay its own for ``lease_s`` more."""
        run_ids = list(run_ids)
        if not run_ids:
            return 0
        cursor = self.db.execute(
            "UPDATE runs SET lease_until = ? "
            f"WHERE owner = ? AND id IN ({', '.join('?' * len(run_ids))})",
            (self.db.clock() + lease_s, owner, *run_ids),
        )
        return cursor.rowcount

    def keep_leases(self, owner: str, run_ids: Iterable[str], lease_s: float) -> set[str]:
        """``renew_leases``, saying which of ``run_ids`` the owner still holds: the others
        were taken over, or marked interrupted, while it was not renewing them."""
        run_ids = list(run_ids)
        if not run_ids:
            return set()
        marks = ", ".join("?" * len(run_ids))
        until = self.db.clock() + lease_s
        # One statement saying what it renewed; pipelined: on PostgreSQL BEGIN goes with
        # it and COMMIT after, two round trips (five as a transaction block and a SELECT).
        with self.db.transaction(pipelined=True) as tx:
            rows = tx.execute(
                f"UPDATE runs SET lease_until = ? WHERE owner = ? AND id IN ({marks}) RETURNING id",
                (until, owner, *run_ids),
            ).fetchall()
        return {row[0] for row in rows}

    def release(self, run_id: str, owner: str) -> None:
        """The owner no longer runs it (ended, waiting, paused): anyone may act on it."""
        self.db.execute(
            "UPDATE runs SET owner = NULL, lease_until = NULL WHERE id = ? AND owner = ?",
            (run_id, owner),
        )

    def live_owners(self) -> set[str]:
        """The owners holding queued or running runs now."""
        rows = self.db.query(
            "SELECT DISTINCT owner FROM runs WHERE owner IS NOT NULL "
            f"AND status IN ({', '.join('?' * len(LIVE_STATUSES))})",
            LIVE_STATUSES,
        )
        return {r["owner"] for r in rows}

    def lease_clock(self) -> float:
        """Now, by the clock leases are kept in: the PostgreSQL server's, so processes on
        machines whose clocks disagree never take over a run whose lease is still held."""
        return self.db.clock()

    def end_leases(self, owner: str) -> None:
        """An owner known to be gone (its process no longer exists): its leases end now."""
        self.db.execute("UPDATE runs SET lease_until = 0 WHERE owner = ?", (owner,))

    def lease(self, run_id: str) -> tuple[str | None, float | None]:
        """(owner, lease_until) of a run; (None, None) when nobody holds it. Leases are
        in the database's clock (``lease_clock``): on SQLite this machine's."""
        rows = self.db.query("SELECT owner, lease_until FROM runs WHERE id = ?", (run_id,))
        return (rows[0]["owner"], rows[0]["lease_until"]) if rows else (None, None)

    def add_exported(self, data: dict) -> tuple[str, list[str]]:
        """Load an exported run, its record and its events in one transaction; its id and
        sentences on what was left out of the file (a model server its design named). It
        gets a new id if its id is taken. The whole file is checked first
        (``graph.service.import_checks``): ImportProblem names what is wrong, and nothing
        of a refused file is stored. Here, not in the event log: an imported log is
        stored as exported, never appended to."""
        checked = check_run_export(
            data, get_settings(), export_format=EXPORT_FORMAT, statuses=STATUSES
        )
        run, snapshot = checked.record, checked.snapshot
        run_id = run["id"] or uuid.uuid4().hex
        with self.db.transaction() as tx:
            if tx.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                run_id = uuid.uuid4().hex
            status = run["status"] if run["status"] in TERMINAL_STATUSES else "interrupted"
            tx.execute(
                f"INSERT INTO runs ({RUN_COLUMNS}, snapshot_json) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    run["question"],
                    run["system"],
                    dumps(run["design"]),
                    dumps(run["prompt_versions"]),
                    dumps(run["settings"]),
                    status,
                    run["reason"],
                    run["model_label"],
                    run["created_at"],
                    run["started_at"],
                    run["finished_at"],
                    run["final_answer"],
                    dumps(run["counts"]),
                    run["parent_run"],
                    run["parent_checkpoint"],
                    dumps(snapshot) if snapshot is not None else None,
                ),
            )
            tx.executemany(
                "INSERT INTO events (run_id, seq, ts, kind, node, namespace, step, data_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, *event[:-1], dumps(event[-1])) for event in checked.events],
            )
        return run_id, checked.notes
