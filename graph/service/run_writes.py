"""What a run's worker writes, and how a run's end is kept when the store cannot take it.

A part of the run service. A worker's events, status and notes are written only while
this process holds the run (its lease, ``leases.py``); a run's end is the one write a
full disk must not take away (the store's reserve is given back for it), and an end the
store cannot take at all (its database away) is kept in the service's table and written
once it answers.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from graph.kernel.design import Design
from graph.service.disk_space import DiskFull, no_room_message
from graph.service.leases import LeaseLost
from graph.service.run_host import RunHost
from graph.service.run_records import StateHistory, event_record, missed_updates

log = logging.getLogger(__name__)


class RunWrites:
    """A run service's writes for its workers, and the ends it keeps until written."""

    def __init__(self, service: RunHost) -> None:
        self.service = service

    def store_events(self, run_id: str, system: str, events: list) -> None:
        """A worker's events, stored only while this process holds the run."""
        self.service.leases.check(run_id)
        try:
            self.service.store.append_events(
                run_id,
                [event_record(event, system) for event in events],
                owner=self.service.leases.owner_of(run_id),
            )
            if any(event.kind == "end" for event in events):
                self.service.table.ended.add(run_id)
        except LeaseLost:
            self.service.leases.lose(run_id)
            raise
        except Exception:
            self.service.leases.unconfirm(run_id)  # the store is away: the next node asks again
            raise

    def set_status(self, run_id: str, status: str, reason: str = "") -> None:
        """A worker's change of its run's status, only while this process holds it."""
        self.service.leases.check(run_id)
        try:
            self.service.store.set_run_status(
                run_id, status, reason, owner=self.service.leases.owner_of(run_id)
            )
        except LeaseLost:
            self.service.leases.lose(run_id)
            raise

    def end_or_keep(self, run_id: str, status: str, reason: str) -> None:
        """Write how a worker's run ended; when the store cannot take it now (its
        database is away), keep it and the run's lease, and write it as soon as the
        store answers again (``write_unwritten``): never left "running" by an outage.
        On a full disk the store's reserve is given back for it first."""
        try:
            self.write_despite_full(lambda: self.set_status(run_id, status, reason))
        except LeaseLost:
            pass
        except Exception as exc:
            log.warning(
                "Run %s ended %s but the store could not record it (%s): "
                "kept to be written once it answers.",
                run_id,
                status,
                exc,
            )
            with self.service.table.lock:
                self.service.table.unwritten[run_id] = (status, reason)

    def write_despite_full(self, write: Callable[[], None]) -> None:
        """``write``, once more with the store's reserve given back if the disk was full:
        how a run ended (or stands) is the one write a full disk must not take away."""
        try:
            write()
        except DiskFull:
            if not self.service.reserve.release():
                raise
            write()

    def check_room(self) -> None:
        """Refuse new work (``DiskFull``) while the store's reserve has been given back to
        a full disk and there is not yet room to make it again: a run started now could
        take the room the ends of runs are written with."""
        if self.service.reserve.path is not None and not self.service.reserve.keep():
            raise DiskFull(no_room_message(self.service.store.location))

    def unwritten_end(self, run_id: str) -> tuple[str, str] | None:
        """How a run of this process ended, (status, reason), when the store could not
        record it yet (its disk full even after the reserve, its database away): what
        the store will say once it can."""
        with self.service.table.lock:
            return self.service.table.unwritten.get(run_id)

    def write_unwritten(self) -> None:
        """Write the ends kept by ``end_or_keep`` and let go of those runs (the
        heartbeat, and ``resume`` before it looks at a run)."""
        with self.service.table.lock:
            pending = dict(self.service.table.unwritten)
        for run_id, (status, reason) in pending.items():
            try:
                self.service.store.set_run_status(run_id, status, reason, owner=self.service.owner)
            except LeaseLost:  # lapsed and taken over meanwhile: its holder says how it went
                log.warning(
                    "Run %s: how it ended here (%s) not written: another app process has it now.",
                    run_id,
                    status,
                )
            except Exception as exc:  # still away (said when it was kept): next time
                log.debug("Run %s: its end (%s) still not written: %s", run_id, status, exc)
                continue
            else:
                log.warning(
                    "Run %s: its end (%s) written now that the store answers.", run_id, status
                )
            with self.service.table.lock:
                self.service.table.unwritten.pop(run_id, None)
                if run_id not in self.service.table.live:
                    self.service.release(run_id)

    def reconcile_events(self, run_id: str, design: Design, compiled: StateHistory) -> None:
        """Log the node updates a crash kept out of the event log (saved in the checkpoints,
        never logged), so the log, the drawn graph and the run's state agree; a run
        logged before updates were keyed is left as it is."""
        known = self.service.store.update_keys(run_id)
        if known is None:
            return
        for event in missed_updates(compiled, run_id, known):
            self.service.store.append_event(run_id, event_record(event, design.system))

    def log(self, run_id: str, data: dict, step: int | None = None) -> None:
        """A note of the service's own in the run's event log (a "custom" event), written
        only while this process holds the run when one of its workers runs it."""
        self.service.leases.check(run_id)
        record = {
            "seq": self.service.store.latest_seq(run_id) + 1,
            "ts": time.time(),
            "kind": "custom",
            "node": "",
            "namespace": "",
            "step": step,
            "data": data,
        }
        try:
            self.service.store.append_events(
                run_id, [record], owner=self.service.leases.owner_of(run_id)
            )
        except LeaseLost:
            self.service.leases.lose(run_id)
            raise
