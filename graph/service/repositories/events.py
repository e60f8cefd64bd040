"""The event log written: what happened in each run, in order, and the run's latest
snapshot. Appending an event also keeps the run's snapshot, counts and end status in the
same transaction. Reading it back: ``event_reads``."""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

from graph.redaction import clean_json, clean_text, clean_texts, redact_data
from graph.service.database import Database, Refused, Transaction
from graph.service.repositories.event_reads import EventReads
from graph.service.repositories.shared import (
    FENCE_SQL,
    SETTLED_STATUSES,
    SHELVED_TEXT,
    TERMINAL_STATUSES,
    dumps,
    refuse_unheld,
)
from graph.service.state_deltas import StateLog

# The fields of an event record stored as text besides its data.
_HEADER = ("kind", "node", "namespace", "step", "key")


_INSERT_EVENT = (
    "INSERT INTO events (run_id, seq, ts, kind, node, namespace, step, data_json, event_key) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

# A JSON string token at least a shelved text long: its opening quote, then that many
# characters that are not a quote (an escaped quote inside it replaced by two others).
_LONG_TOKEN = re.compile('"[^"]{%d}' % SHELVED_TEXT)


def _may_hold_long_text(text: str) -> bool:
    """Whether the JSON ``text`` of a value may hold a string of ``SHELVED_TEXT``
    characters or more (``_shelve`` stores those once). Never False when it does: such a
    string's token is at least as long as the string (escapes only lengthen it), and an
    escaped quote in it is counted as two characters, not as its end. True for some that
    do not (a long key, an escaped backslash before a closing quote): they are walked."""
    if len(text) < SHELVED_TEXT:
        return False
    return _LONG_TOKEN.search(text.replace('\\"', "''") if '\\"' in text else text) is not None


_SET_SNAPSHOT = (
    "UPDATE runs SET snapshot_json = ?, counts_json = ?, final_answer = COALESCE(?, final_answer)"
)


def _snapshot_values(row: dict) -> tuple:
    """``_SET_SNAPSHOT``'s values for ``row`` (``snapshot``, ``final``): the runs row's
    snapshot and counts, and its final answer unless ``final`` is None."""
    data = row["snapshot"]
    counts = data.get("counts")  # the system's own (its snapshot's)
    if not isinstance(counts, dict):
        counts = {"steps": len(data.get("rows") or [])}
    return dumps(data), dumps({str(k): int(v) for k, v in counts.items()}), row["final"]


def _fence_with(row: dict, run_id: str, owner: str) -> tuple[str, list[Any]]:
    """The ``WITH fenced`` of a batch's check (PostgreSQL), and its values: the runs row
    of a run ``owner`` holds, locked until the commit (as ``fence``) and written once
    per batch: its snapshot set when the batch has one (``row``), else only locked
    (``FOR NO KEY UPDATE``, as an UPDATE of it locks it: no new row version)."""
    if row:
        return (
            f"WITH fenced AS ({_SET_SNAPSHOT} WHERE id = ? AND owner = ? RETURNING id) ",
            [*_snapshot_values(row), run_id, owner],
        )
    return (
        "WITH fenced AS (SELECT id FROM runs WHERE id = ? AND owner = ? FOR NO KEY UPDATE) ",
        [run_id, owner],
    )


class _Kept(Transaction):
    """Statements kept to be sent later in another transaction (``statements``);
    nothing to read from them."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, None)
        self.statements: list[tuple[str, tuple]] = []

    def execute(self, sql: str, params: Any = ()) -> None:
        self.statements.append((sql, tuple(params)))


def _pseudo_update(record: dict) -> bool:
    """An update of LangGraph's own (``__interrupt__``...): never stored."""
    return record["kind"] == "update" and str(record.get("node") or "").startswith("__")


def _clean_header(record: dict) -> bool:
    """Whether the record's short fields hold nothing ``redact`` would take out: their
    strings searched together when each is a string, a number or None (as they are),
    else their JSON."""
    header = [record.get(k) for k in _HEADER]
    if all(v is None or type(v) in (str, int) for v in header):
        return clean_texts([v for v in header if isinstance(v, str)])
    return clean_json(header) is not None


class Events(EventReads):
    """The ``events`` and ``event_texts`` tables written, and the snapshot a state event
    sets (the reads: ``EventReads``)."""

    def __init__(self, db: Database, states: StateLog) -> None:
        super().__init__(db, states)
        # Runs whose events were stored under other seqs than their own (a resumed run's,
        # one another writer logged to meanwhile): their batches read first (``append``).
        self._renumbered: set[str] = set()

    def append(self, run_id: str, records: list[dict], owner: str | None = None) -> list[int]:
        """Store ``event_record``s of one run, in order, in one transaction; the seq each
        was stored under. One commit for several events: each SQLite call lets the run's
        other threads take the interpreter, so a write costs far more mid-run than alone.
        ``owner``: only while it holds the run (``LeaseLost`` otherwise, nothing stored).

        A "state" event also becomes the run's latest snapshot (and its counts); in the
        log it is kept without the chart spec, which is large and repeated each step.
        An "end" event sets the run's final status. A seq not above the latest one (a
        resumed run counts from 1 again) is moved to the end of the log. An event with a
        ``key`` already in the log (a node update a resumed run replays) is not stored
        again: the seq it has is returned. LangGraph's pseudo-nodes are never stored.
        """
        prepared = [self._redacted(record) for record in records]
        if self.db.dialect == "postgresql" and run_id not in self._renumbered:
            stored = self._append_at_once(run_id, prepared, owner)
            if stored is not None:
                return stored
        keys = list(dict.fromkeys(r["key"] for r, _, _ in prepared if r.get("key") is not None))
        seqs: list[int] = []
        try:
            # Pipelined: on PostgreSQL the reads below go in one round trip, and the
            # writes with the commit in one more, whatever the batch's size.
            with self.db.transaction(pipelined=True) as tx:
                asked = self._ask_latest_seq(tx, run_id, owner)
                logged = (
                    tx.execute(
                        "SELECT event_key, seq FROM events WHERE run_id = ? AND event_key IN "
                        f"({', '.join('?' * len(keys))})",
                        (run_id, *keys),
                    )
                    if keys
                    else None
                )
                latest = self._latest_seq(tx, run_id, owner, asked.fetchall())
                known = {row[0]: int(row[1]) for row in logged.fetchall()} if logged else {}
                row: dict = {}  # the runs row's snapshot, as the batch's last state sets it
                rows: list[tuple] = []  # the batch's events rows, inserted in one call
                for record, state, text in prepared:
                    seq = self._insert_event(
                        tx, run_id, record, state, latest, known, text, row, rows
                    )
                    latest = max(latest, seq)
                    seqs.append(seq)
                tx.executemany(_INSERT_EVENT, rows)
                if row:
                    self._set_snapshot(tx, run_id, row)
        except BaseException:
            # A state event's base may not have been committed: the next is stored whole.
            self._states.forget(run_id)
            raise
        if any(seq != int(r["seq"]) for seq, (r, _, _) in zip(seqs, prepared)):
            if len(self._renumbered) >= 1024:  # a few a day; never more than this kept
                self._renumbered.clear()
            self._renumbered.add(run_id)  # its next batches too: no use trying them at once
        return seqs

    def _append_at_once(
        self, run_id: str, prepared: list[tuple[dict, bool, str | None]], owner: str | None
    ) -> list[int] | None:
        """PostgreSQL: ``append``'s batch in one round trip, its statements sent as one
        message (``Database.unread``: nothing read before the end), when the batch is as
        a running run's usually is: its seqs in order, its keys distinct, no pseudo-node.
        Each event is then stored under its own seq, which the first statement checks on
        the server: that ``owner`` holds the run (the row locked until the commit, as
        ``fence`` does, and its snapshot set in the same UPDATE: the row written once a
        batch, ``_fence_with``), that no seq of the run is as high as the batch's first and that
        none of its keys is logged yet; else it gives up the transaction
        (``stepwise_refuse``) and None is returned, nothing stored: the batch goes the
        way that reads first (two round trips)."""
        records = [record for record, _, _ in prepared]
        seqs = [int(r["seq"]) for r in records]
        keys = [r["key"] for r in records if r.get("key") is not None]
        if (
            not records
            or any(b <= a for a, b in zip(seqs, seqs[1:]))
            or len(set(keys)) != len(keys)
            or any(_pseudo_update(r) for r in records)
        ):
            return None
        checks = ["EXISTS (SELECT 1 FROM events WHERE run_id = ? AND seq >= ?)"]
        params: list[Any] = [run_id, seqs[0]]
        if keys:
            checks.append("EXISTS (SELECT 1 FROM events WHERE run_id = ? AND event_key = ANY(?))")
            params += [run_id, keys]
        try:
            with self.db.unread() as tx:  # one message: one wait, one round trip
                # The events' statements first kept aside: the check, sent before them,
                # carries the runs row's snapshot their last state sets.
                body = _Kept(self.db)
                row: dict = {}  # the runs row's snapshot, as the batch's last state sets it
                for (record, state, text), seq in zip(prepared, seqs):
                    self._insert_event(body, run_id, record, state, seq - 1, {}, text, row)
                if owner is not None:
                    # The fence, the row locked until the commit as ``fence`` does, written
                    # once: by the snapshot's UPDATE, or (none in the batch) only locked.
                    fenced, fence_params = _fence_with(row, run_id, owner)
                    checks.insert(0, "NOT EXISTS (SELECT 1 FROM fenced)")
                    params = [*fence_params, *params]
                else:
                    fenced = ""
                tx.execute(
                    f"{fenced}SELECT stepwise_refuse('not held, or not new') "
                    f"WHERE {' OR '.join(checks)}",
                    params,
                )
                for sql, values in body.statements:
                    tx.execute(sql, values)
                if row and owner is None:
                    self._set_snapshot(tx, run_id, row)
        except Refused:
            self._states.forget(run_id)  # the base its state events were patched on
            return None
        except BaseException:
            self._states.forget(run_id)
            raise
        return seqs

    @staticmethod
    def _redacted(record: dict) -> tuple[dict, bool, str | None]:
        """The record with secrets taken out, whether it is a state event (whose
        snapshot is redacted by what changed since the run's previous one:
        ``StateLog.to_store``), and its data's JSON when that is known to hold no secret
        (``clean_json``: encoded once, not copied; ``event_record``'s ``data_json`` when
        it made it). An echoed server error may carry an API key."""
        state = record["kind"] == "state" and isinstance(record.get("data"), dict)
        made = record.get("data_json")
        if not _clean_header(record):  # a secret in a field: those redacted, the data below
            record = {
                **redact_data({**record, "data": None, "data_json": None}),
                "data": record.get("data"),
            }
        if state:
            return record, True, None
        text = clean_text(made) if isinstance(made, str) else clean_json(record.get("data"))
        if text is None:  # it may hold a secret (or is not JSON alone): the copy redacted
            return {**record, "data": redact_data(record.get("data"))}, False, None
        return record, False, text

    def _insert_event(
        self,
        tx: Transaction,
        run_id: str,
        record: dict,
        state: bool,
        latest: int,
        known: dict[str, int],
        text: str | None = None,
        row: dict | None = None,
        rows: list[tuple] | None = None,
    ) -> int:
        """``append``'s writes for one redacted record, ``latest`` the run's
        highest seq so far, ``known`` the seqs of its keys already logged (this one's
        added once written), ``text`` its data's JSON if already made; the seq it is
        stored under. A state event's whole snapshot goes into ``row`` (replacing an
        earlier one of the batch: a reader sees only the transaction's last), written to
        the runs row by ``_set_snapshot``; without ``row``, at once. The events row goes
        into ``rows`` when given, for the caller to insert with the batch's others in one
        call (``_INSERT_EVENT``; each SQLite call lets the run's other threads take the
        interpreter), else at once. Nothing here reads a result: on PostgreSQL the writes
        go with the commit."""
        kind = record["kind"]
        data = record.get("data")
        key = record.get("key")
        if _pseudo_update(record):
            return latest
        if key is not None and key in known:
            return known[key]
        seq = int(record["seq"]) if int(record["seq"]) > latest else latest + 1
        if key is not None:
            known[key] = seq
        logged = data
        if state and isinstance(data, dict):  # a state event's data is a dict
            logged, whole, text = self._states.to_store(
                run_id, {k: v for k, v in data.items() if k != "chart_spec"}
            )
            data = {
                **whole,
                **redact_data({k: v for k, v in data.items() if k == "chart_spec"}),
            }
        values = (
            run_id,
            seq,
            record.get("ts") or time.time(),
            kind,
            record.get("node") or "",
            record.get("namespace") or "",
            record.get("step"),
            self._event_json(tx, logged, text),
            key,
        )
        if rows is None:
            tx.execute(_INSERT_EVENT, values)
        else:
            rows.append(values)
        if kind == "state" and isinstance(data, dict):
            final = data.get("final_answer")
            if row is None:
                self._set_snapshot(tx, run_id, {"snapshot": data, "final": final})
            else:
                row["snapshot"] = data
                row["final"] = row.get("final") if final is None else final
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

    @staticmethod
    def _set_snapshot(tx: Transaction, run_id: str, row: dict) -> None:
        """The runs row's snapshot and counts, and its final answer unless ``final`` is
        None (``row``: ``snapshot``, ``final``)."""
        tx.execute(_SET_SNAPSHOT + " WHERE id = ?", (*_snapshot_values(row), run_id))

    @staticmethod
    def _ask_latest_seq(tx: Transaction, run_id: str, owner: str | None) -> Any:
        """Ask the run's highest seq so far; with an ``owner``, in the statement that
        fences the write (``fence``): one round trip for both on PostgreSQL. The cursor,
        read by ``_latest_seq``."""
        if owner is None:
            return tx.execute("SELECT MAX(seq) FROM events WHERE run_id = ?", (run_id,))
        return tx.execute(
            f"{FENCE_SQL} RETURNING (SELECT MAX(seq) FROM events WHERE run_id = ?)",
            (run_id, owner, run_id),
        )

    @staticmethod
    def _latest_seq(tx: Transaction, run_id: str, owner: str | None, rows: list) -> int:
        """The seq ``_ask_latest_seq`` read; ``LeaseLost`` when ``owner`` does not hold
        the run (``refuse_unheld``, as ``fence`` does)."""
        if rows:
            return int(rows[0][0] or 0)
        if owner is not None:
            refuse_unheld(tx, run_id)
        row = tx.execute("SELECT MAX(seq) FROM events WHERE run_id = ?", (run_id,)).fetchone()
        return int(row[0] or 0)

    def _event_json(self, tx: Transaction, value: Any, text: str | None = None) -> str:
        """An event's data as stored: its JSON (``text`` if made already), long texts
        shelved. Only a value whose JSON holds a string token of a shelved text's length
        is walked (``_may_hold_long_text``): most values are not."""
        text = dumps(value) if text is None else text
        return dumps(self._shelve(tx, value)) if _may_hold_long_text(text) else text

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
