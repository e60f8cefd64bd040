"""Everything a user sees: designs, prompt versions, runs and their events, experiments,
eval sets, decisions, judgements, model modes.

In one SQLite file under ``STEPWISE_HOME`` by default, or in a PostgreSQL database shared
by several app processes when ``STEPWISE_DATABASE_URL`` is set: ``graph.service.database``
gives both one connection interface, so each method has one SQL text, and
``graph.service.schema`` migrates either on open. Pages read it while run workers write to
it, from other threads: one connection behind a lock. Nothing here holds an API key:
designs and settings are stored as their public, key-free forms.

Over 400 lines: one class over one database; every table's reads and writes share its
connection and lock, so a transaction never spans modules.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from graph.kernel.design import Design
from graph.prompts import PromptError, prompt_names, prompt_spec, template_errors
from graph.redaction import redact, redact_data
from graph.service.database import Database, Transaction, open_database
from graph.service.eval_sets import EvalSet
from graph.service.import_checks import (
    check_run_export,
    shown_count,
    shown_design,
    shown_object,
    shown_time,
)
from graph.service.leases import LeaseLost
from graph.service.schema import MIGRATIONS, SCHEMA_VERSION
from graph.service.state_deltas import StateLog
from graph.settings import Settings, get_settings

FILE_NAME = "stepwise.sqlite"

STATUSES = ("queued", "running", "waiting", "paused", "done", "failed", "cancelled", "interrupted")
LIVE_STATUSES = ("queued", "running")
# Stopped on purpose, safe in the checkpointer, going on when someone acts: waiting for
# a human's decision, or paused between nodes in step mode. A restart leaves them be.
SETTLED_STATUSES = ("waiting", "paused")
TERMINAL_STATUSES = ("done", "failed", "cancelled", "interrupted")
SHELVED_TEXT = 4096  # characters: a text this long is stored once, not in every event
INTERRUPTED_REASON = "The app stopped while this run was in progress."
EXPORT_FORMAT = "stepwise-run"

_RUN_COLUMNS = (
    "id, question, system, design_json, prompt_versions_json, settings_json, status, "
    "reason, model_label, created_at, started_at, finished_at, final_answer, "
    "step_count, replan_count, parent_run, parent_checkpoint"
)


@dataclass
class PromptVersion:
    id: int
    prompt_name: str
    label: str
    text: str
    created_at: float


@dataclass
class RunRecord:
    id: str
    question: str
    system: str
    design: dict
    prompt_versions: dict
    status: str
    reason: str
    model_label: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    final_answer: str | None
    step_count: int
    replan_count: int
    parent_run: str | None
    parent_checkpoint: str | None
    settings: dict = field(default_factory=dict)  # Settings.public_dict(): no secrets

    @property
    def duration_s(self) -> float | None:
        """Wall time from start to finish, or so far while it runs; None before it starts."""
        if self.started_at is None:
            return None
        end = (
            self.finished_at
            if self.finished_at is not None
            else (time.time() if self.status in LIVE_STATUSES else None)
        )
        return None if end is None else max(0.0, end - self.started_at)

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES


@dataclass
class ExperimentRecord:
    """An experiment as recorded: what it ran with, so a rerun can run exactly that."""

    id: str
    name: str
    eval_set: dict  # EvalSet.model_dump()
    variants: list[dict]  # [{name, prompts: every prompt's full text, versions}]
    repeats: int
    max_workers: int
    design: dict
    settings: dict  # Settings.public_dict() plus resolved_provider: no secrets
    status: str  # running / waiting (runs wait for a person) / done / stopped
    created_at: float
    finished_at: float | None
    rerun_of: str | None
    approvals: str = "human"  # auto: decided by the experiment; human; design: its policy

    @property
    def total(self) -> int:
        """How many runs the experiment makes: questions x variants x repeats."""
        return len(self.eval_set.get("questions") or []) * len(self.variants) * self.repeats


# A run nobody holds: no owner, or its owner stopped renewing (the one parameter: now).
_LEASE_FREE = "(owner IS NULL OR lease_until IS NULL OR lease_until < ?)"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Store:
    """The app's SQLite file. Thread-safe: every statement runs under one re-entrant lock."""

    def __init__(self, path: Path | None = None, *, database: Database | None = None):
        """The store in the SQLite file ``path``, or in ``database`` (see ``open``);
        migrated to ``SCHEMA_VERSION`` first."""
        self._db = database if database is not None else open_database(path)
        self.path: Path | None = getattr(self._db, "path", None)  # None on PostgreSQL
        self._states = StateLog()  # state events are stored as patches on the previous one
        self._db.migrate(MIGRATIONS)

    @classmethod
    def open(cls, settings: Settings | None = None) -> Store:
        """The store of ``settings``: the PostgreSQL database of ``STEPWISE_DATABASE_URL``
        when set, else the file under ``STEPWISE_HOME`` (the folder is created if missing).
        ``DatabaseUnavailable`` says in one sentence why PostgreSQL cannot be used."""
        settings = settings or get_settings()
        if settings.database_url is not None:
            return cls(database=open_database(url=settings.database_url.get_secret_value()))
        home = Path(settings.home)
        home.mkdir(parents=True, exist_ok=True)
        return cls(home / FILE_NAME)

    @property
    def location(self) -> str:
        """Where the store is, for people: the file, or the database URL without password."""
        return self._db.location

    @property
    def database(self) -> Database:
        """The connection, for the repositories of other tables (``model_profiles``)."""
        return self._db

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    def close(self) -> None:
        self._db.close()

    @property
    def schema_version(self) -> int:
        return self._query("SELECT MAX(version) FROM schema_version")[0][0]

    def _query(self, sql: str, params: Iterable = ()) -> list:
        return self._db.query(sql, params)

    def _write(self, sql: str, params: Iterable = ()) -> Any:  # the statement's cursor
        return self._db.execute(sql, params)

    # ------------------------------------------------------------------ designs

    def save_design(self, design: Design, name: str = "current") -> None:
        self._write(
            "INSERT INTO designs (name, design_json, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET design_json = excluded.design_json, "
            "updated_at = excluded.updated_at",
            (name, design.model_dump_json(), time.time()),
        )

    def load_design(self, name: str = "current") -> Design | None:
        """The saved design, or None when there is none or it no longer validates (an agent
        was removed from the catalog, say): the page then starts from the default."""
        rows = self._query("SELECT design_json FROM designs WHERE name = ?", (name,))
        if not rows:
            return None
        try:
            return Design.model_validate_json(rows[0]["design_json"])
        except (ValidationError, ValueError):
            return None

    # ------------------------------------------------------------------ prompt versions

    @staticmethod
    def _prompt_version(row: Any) -> PromptVersion:  # a database row
        return PromptVersion(
            row["id"], row["prompt_name"], row["label"], row["text"], row["created_at"]
        )

    def save_prompt_version(self, prompt_name: str, label: str, text: str) -> PromptVersion:
        """Store a new version; an invalid template is refused here, so it can never
        become active and break a run."""
        if errors := template_errors(prompt_name, text):
            raise PromptError(" ".join(errors))
        with self._db.transaction() as tx:
            if not label.strip():
                count = tx.execute(
                    "SELECT COUNT(*) FROM prompt_versions WHERE prompt_name = ?", (prompt_name,)
                ).fetchone()[0]
                label = f"v{count + 1}"
            version_id = tx.insert_id(
                "INSERT INTO prompt_versions (prompt_name, label, text, created_at) "
                "VALUES (?, ?, ?, ?)",
                (prompt_name, label.strip(), text, time.time()),
            )
        found = self.prompt_version(version_id)
        assert found is not None  # written above
        return found

    def prompt_versions(self, prompt_name: str) -> list[PromptVersion]:
        rows = self._query(
            "SELECT * FROM prompt_versions WHERE prompt_name = ? ORDER BY id DESC", (prompt_name,)
        )
        return [self._prompt_version(r) for r in rows]

    def prompt_version(self, version_id: int) -> PromptVersion | None:
        rows = self._query("SELECT * FROM prompt_versions WHERE id = ?", (version_id,))
        return self._prompt_version(rows[0]) if rows else None

    def set_active_prompt(self, prompt_name: str, version_id: int | None) -> None:
        """Make a version the one runs use; None goes back to the shipped default."""
        prompt_spec(prompt_name)  # PromptError for a name no system declares
        if version_id is None:
            self._write("DELETE FROM active_prompts WHERE prompt_name = ?", (prompt_name,))
            return
        version = self.prompt_version(version_id)
        if version is None:
            raise ValueError(f"No prompt version {version_id}.")
        if version.prompt_name != prompt_name:
            raise ValueError(
                f"Version {version_id} belongs to {version.prompt_name!r}, not {prompt_name!r}."
            )
        self._write(
            "INSERT INTO active_prompts (prompt_name, version_id) VALUES (?, ?) "
            "ON CONFLICT(prompt_name) DO UPDATE SET version_id = excluded.version_id",
            (prompt_name, version_id),
        )

    def active_prompts(self) -> dict[str, PromptVersion]:
        rows = self._query(
            "SELECT v.* FROM active_prompts a JOIN prompt_versions v "
            "ON v.id = a.version_id ORDER BY a.prompt_name"
        )
        return {r["prompt_name"]: self._prompt_version(r) for r in rows}

    def active_prompt_texts(self) -> dict[str, str]:
        """What goes into ``Design.prompts`` for a run; prompts no system declares any more
        are left out so they cannot block every run."""
        known = set(prompt_names())
        return {name: v.text for name, v in self.active_prompts().items() if name in known}

    # ------------------------------------------------------------------ runs

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
            step_count=shown_count(row["step_count"]),
            replan_count=shown_count(row["replan_count"]),
            parent_run=row["parent_run"],
            parent_checkpoint=row["parent_checkpoint"],
            settings=shown_object(row["settings_json"]),
        )

    def create_run(
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
        self._write(
            f"INSERT INTO runs ({_RUN_COLUMNS}, owner, lease_until) VALUES "
            "(?, ?, ?, ?, ?, ?, 'queued', '', ?, ?, NULL, NULL, NULL, 0, 0, ?, ?, ?, ?)",
            (
                run_id,
                question,
                design.system,
                design.model_dump_json(),
                _dumps(prompt_versions or {}),
                _dumps(public),
                model_label,
                time.time(),
                parent_run,
                parent_checkpoint,
                owner,
                self._db.clock() + lease_s if owner else None,
            ),
        )
        found = self.run(run_id)
        assert found is not None  # written above
        return found

    def set_run_status(
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
            self._write(sql, params)
            return
        if self._write(sql + " AND owner = ?", (*params, owner)).rowcount == 0 and self.run(run_id):
            raise LeaseLost(run_id)

    def run(self, run_id: str) -> RunRecord | None:
        rows = self._query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return self._run_record(rows[0]) if rows else None

    def runs(
        self, status: str | None = None, text: str | None = None, limit: int = 200
    ) -> list[RunRecord]:
        """Newest first; ``text`` matches anywhere in the question, ignoring case."""
        where, params = [], []
        if status:
            where.append("status = ?")
            params.append(status)
        if text and text.strip():
            where.append("LOWER(question) LIKE LOWER(?) ESCAPE '\\'")
            params.append(_like(text.strip()))
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        return [self._run_record(r) for r in self._query(sql, [*params, int(limit)])]

    def delete_run(self, run_id: str) -> None:
        with self._db.transaction() as tx:
            tx.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
            self._states.forget(run_id)
            tx.execute("DELETE FROM queued_redirects WHERE run_id = ?", (run_id,))
            tx.execute("DELETE FROM decisions WHERE run_id = ?", (run_id,))
            tx.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    def mark_interrupted(self) -> int:
        """Runs a dead process left queued or running can never finish: say so. A run
        whose owner still renews its lease is live in another process and left alone."""
        now = self._db.clock()
        cursor = self._write(
            "UPDATE runs SET status = 'interrupted', reason = ?, finished_at = ?, "
            "owner = NULL, lease_until = NULL "
            f"WHERE status IN ({', '.join('?' * len(LIVE_STATUSES))}) AND {_LEASE_FREE}",
            (INTERRUPTED_REASON, now, *LIVE_STATUSES, now),
        )
        return cursor.rowcount

    # ------------------------------------------------------------------ leases

    def claim_run(self, run_id: str, owner: str, lease_s: float) -> bool:
        """Hold a run for ``owner`` for ``lease_s`` seconds, in one statement so two
        processes never both win; False when another owner's lease has not run out."""
        now = self._db.clock()
        cursor = self._write(
            "UPDATE runs SET owner = ?, lease_until = ? "
            f"WHERE id = ? AND (owner = ? OR {_LEASE_FREE})",
            (owner, now + lease_s, run_id, owner, now),
        )
        return cursor.rowcount == 1

    def renew_leases(self, owner: str, run_ids: Iterable[str], lease_s: float) -> int:
        """The owner's heartbeat: its live runs stay its own for ``lease_s`` more."""
        run_ids = list(run_ids)
        if not run_ids:
            return 0
        cursor = self._write(
            "UPDATE runs SET lease_until = ? "
            f"WHERE owner = ? AND id IN ({', '.join('?' * len(run_ids))})",
            (self._db.clock() + lease_s, owner, *run_ids),
        )
        return cursor.rowcount

    def keep_leases(self, owner: str, run_ids: Iterable[str], lease_s: float) -> set[str]:
        """``renew_leases``, saying which of ``run_ids`` the owner still holds: the others
        were taken over, or marked interrupted, while it was not renewing them."""
        run_ids = list(run_ids)
        if not run_ids:
            return set()
        marks = ", ".join("?" * len(run_ids))
        until = self._db.clock() + lease_s
        with self._db.transaction() as tx:
            tx.execute(
                f"UPDATE runs SET lease_until = ? WHERE owner = ? AND id IN ({marks})",
                (until, owner, *run_ids),
            )
            rows = tx.execute(
                f"SELECT id FROM runs WHERE owner = ? AND id IN ({marks})", (owner, *run_ids)
            ).fetchall()
        return {row[0] for row in rows}

    @staticmethod
    def _fence(tx: Transaction, run_id: str, owner: str) -> None:
        """Go on with this transaction only while ``owner`` holds the run; the row stays
        locked until the commit, so no other process claims it in between."""
        if (
            tx.execute(
                "UPDATE runs SET owner = owner WHERE id = ? AND owner = ?", (run_id, owner)
            ).rowcount
            == 0
            and tx.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone()
        ):
            raise LeaseLost(run_id)

    def release_run(self, run_id: str, owner: str) -> None:
        """The owner no longer runs it (ended, waiting, paused): anyone may act on it."""
        self._write(
            "UPDATE runs SET owner = NULL, lease_until = NULL WHERE id = ? AND owner = ?",
            (run_id, owner),
        )

    def live_owners(self) -> set[str]:
        """The owners holding queued or running runs now."""
        rows = self._query(
            "SELECT DISTINCT owner FROM runs WHERE owner IS NOT NULL "
            f"AND status IN ({', '.join('?' * len(LIVE_STATUSES))})",
            LIVE_STATUSES,
        )
        return {r["owner"] for r in rows}

    def lease_clock(self) -> float:
        """Now, by the clock leases are kept in: the PostgreSQL server's, so processes on
        machines whose clocks disagree never take over a run whose lease is still held."""
        return self._db.clock()

    def end_leases(self, owner: str) -> None:
        """An owner known to be gone (its process no longer exists): its leases end now."""
        self._write("UPDATE runs SET lease_until = 0 WHERE owner = ?", (owner,))

    def run_lease(self, run_id: str) -> tuple[str | None, float | None]:
        """(owner, lease_until) of a run; (None, None) when nobody holds it. Leases are
        in the database's clock (``lease_clock``): on SQLite this machine's."""
        rows = self._query("SELECT owner, lease_until FROM runs WHERE id = ?", (run_id,))
        return (rows[0]["owner"], rows[0]["lease_until"]) if rows else (None, None)

    # ------------------------------------------------------------------ queued redirects

    def queue_redirect(self, run_id: str, spec: dict, note: str = "") -> int:
        """Record a redirect (a follow-up message, an edited request) asked of a live run,
        before it is applied at the run's next stop: a crash in between does not lose it.
        ``spec`` is JSON data the run service rebuilds it from; returns its id."""
        return self._db.insert_id(
            "INSERT INTO queued_redirects (run_id, spec_json, note, created_at) "
            "VALUES (?, ?, ?, ?)",
            (run_id, json.dumps(spec, ensure_ascii=False), note, time.time()),
        )

    def queued_redirects(self, run_id: str) -> list[dict]:
        """The run's redirects not yet applied, oldest first: {id, spec, note, created_at}."""
        rows = self._query("SELECT * FROM queued_redirects WHERE run_id = ? ORDER BY id", (run_id,))
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
        self._write("DELETE FROM queued_redirects WHERE id = ?", (int(redirect_id),))

    # ------------------------------------------------------------------ events

    def append_event(self, run_id: str, record: dict) -> int:
        """Store one ``event_record``; returns the seq it was stored under.

        A "state" event also becomes the run's latest snapshot (and its counts); in the
        log it is kept without the chart spec, which is large and repeated each step.
        An "end" event sets the run's final status. A seq not above the latest one (a
        resumed run counts from 1 again) is moved to the end of the log. An event with a
        ``key`` already in the log (a node update a resumed run replays) is not stored
        again: the seq it has is returned. LangGraph's pseudo-nodes are never stored.
        """
        return self.append_events(run_id, [record])[0]

    def append_events(
        self, run_id: str, records: list[dict], owner: str | None = None
    ) -> list[int]:
        """Store ``event_record``s of one run, in order, in one transaction (as
        ``append_event`` each); the seq each was stored under. One commit for several
        events: each SQLite call lets the run's other threads take the interpreter, so
        a write costs far more mid-run than alone. ``owner``: only while it holds the
        run (``LeaseLost`` otherwise, nothing stored)."""
        prepared = [self._redacted(record) for record in records]
        seqs: list[int] = []
        try:
            with self._db.transaction() as tx:
                if owner is not None:
                    self._fence(tx, run_id, owner)
                latest = self._latest_seq(tx, run_id)
                for record, state in prepared:
                    seq = self._insert_event(tx, run_id, record, state, latest)
                    latest = max(latest, seq)
                    seqs.append(seq)
        except BaseException:
            # A state event's base may not have been committed: the next is stored whole.
            self._states.forget(run_id)
            raise
        return seqs

    @staticmethod
    def _redacted(record: dict) -> tuple[dict, bool]:
        """The record with secrets taken out, and whether it is a state event (whose
        snapshot is redacted by what changed since the run's previous one:
        ``StateLog.to_store``). An echoed server error may carry an API key."""
        state = record["kind"] == "state" and isinstance(record.get("data"), dict)
        if state:
            return {**redact_data({**record, "data": None}), "data": record["data"]}, True
        return redact_data(record), False

    def _insert_event(
        self, tx: Transaction, run_id: str, record: dict, state: bool, latest: int
    ) -> int:
        """``append_event``'s writes for one redacted record, ``latest`` the run's
        highest seq so far; the seq it is stored under."""
        kind = record["kind"]
        data = record.get("data")
        key = record.get("key")
        if kind == "update" and str(record.get("node") or "").startswith("__"):
            return latest
        if key is not None and (
            known := tx.execute(
                "SELECT seq FROM events WHERE run_id = ? AND event_key = ?", (run_id, key)
            ).fetchone()
        ):
            return known[0]
        seq = int(record["seq"]) if int(record["seq"]) > latest else latest + 1
        logged = data
        if state and isinstance(data, dict):  # a state event's data is a dict
            logged, whole = self._states.to_store(
                run_id, {k: v for k, v in data.items() if k != "chart_spec"}
            )
            data = {
                **whole,
                **redact_data({k: v for k, v in data.items() if k == "chart_spec"}),
            }
        tx.execute(
            "INSERT INTO events (run_id, seq, ts, kind, node, namespace, step, data_json, "
            "event_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                seq,
                record.get("ts") or time.time(),
                kind,
                record.get("node") or "",
                record.get("namespace") or "",
                record.get("step"),
                self._event_json(tx, logged),
                key,
            ),
        )
        if kind == "state" and isinstance(data, dict):
            counts = data.get("counts") or {}  # the system's own (System.counts)
            tx.execute(
                "UPDATE runs SET snapshot_json = ?, step_count = ?, replan_count = ?, "
                "final_answer = COALESCE(?, final_answer) WHERE id = ?",
                (
                    _dumps(data),
                    int(counts.get("steps", len(data.get("rows") or []))),
                    int(counts.get("replans", 0)),
                    data.get("final_answer"),
                    run_id,
                ),
            )
            # The base of the run's next state event (forgotten if this transaction fails).
            self._states.stored(run_id, seq, whole)
        elif kind == "end" and isinstance(data, dict):
            status = data.get("status")
            if status in SETTLED_STATUSES:
                tx.execute(
                    "UPDATE runs SET status = ?, reason = ? WHERE id = ?",
                    (status, str(data.get("reason") or ""), run_id),
                )
            else:
                status = status if status in TERMINAL_STATUSES else "failed"
                tx.execute(
                    "UPDATE runs SET status = ?, reason = ?, finished_at = ? WHERE id = ?",
                    (
                        status,
                        str(data.get("reason") or ""),
                        record.get("ts") or time.time(),
                        run_id,
                    ),
                )
        return seq

    def pending_interrupts(self, run_id: str) -> list[dict]:
        """What a waiting run asks a human, from its last end event ({id, kind, step,
        agent, query, reason, asked_at})."""
        rows = self._query(
            "SELECT data_json FROM events WHERE run_id = ? AND kind = 'end' "
            "ORDER BY seq DESC LIMIT 1",
            (run_id,),
        )
        if not rows:
            return []
        return list((self._load(rows[0][0]) or {}).get("interrupts") or [])

    @staticmethod
    def _latest_seq(tx: Transaction, run_id: str) -> int:
        row = tx.execute("SELECT MAX(seq) FROM events WHERE run_id = ?", (run_id,)).fetchone()
        return row[0] or 0

    def update_keys(self, run_id: str) -> set[str] | None:
        """The keys of the run's top-level node updates; None when some update has none (a
        run logged before updates were keyed: its log cannot be matched to checkpoints)."""
        rows = self._query(
            "SELECT event_key FROM events WHERE run_id = ? AND kind = 'update' AND namespace = ''",
            (run_id,),
        )
        keys = {r["event_key"] for r in rows}
        return None if None in keys else keys

    def last_seq_of_keys(self, run_id: str, keys: list[str]) -> int | None:
        """The seq of the last of these keyed events in the run's log; None when none is."""
        if not keys:
            return None
        rows = self._query(
            f"SELECT MAX(seq) FROM events WHERE run_id = ? AND event_key IN "
            f"({', '.join('?' * len(keys))})",
            (run_id, *keys),
        )
        return rows[0][0]

    def latest_seq(self, run_id: str) -> int:
        return self._query("SELECT MAX(seq) FROM events WHERE run_id = ?", (run_id,))[0][0] or 0

    def _event_json(self, tx: Transaction, value: Any) -> str:
        """An event's data as stored: its JSON, long texts shelved. A value whose whole
        JSON is shorter than a shelved text holds none: most values are not walked."""
        text = _dumps(value)
        return text if len(text) < SHELVED_TEXT else _dumps(self._shelve(tx, value))

    def _shelve(self, tx: Transaction, value: Any) -> Any:
        """Long texts stored once: every state event repeats the run's messages and
        results, so a long text would be copied into each. Such a text goes into
        ``event_texts`` by its hash, and the event holds ``{"$text": hash}``. Called
        inside a write transaction."""
        if isinstance(value, str):
            if len(value) < SHELVED_TEXT:
                return value
            sha = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
            tx.execute(
                "INSERT INTO event_texts (sha, text) VALUES (?, ?) ON CONFLICT (sha) DO NOTHING",
                (sha, value),
            )
            return {"$text": sha}
        if isinstance(value, dict):
            return {k: self._shelve(tx, v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._shelve(tx, v) for v in value]
        return value

    def _load(self, data_json: str) -> Any:
        """An event's data with its shelved texts put back."""
        data = json.loads(data_json)
        if '"$text"' not in data_json:
            return data
        texts: dict[str, str] = {}

        def back(value: Any) -> Any:
            if isinstance(value, dict):
                if len(value) == 1 and isinstance(value.get("$text"), str):
                    sha = value["$text"]
                    if sha not in texts:
                        row = self._query("SELECT text FROM event_texts WHERE sha = ?", (sha,))
                        texts[sha] = row[0]["text"] if row else ""
                    return texts[sha]
                return {k: back(v) for k, v in value.items()}
            if isinstance(value, list):
                return [back(v) for v in value]
            return value

        return back(data)

    def _event(self, row: Any) -> dict:
        return {
            "seq": row["seq"],
            "ts": row["ts"],
            "kind": row["kind"],
            "node": row["node"],
            "namespace": row["namespace"],
            "step": row["step"],
            "data": self._load(row["data_json"]),
        }

    def events(
        self, run_id: str, after_seq: int = 0, kinds: tuple[str, ...] | None = None
    ) -> list[dict]:
        sql = (
            "SELECT seq, ts, kind, node, namespace, step, data_json FROM events "
            "WHERE run_id = ? AND seq > ?"
        )
        params: list = [run_id, after_seq]
        if kinds:
            sql += f" AND kind IN ({', '.join('?' * len(kinds))})"
            params += list(kinds)
        found = [self._event(r) for r in self._query(sql + " ORDER BY seq", params)]
        return self._states.resolve(run_id, found, self._states_until)

    def idle_events(self, run_ids: list[str]) -> dict[str, list[dict]]:
        """Per run, only the events that say when it did no work: its "end" events
        (waiting for a person, paused, between turns), each followed by the time of the
        event after it (``kind`` "next"), and its pace holds. The History list's work
        time is read from these, not from every event of fifty runs."""
        found: dict[str, list[dict]] = {r: [] for r in run_ids}
        if not run_ids:
            return found
        marks = ", ".join("?" * len(run_ids))
        rows = self._query(
            "SELECT run_id, seq, ts, kind, node, namespace, step, data_json, "
            "(SELECT n.ts FROM events n WHERE n.run_id = e.run_id AND n.seq > e.seq "
            "ORDER BY n.seq LIMIT 1) AS next_ts FROM events e "
            f"WHERE run_id IN ({marks}) AND (kind = 'end' OR "
            "(kind = 'custom' AND data_json LIKE ?)) ORDER BY run_id, seq",
            [*run_ids, '%"pac%'],  # {"pacing": ...} and {"paced": ...}
        )
        for row in rows:
            events = found[row["run_id"]]
            events.append(self._event(row))
            if row["kind"] == "end" and row["next_ts"] is not None:
                events.append({"ts": row["next_ts"], "kind": "next", "data": {}})
        return found

    def _states_until(self, run_id: str, seq: int) -> list[tuple[int, Any]]:
        """The run's stored state events up to ``seq``, newest first (patches as stored)."""
        rows = self._query(
            "SELECT seq, data_json FROM events WHERE run_id = ? AND kind = 'state' AND seq <= ? "
            "ORDER BY seq DESC",
            (run_id, seq),
        )
        return [(r["seq"], self._load(r["data_json"])) for r in rows]

    def snapshot(self, run_id: str) -> dict | None:
        rows = self._query("SELECT snapshot_json FROM runs WHERE id = ?", (run_id,))
        if not rows or rows[0]["snapshot_json"] is None:
            return None
        return json.loads(rows[0]["snapshot_json"])

    def messages(
        self, run_id: str, step: int | None = None, agent: str | None = None
    ) -> list[dict]:
        """The run's messages in order, as the top-level nodes added them (a sub-agent's
        messages arrive twice: from inside it and when its node returns; the top-level copy
        carries the step and agent, so that is the one kept)."""
        rows = self._query(
            "SELECT data_json FROM events WHERE run_id = ? AND kind = 'update' "
            "AND namespace = '' ORDER BY seq",
            (run_id,),
        )
        seen: set[str] = set()
        found = []
        for row in rows:
            data = self._load(row["data_json"])
            if not isinstance(data, dict):
                continue
            for message in data.get("messages") or []:
                if not isinstance(message, dict):
                    continue
                if message.get("id") is not None:
                    if message["id"] in seen:
                        continue
                    seen.add(message["id"])
                if step is not None and message.get("step") != step:
                    continue
                if agent is not None and message.get("agent") != agent:
                    continue
                found.append(message)
        return found

    def nodes_run(self, run_id: str) -> list[str]:
        """The top-level nodes in the order they ran: the path taken through the graph."""
        rows = self._query(
            "SELECT node FROM events WHERE run_id = ? AND kind = 'update' "
            "AND namespace = '' ORDER BY seq",
            (run_id,),
        )
        return [r["node"] for r in rows]

    # ------------------------------------------------------------------ export / import

    def export_run(self, run_id: str) -> dict:
        """A run as one JSON-safe dict: the record, the latest snapshot and every event."""
        record = self.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        return redact_data(
            {
                "format": EXPORT_FORMAT,
                "schema_version": SCHEMA_VERSION,
                "exported_at": time.time(),
                "run": asdict(record),
                "snapshot": self.snapshot(run_id),
                "events": self.events(run_id),
            }
        )

    def import_run(self, data: dict) -> str:
        """Load an exported run; it gets a new id if its id is already taken. The whole
        file is checked first (``graph.service.import_checks``): ImportProblem names
        what is wrong, and nothing of a refused file is stored."""
        return self.import_run_noting(data)[0]

    def import_run_noting(self, data: dict) -> tuple[str, list[str]]:
        """``import_run``, and sentences on what was left out of the file (a model
        server its design named)."""
        checked = check_run_export(
            data, get_settings(), export_format=EXPORT_FORMAT, statuses=STATUSES
        )
        run, snapshot = checked.record, checked.snapshot
        run_id = run["id"] or uuid.uuid4().hex
        with self._db.transaction() as tx:
            if tx.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                run_id = uuid.uuid4().hex
            status = run["status"] if run["status"] in TERMINAL_STATUSES else "interrupted"
            tx.execute(
                f"INSERT INTO runs ({_RUN_COLUMNS}, snapshot_json) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    run["question"],
                    run["system"],
                    _dumps(run["design"]),
                    _dumps(run["prompt_versions"]),
                    _dumps(run["settings"]),
                    status,
                    run["reason"],
                    run["model_label"],
                    run["created_at"],
                    run["started_at"],
                    run["finished_at"],
                    run["final_answer"],
                    run["step_count"],
                    run["replan_count"],
                    run["parent_run"],
                    run["parent_checkpoint"],
                    _dumps(snapshot) if snapshot is not None else None,
                ),
            )
            tx.executemany(
                "INSERT INTO events (run_id, seq, ts, kind, node, namespace, step, data_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, *event[:-1], _dumps(event[-1])) for event in checked.events],
            )
        return run_id, checked.notes

    # ------------------------------------------------------------------ eval sets

    def save_eval_set(self, eval_set: EvalSet) -> None:
        """Store (or replace) an eval set under its name."""
        self._write(
            "INSERT INTO eval_sets (name, eval_set_json, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET eval_set_json = excluded.eval_set_json, "
            "updated_at = excluded.updated_at",
            (eval_set.name, eval_set.model_dump_json(), time.time()),
        )

    def eval_set_names(self) -> list[str]:
        return [r["name"] for r in self._query("SELECT name FROM eval_sets ORDER BY name")]

    def load_eval_set(self, name: str) -> EvalSet | None:
        rows = self._query("SELECT eval_set_json FROM eval_sets WHERE name = ?", (name,))
        return EvalSet.model_validate_json(rows[0]["eval_set_json"]) if rows else None

    def delete_eval_set(self, name: str) -> bool:
        return self._write("DELETE FROM eval_sets WHERE name = ?", (name,)).rowcount > 0

    # ------------------------------------------------------------------ experiments

    @staticmethod
    def _experiment(row: Any) -> ExperimentRecord:
        return ExperimentRecord(
            id=row["id"],
            name=row["name"],
            eval_set=json.loads(row["eval_set_json"]),
            variants=json.loads(row["variants_json"]),
            repeats=row["repeats"],
            max_workers=row["max_workers"],
            design=json.loads(row["design_json"]),
            settings=json.loads(row["settings_json"]),
            status=row["status"],
            created_at=row["created_at"],
            finished_at=row["finished_at"],
            rerun_of=row["rerun_of"],
            approvals=row["approvals"] or "human",
        )

    def create_experiment(
        self,
        experiment_id: str,
        name: str,
        eval_set: EvalSet,
        variants: list[dict],
        repeats: int,
        max_workers: int,
        design: Design,
        settings: Settings,
        rerun_of: str | None = None,
        approvals: str = "human",
    ) -> ExperimentRecord:
        """Record an experiment before its runs start; settings in their public form plus
        the provider they resolve to (never a key)."""
        public = {**settings.public_dict(), "resolved_provider": settings.resolved_provider}
        self._write(
            "INSERT INTO experiments (id, name, eval_set_json, variants_json, repeats, "
            "max_workers, design_json, settings_json, status, created_at, finished_at, "
            "rerun_of, approvals) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, NULL, ?, ?)",
            (
                experiment_id,
                name,
                eval_set.model_dump_json(),
                _dumps(variants),
                int(repeats),
                int(max_workers),
                design.model_dump_json(),
                _dumps(public),
                time.time(),
                rerun_of,
                approvals,
            ),
        )
        found = self.experiment(experiment_id)
        assert found is not None  # written above
        return found

    def experiment(self, experiment_id: str) -> ExperimentRecord | None:
        rows = self._query("SELECT * FROM experiments WHERE id = ?", (experiment_id,))
        return self._experiment(rows[0]) if rows else None

    def experiments(self, limit: int = 100) -> list[ExperimentRecord]:
        """Newest first."""
        rows = self._query(
            "SELECT * FROM experiments ORDER BY created_at DESC, rowid DESC LIMIT ?", (int(limit),)
        )
        return [self._experiment(r) for r in rows]

    def set_experiment_status(self, experiment_id: str, status: str) -> None:
        finished = None if status in ("running", "waiting") else time.time()
        self._write(
            "UPDATE experiments SET status = ?, finished_at = ? WHERE id = ?",
            (status, finished, experiment_id),
        )

    def add_experiment_run(
        self, experiment_id: str, run_id: str, variant: str, question_index: int, repeat: int
    ) -> None:
        self._write(
            "INSERT INTO experiment_runs (experiment_id, run_id, variant, "
            "question_index, repeat) VALUES (?, ?, ?, ?, ?)",
            (experiment_id, run_id, variant, int(question_index), int(repeat)),
        )

    def experiment_runs(self, experiment_id: str) -> list[dict]:
        """The experiment's runs in the order they were started, each with its run's
        status (None when the run was deleted from History)."""
        rows = self._query(
            "SELECT e.run_id, e.variant, e.question_index, e.repeat, r.status FROM "
            "experiment_runs e LEFT JOIN runs r ON r.id = e.run_id WHERE e.experiment_id = ? "
            "ORDER BY e.rowid",
            (experiment_id,),
        )
        return [dict(r) for r in rows]

    def experiment_places(self, run_ids: Iterable[str]) -> dict[str, dict]:
        """Where each run sits in an experiment: {run_id: {experiment_id, experiment,
        variant, question_index, repeat (from 0), repeats}}; runs in none are left out."""
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return {}
        rows = self._query(
            "SELECT e.run_id, e.experiment_id, x.name, e.variant, e.question_index, e.repeat, "
            "x.repeats FROM experiment_runs e JOIN experiments x ON x.id = e.experiment_id "
            f"WHERE e.run_id IN ({', '.join('?' * len(ids))})",
            ids,
        )
        return {
            r["run_id"]: {
                "experiment_id": r["experiment_id"],
                "experiment": r["name"],
                "variant": r["variant"],
                "question_index": r["question_index"],
                "repeat": r["repeat"],
                "repeats": r["repeats"],
            }
            for r in rows
        }

    # ------------------------------------------------------------------ decisions

    def record_decision(
        self, run_id: str, item: dict, decision: str, by: str, reason: str = ""
    ) -> None:
        """What answered a run's question, by whom (a person, or ``timeout`` when the
        design's default applied) and when: the Approvals page shows it in the card's place."""
        self._write(
            "INSERT INTO decisions (interrupt_id, run_id, decision, decided_by, "
            "reason, decided_at, item_json) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (interrupt_id) DO UPDATE SET run_id = excluded.run_id, "
            "decision = excluded.decision, decided_by = excluded.decided_by, "
            "reason = excluded.reason, decided_at = excluded.decided_at, "
            "item_json = excluded.item_json",
            (item["id"], run_id, decision, by, reason, time.time(), _dumps(item)),
        )

    def decisions_since(self, since: float) -> list[dict]:
        """The questions answered since ``since``, each as it was asked plus ``run_id``
        and ``decided`` ({decision, by, reason, at}), oldest answer first."""
        rows = self._query(
            "SELECT * FROM decisions WHERE decided_at >= ? ORDER BY decided_at, interrupt_id",
            (since,),
        )
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

    # ------------------------------------------------------------------ judgements

    def save_judgement(self, run_id: str, model_label: str, scores: dict) -> None:
        """A judge model's scores of a run (the latest judgement replaces the previous)."""
        self._write(
            "INSERT INTO judgements (run_id, model_label, scores_json, judged_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET "
            "model_label = excluded.model_label, scores_json = excluded.scores_json, "
            "judged_at = excluded.judged_at",
            (run_id, model_label, _dumps(scores), time.time()),
        )

    def judgement(self, run_id: str) -> dict | None:
        """{model_label, scores, judged_at}, or None when the run was never judged."""
        rows = self._query("SELECT * FROM judgements WHERE run_id = ?", (run_id,))
        if not rows:
            return None
        return {
            "model_label": rows[0]["model_label"],
            "scores": json.loads(rows[0]["scores_json"]),
            "judged_at": rows[0]["judged_at"],
        }

    def create_judge_job(self, job_id: str, experiment_id: str | None, total: int) -> None:
        """A batch of runs to judge in the background, recorded so any page can show it."""
        self._write(
            "INSERT INTO judge_jobs (id, experiment_id, total, status, created_at) "
            "VALUES (?, ?, ?, 'running', ?)",
            (job_id, experiment_id, total, time.time()),
        )

    def update_judge_job(
        self, job_id: str, judged: int, failed: int, error: str = "", status: str = "running"
    ) -> None:
        """How far a judge job got: runs judged, runs that could not be, the last reason."""
        self._write(
            "UPDATE judge_jobs SET judged = ?, failed = ?, error = ?, status = ?, "
            "finished_at = CASE WHEN ? = 'running' THEN NULL ELSE ? END WHERE id = ?",
            (judged, failed, error, status, status, time.time(), job_id),
        )

    def judge_job(self, job_id: str) -> dict | None:
        rows = self._query("SELECT * FROM judge_jobs WHERE id = ?", (job_id,))
        return dict(rows[0]) if rows else None

    def latest_judge_job(self, experiment_id: str) -> dict | None:
        """The newest judge job of an experiment's runs, or None."""
        rows = self._query(
            "SELECT * FROM judge_jobs WHERE experiment_id = ? ORDER BY created_at DESC LIMIT 1",
            (experiment_id,),
        )
        return dict(rows[0]) if rows else None

    # ------------------------------------------------------------------ model servers

    def load_model_modes(self) -> dict[tuple[str, str], dict]:
        """What each model server was found to accept (``graph.models.modes.ModeBook``
        reads it at start, so a restart does not learn it again)."""
        return {
            (r["server"], r["model"]): json.loads(r["modes_json"])
            for r in self._query("SELECT * FROM model_modes")
        }

    def save_model_modes(self, server: str, model: str, modes: dict) -> None:
        """Remember (or, with an empty ``modes``, forget) what a server/model accepts."""
        if not modes:
            self._write("DELETE FROM model_modes WHERE server = ? AND model = ?", (server, model))
            return
        self._write(
            "INSERT INTO model_modes (server, model, modes_json, updated_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(server, model) DO UPDATE SET "
            "modes_json = excluded.modes_json, updated_at = excluded.updated_at",
            (server, model, _dumps(modes), time.time()),
        )
