"""The event log read back: a run's events in order (long texts put back, state patches
resolved into whole snapshots), its latest snapshot, its messages, the path it took, and
what a waiting run asks a human. The writes are ``events.Events``, which adds them to
these reads."""

from __future__ import annotations

import json
from typing import Any

from graph.service.database import Database
from graph.service.state_deltas import StateLog


class EventReads:
    """Reads of the ``events`` and ``event_texts`` tables and the runs row's snapshot."""

    def __init__(self, db: Database, states: StateLog) -> None:
        self.db = db
        self._states = states  # state events are stored as patches on the previous one

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
