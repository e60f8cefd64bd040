"""The worker loop of a local run (its stream driven here or in a worker process): a
part of the run service, run by the thread and process executors (``run_executors.py``).

The run's lease is held while it runs; each leg of its stream is driven until it stops,
the redirects queued meanwhile applied between legs; its end is written (or kept until
the store can take it), and the run let go of, under the lock a redirect queues with.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graph.kernel.design import Design
from graph.models.chat import describe_error
from graph.service.disk_space import disk_full, run_cut_off_reason
from graph.service.leases import LeaseLost
from graph.service.postgres_database import database_lost, database_lost_reason
from graph.service.run_controls import StopSignal
from graph.service.run_executors import Drive, LegEnd
from graph.service.run_host import QueuedRedirect, RunHost
from graph.service.run_processes import RunFailed, WorkerDied
from graph.service.run_redirects import Redirects
from graph.service.run_storage import database_url
from graph.service.run_writes import RunWrites
from graph.service.store import SETTLED_STATUSES, TERMINAL_STATUSES

log = logging.getLogger(__name__)


class Workers:
    """A run service's worker loop for its local runs."""

    def __init__(self, service: RunHost, writes: RunWrites, redirects: Redirects) -> None:
        self.service = service
        self.writes = writes
        self.redirects = redirects

    def work_here(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
        drive: Drive,
    ) -> None:
        """A local executor's worker: each leg of the stream driven by ``drive`` (here
        or in a worker process), queued redirects applied between legs, the run's end
        written. Never raises, never calls Streamlit; the store gets the outcome, unless
        the run is lost to another process (then nothing more is written)."""
        leftover: list[QueuedRedirect] = []
        self.service.leases.hold(run_id)
        try:
            # A local run is always submitted with its compiled graph.
            assert compiled is not None
            if cancel.is_set() and not cancel.redirecting:
                self.writes.set_status(run_id, "cancelled", "Cancelled before it started.")
                return
            self.writes.set_status(run_id, "running")
            while True:
                outcome = drive(run_id, design, compiled, run_input, step_mode, cancel)
                redirect = self.redirect_or_finish(run_id, cancel, outcome)
                if redirect is None:
                    break
                self.redirects.apply_or_refuse(run_id, compiled, *redirect)
                run_input, step_mode = None, False
        except LeaseLost:
            pass  # another process has the run now (logged by Leases.lose)
        except Exception as exc:  # a run ends in words, never in a traceback
            status, reason = "failed", describe_error(exc, self.service.settings)
            if isinstance(exc, (WorkerDied, RunFailed)):
                status = "interrupted" if isinstance(exc, WorkerDied) else "failed"
                reason = str(exc)
            if database_lost(exc):
                log.warning("Run %s cut off: its database went away (%r).", run_id, exc)
                status, reason = (
                    "interrupted",
                    database_lost_reason(database_url(self.service.settings)),
                )
            elif disk_full(exc):
                log.warning("Run %s cut off: the disk holding the store is full (%r).", run_id, exc)
                status, reason = "interrupted", run_cut_off_reason(self.service.store.location)
            self.writes.end_or_keep(run_id, status, reason)
        finally:
            lost = self.service.leases.is_lost(run_id)
            self.service.leases.let_go(run_id)
            with self.service.table.lock:
                self.service.table.fresh.pop(run_id, None)  # driven elsewhere, or never
                self.service.table.ended.discard(run_id)
                entry = self.service.table.live.get(run_id)
                if entry is not None and entry[1] is cancel:  # not a newer worker's entry
                    self.service.table.live.pop(run_id)
                    if run_id not in self.service.table.unwritten:  # held until its end is written
                        self.service.release(run_id)
                leftover = self.service.table.redirects.pop(run_id, [])
            if lost:  # recorded ones are in the store, for the process that has the run
                leftover = []
            else:
                self.service.trace_out(run_id)
            for plan, note, redirect_id in leftover:  # left by a worker that failed: apply now
                try:
                    self.redirects.redirect(run_id, plan=plan, note=note)
                    if redirect_id is not None:
                        self.service.store.decisions.forget_redirect(redirect_id)
                except Exception as exc:  # kept in the store: a resume applies it
                    log.warning("run %s: a queued change could not be applied: %r", run_id, exc)
                    self.service.store.set_run_status(
                        run_id, "failed", describe_error(exc, self.service.settings)
                    )

    def redirect_or_finish(
        self, run_id: str, cancel: StopSignal, outcome: LegEnd
    ) -> QueuedRedirect | None:
        """The next redirect asked of this run; or, with none pending, its final status
        written and the run no longer live, both under the lock ``redirect`` queues with:
        a caller never finds a run that looks ended yet still takes its redirect later."""
        with self.service.table.lock:
            # Its end event, stored here by this leg, set its status: not read back.
            ended = run_id in self.service.table.ended
            self.service.table.ended.discard(run_id)
            pending = self.service.table.redirects.get(run_id) or []
            if pending:
                cancel.clear()
                cancel.redirecting = False
                return pending.pop(0)
            record = None if ended else self.service.store.run(run_id)
            if record is not None and record.status not in (*TERMINAL_STATUSES, *SETTLED_STATUSES):
                self.writes.write_despite_full(
                    lambda: self.writes.set_status(run_id, outcome.status, outcome.reason)
                )
            if outcome.status == "waiting":  # its end event made it so: a human is asked
                self.service.tell_approval("waiting", run_id)
            self.service.table.live.pop(run_id, None)
            self.service.release(run_id)
            return None
