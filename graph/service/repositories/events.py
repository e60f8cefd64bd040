"""The event log: what happened in each run, in order, and the run's latest snapshot.
Appending an event also keeps the run's snapshot, counts and end status in the same
transaction."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from graph.redaction import clean_json, redact_data
from graph.service.database import Database, Refused, Transaction
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


class Events:
    """The ``events`` and ``event_texts`` tables, and the snapshot a state event sets."""

    def __init__(self, db: Database, states: StateLog) -> None:
        self.db = db
        self._states = states  # state events are stored as patches on the previous one
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
                for record, state, text in prepared:
                    seq = self._insert_event(tx, run_id, record, state, latest, known, text)
                    latest = max(latest, seq)
                    seqs.append(seq)
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
        ``fence`` does), that no seq of the run is as high as the batch's first and that
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
            or any(
                r["kind"] == "update" and str(r.get("node") or "").startswith("__") for r in records
            )
        ):
            return None
        checks = ["EXISTS (SELECT 1 FROM events WHERE run_id = ? AND seq >= ?)"]
        params: list[Any] = [run_id, seqs[0]]
        if keys:
            checks.append("EXISTS (SELECT 1 FROM events WHERE run_id = ? AND event_key = ANY(?))")
            params += [run_id, keys]
        if owner is not None:
            fenced = f"WITH fenced AS ({FENCE_SQL} RETURNING id) "
            checks.insert(0, "NOT EXISTS (SELECT 1 FROM fenced)")
            params = [run_id, owner, *params]
        else:
            fenced = ""
        try:
            with self.db.unread() as tx:  # one message: one wait, one round trip
                tx.execute(
                    f"{fenced}SELECT stepwise_refuse('not held, or not new') "
                    f"WHERE {' OR '.join(checks)}",
                    params,
                )
                for (record, state, text), seq in zip(prepared, seqs):
                    self._insert_event(tx, run_id, record, state, seq - 1, {}, text)
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
        (``clean_json``: encoded once, not copied). An echoed server error may carry an
        API key."""
        state = record["kind"] == "state" and isinstance(record.get("data"), dict)
        if clean_json([record.get(k) for k in _HEADER]) is None:  # a secret in a field
            record = {**redact_data({**record, "data": None}), "data": record.get("data")}
        if state:
            return record, True, None
        text = clean_json(record.get("data"))
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
    ) -> int:
        """``append``'s writes for one redacted record, ``latest`` the run's
        highest seq so far, ``known`` the seqs of its keys already logged (this one's
        added once written), ``text`` its data's JSON if already made; the seq it is
        stored under. Nothing here reads a result: on PostgreSQL the writes go with the
        commit."""
        kind = record["kind"]
        data = record.get("data")
        key = record.get("key")
        if kind == "update" and str(record.get("node") or "").startswith("__"):
            return latest
        if key is not None and key in known:
            return known[key]
        seq = int(record["seq"]) if int(record["seq"]) > latest else latest + 1
        if key is not None:
            known[key] = seq
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
                self._event_json(tx, logged, text),
                key,
            ),
        )
        if kind == "state" and isinstance(data, dict):
            counts = data.get("counts")  # the system's own (its snapshot's)
            if not isinstance(counts, dict):
                counts = {"steps": len(data.get("rows") or [])}
            tx.execute(
                "UPDATE runs SET snapshot_json = ?, counts_json = ?, "
                "final_answer = COALESCE(?, final_answer) WHERE id = ?",
                (
                    dumps(data),
                    dumps({str(k): int(v) for k, v in counts.items()}),
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
        rows = self.db.query(
            "SELECT data_json FROM events WHERE run_id = ? AND kind = 'end' "
            "ORDER BY seq DESC LIMIT 1",
            (run_id,),
        )
        if not rows:
            return []
        return list((self._load(rows[0][0]) or {}).get("interrupts") or [])

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

    def update_keys(self, run_id: str) -> set[str] | None:
        """The keys of the run's top-level node updates; None when some update has none (a
        run logged before updates were keyed: its log cannot be matched to checkpoints)."""
        rows = self.db.query(
            "SELECT event_key FROM events WHERE run_id = ? AND kind = 'update' AND namespace = ''",
            (run_id,),
        )
        keys = {r["event_key"] for r in rows}
        return None if None in keys else keys

    def last_seq_of_keys(self, run_id: str, keys: list[str]) -> int | None:
        """The seq of the last of these keyed events in the run's log; None when none is."""
        if not keys:
            return None
        rows = self.db.query(
            f"SELECT MAX(seq) FROM events WHERE run_id = ? AND event_key IN "
            f"({', '.join('?' * len(keys))})",
            (run_id, *keys),
        )
        return rows[0][0]

    def latest_seq(self, run_id: str) -> int:
        return self.db.query("SELECT MAX(seq) FROM events WHERE run_id = ?", (run_id,))[0][0] or 0

    def _event_json(self, tx: Transaction, value: Any, text: str | None = None) -> str:
        """An event's data as stored: its JSON (``text`` if made already), long texts
        shelved. A value whose whole JSON is shorter than a shelved text holds none: most
        values are not walked."""
        text = dumps(value) if text is None else text
        return text if len(text) < SHELVED_TEXT else dumps(self._shelve(tx, value))

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
                        row = self.db.query("SELECT text FROM event_texts WHERE sha = ?", (sha,))
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

    def read(
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
        found = [self._event(r) for r in self.db.query(sql + " ORDER BY seq", params)]
        return self._states.resolve(run_id, found, self._states_until)

    def idle(self, run_ids: list[str]) -> dict[str, list[dict]]:
        """Per run, only the events that say when it did no work: its "end" events
        (waiting for a person, paused, between turns), each followed by the time of the
        event after it (``kind`` "next"), and its pace holds. The History list's work
        time is read from these, not from every event of fifty runs."""
        found: dict[str, list[dict]] = {r: [] for r in run_ids}
        if not run_ids:
            return found
        marks = ", ".join("?" * len(run_ids))
        rows = self.db.query(
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
        rows = self.db.query(
            "SELECT seq, data_json FROM events WHERE run_id = ? AND kind = 'state' AND seq <= ? "
            "ORDER BY seq DESC",
            (run_id, seq),
        )
        return [(r["seq"], self._load(r["data_json"])) for r in rows]

    def snapshot(self, run_id: str) -> dict | None:
        rows = self.db.query("SELECT snapshot_json FROM runs WHERE id = ?", (run_id,))
        if not rows or rows[0]["snapshot_json"] is None:
            return None
        return json.loads(rows[0]["snapshot_json"])

    def messages(
        self, run_id: str, step: int | None = None, agent: str | None = None
    ) -> list[dict]:
        """The run's messages in order, as the top-level nodes added them (a sub-agent's
        messages arrive twice: from inside it and when its node returns; the top-level copy
        carries the step and agent, so that is the one kept)."""
        rows = self.db.query(
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
        rows = self.db.query(
            "SELECT node FROM events WHERE run_id = ? AND kind = 'update' "
            "AND namespace = '' ORDER BY seq",
            (run_id,),
        )
        return [r["node"] for r in rows]
