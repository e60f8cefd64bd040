"""How a run service holds its runs in the store: claims, the heartbeat, orphans.

A part of the run service. A run is claimed before it is handed to a worker (refused in
words while another live process holds it), its lease renewed every few seconds while
it is live here, and let go of once it is not; a live run nobody renews is marked
interrupted (its owner stopped), and a run this process lost is stopped here.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from concurrent import futures
from contextlib import contextmanager
from typing import Iterator

from graph.service.run_host import RunHost
from graph.service.run_writes import RunWrites

log = logging.getLogger(__name__)

# How long answering a run waits for its ending leg to let go of it (that takes
# milliseconds; its approval callbacks run first).
LEG_END_WAIT_S = 10.0


def _process_exists(pid: int) -> bool:
    """Whether a process with this id runs on this machine (signal 0 only checks; not on
    Windows, where os.kill would end the process: there the lease decides)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, under another user
    return True


class RunHolds:
    """A run service's holds on its runs: claiming, renewing and letting go."""

    def __init__(self, service: RunHost, writes: RunWrites) -> None:
        self.service = service
        self.writes = writes

    def stop_lost(self, run_id: str) -> None:
        """``Leases.on_lost``: a run taken from this process stops before its next node
        (its checkpoint writes are refused from now on anyway). A server run goes on
        there, for the process that holds it now: not stopped (``stops_when_lost``)."""
        if not self.service.executor.stops_when_lost:
            return
        with self.service.table.lock:
            entry = self.service.table.live.get(run_id)
            self.service.table.redirects.pop(run_id, None)  # recorded ones wait in the store
        if entry is not None:
            entry[1].redirecting = False
            entry[1].set()

    def release(self, run_id: str) -> None:
        """Let go of a run this process no longer runs (called under the table's lock by
        the worker loop; also by a server executor and ``answered_elsewhere``)."""
        try:
            self.service.store.release_run(run_id, self.service.owner)
        except Exception as exc:  # the store is gone: the lease runs out by itself
            log.warning("Run %s: its lease not given back (it runs out by itself): %s", run_id, exc)

    def held_elsewhere(self, run_id: str) -> str:
        _, until = self.service.store.run_lease(run_id)
        left = max(0.0, (until or 0.0) - self.service.store.lease_clock())
        where = (
            "on this home" if self.service.store.dialect == "sqlite" else "sharing this database"
        )
        return (
            f"The run is in progress in another app process {where}; it can be taken "
            f"over only once that process has stopped for {self.service.lease_s:g} s "
            f"(in {left:.0f} s at the earliest)."
        )

    def after_its_last_leg(self, run_id: str) -> None:
        """Wait (at most ``LEG_END_WAIT_S``) for a leg of the run that is still ending here:
        its worker writes the run's status (waiting, paused), tells the approval callbacks
        and only then lets go of the run. A claim made in that moment was undone by that
        letting go, and the next leg ran without its lease and stopped."""
        with self.service.table.lock:
            entry = self.service.table.live.get(run_id)
        if entry is None:
            return
        ended, _ = futures.wait([entry[0]], timeout=LEG_END_WAIT_S)
        if not ended:  # still running: submit refuses it as in progress
            log.info("Run %s: its leg still runs after %g s", run_id, LEG_END_WAIT_S)

    @contextmanager
    def holding(self, run_id: str) -> Iterator[None]:
        """Hold the run for this process while it is handed to a worker (ValueError when a
        live process holds it); let go again if handing it over fails. A leg of it still
        ending here is waited for first (``after_its_last_leg``)."""
        self.after_its_last_leg(run_id)
        self.writes.check_room()
        if not self.service.store.claim_run(run_id, self.service.owner, self.service.lease_s):
            raise ValueError(self.held_elsewhere(run_id))
        try:
            yield
        except BaseException:
            with self.service.table.lock:
                if run_id not in self.service.table.live:
                    self.service.release(run_id)
            raise

    def mark_orphans(self) -> int:
        """Mark interrupted the live runs nobody holds: their lease ran out, or their
        owner was a process on this machine that no longer exists (a restarted app
        need not wait out the lease of the one it replaces)."""
        host = socket.gethostname()
        for owner in self.service.store.run_records.live_owners():
            owner_host, _, rest = owner.partition(":")
            pid = rest.partition(":")[0]
            if owner_host == host and pid.isdigit() and not _process_exists(int(pid)):
                self.service.store.run_records.end_leases(owner)
        return self.service.store.mark_interrupted()

    def keep_leases(self) -> None:
        """The heartbeat: renew the hold on this process's live runs every few seconds;
        with ``claim_orphans``, also mark runs whose owner stopped renewing interrupted."""
        tick = min(self.service.lease_s / 3, 5.0)
        failing = ""  # why the last beat failed: said once, and when it works again
        while True:
            with self.service.table.lock:
                live = list(self.service.table.live)
            if self.service.closed and not live:
                return
            try:
                self.writes.write_unwritten()
                self.service.reserve.keep()
                self.service.leases.renew(live)
                if self.service.claim_orphans and not self.service.closed:
                    self.mark_orphans()
            except Exception as exc:  # the store may be closing or away; try again next tick
                self.service.leases.unconfirm()
                if str(exc) != failing and not self.service.closed:
                    log.warning(
                        "The runs' heartbeat (leases of %s) could not reach the store, "
                        "tried again each %g s: %s",
                        ", ".join(live) or "(none live)",
                        tick,
                        exc,
                    )
                failing = str(exc)
            else:
                if failing:
                    log.warning("The runs' heartbeat reaches the store again.")
                failing = ""
            if self.service.closed:
                time.sleep(tick)  # pause returns at once now: keep renewing until the last run ends
            else:
                self.service.pause(tick)
