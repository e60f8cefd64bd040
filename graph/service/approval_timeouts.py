"""When nobody decides in time: each design's default applied to the approvals older than
its timeout, by a thread of the run service's own (``ApprovalTimeouts.watch``).

A timeout the store cannot take now (its disk full, its database away) is never dropped:
it is logged with its run once, held with the sentence saying why (the approval's
``timeout_held``, which its card shows), and tried again on every tick; applied late,
its decision's reason says how late and why. The run stays waiting meanwhile: a decision
that could not be written leaves its status as it was (``RunService.decide``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

from graph.kernel.design import Design
from graph.models.chat import describe_error
from graph.service.disk_space import DiskFull
from graph.service.store import RunRecord
from graph.settings import Settings

log = logging.getLogger(__name__)


class Decider(Protocol):
    """What the timeouts use of their run service (``RunService``'s public members)."""

    settings: Settings
    timeout_tick_s: float

    @property
    def closed(self) -> bool: ...
    def pause(self, seconds: float) -> None: ...
    def pending_approvals(self) -> list[dict]: ...
    def stored(self, run_id: str) -> tuple[RunRecord, Design]: ...
    def decide(
        self,
        run_id: str,
        interrupt_id: str,
        decision: str,
        query: str = "",
        reason: str = "",
        by: str = "human",
    ) -> None: ...
    def tell_approval(self, kind: str, run_id: str, item: dict | None = None) -> None: ...


class ApprovalTimeouts:
    """The timeouts one run service applies, and those it holds until the store can take
    them: (run id, interrupt id) -> (why, since when)."""

    def __init__(self, service: Decider):
        self.service = service
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], tuple[str, float]] = {}
        self._unchecked = ""  # why the last tick could not even list the approvals

    def held(self, run_id: str, interrupt_id: str) -> str | None:
        """Why this approval's timeout, past its deadline, is not applied yet (None: it
        is not held)."""
        with self._lock:
            entry = self._held.get((run_id, interrupt_id))
        return entry[0] if entry else None

    def apply(self, now: float | None = None) -> int:
        """Apply each design's default to approvals older than its timeout; how many."""
        now = now or time.time()
        pending = self.service.pending_approvals()
        with self._lock:  # answered or gone meanwhile: nothing left to hold
            asked = {(item["run_id"], item["id"]) for item in pending}
            self._held = {key: held for key, held in self._held.items() if key in asked}
        return sum(self._apply_one(item, now) for item in pending)

    def _apply_one(self, item: dict, now: float) -> bool:
        run_id, interrupt_id = item["run_id"], item["id"]
        try:
            _, design = self.service.stored(run_id)
        except Exception as exc:  # deleted, or a design this build cannot read: logged by _hold
            self._hold(run_id, interrupt_id, describe_error(exc, self.service.settings), now, exc)
            return False
        limit = design.approval_timeout_s
        if not limit or now - (item.get("asked_at") or now) < limit:
            return False
        reason = f"no decision within {limit:g} s"
        with self._lock:
            held = self._held.get((run_id, interrupt_id))
        if held:
            reason += f"; applied {now - held[1]:.0f} s late, once the store could be written"
        try:
            self.service.decide(
                run_id, interrupt_id, design.timeout_action, reason=reason, by="timeout"
            )
        except DiskFull as exc:  # a ValueError too: not to be taken for "answered meanwhile"
            self._hold(run_id, interrupt_id, str(exc), now)
            return False
        except ValueError:
            return False  # answered meanwhile
        except Exception as exc:  # the database away, or else: held, logged by _hold, retried
            self._hold(run_id, interrupt_id, describe_error(exc, self.service.settings), now, exc)
            return False
        with self._lock:
            self._held.pop((run_id, interrupt_id), None)
        if held:
            log.warning("Run %s: its approval's timeout applied (%s).", run_id, reason)
        self.service.tell_approval("timeout", run_id, item)
        return True

    def _hold(
        self,
        run_id: str,
        interrupt_id: str,
        why: str,
        now: float,
        error: BaseException | None = None,
    ) -> None:
        """Keep a timeout the store refused, logged once for each new reason."""
        with self._lock:
            before = self._held.get((run_id, interrupt_id))
            self._held[(run_id, interrupt_id)] = (why, before[1] if before else now)
        if before is None or before[0] != why:
            log.warning(
                "Run %s: its approval's timeout is due but could not be applied; the run "
                "keeps waiting and it is tried again each %g s: %s",
                run_id,
                self.service.timeout_tick_s,
                why,
                exc_info=error,
            )

    def watch(self) -> None:
        """The thread's loop, until the service closes."""
        service = self.service
        while not service.closed:
            try:
                self.apply()
                if self._unchecked:
                    log.warning("Approval timeouts are checked again.")
                    self._unchecked = ""
            except Exception as exc:  # the store closing or away: said once, tried next tick
                if not service.closed and str(exc) != self._unchecked:
                    log.warning("Approval timeouts could not be checked: %s", exc, exc_info=exc)
                self._unchecked = str(exc)
            service.pause(service.timeout_tick_s)
