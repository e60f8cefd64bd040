"""Answers and resumes: the questions a run waits on, answered by a person or a timeout,
and a stopped run going on from its last checkpoint. A part of the run service; what
differs where the run's checkpoints are (here, on a server) is its executor's.
"""

from __future__ import annotations

import logging

from langgraph.types import Command

from graph.kernel.design import Design
from graph.service.disk_space import DiskFull
from graph.service.run_executors import NothingLeftToRun
from graph.service.run_holds import RunHolds
from graph.service.run_host import RunHost
from graph.service.run_writes import RunWrites
from graph.service.store import LIVE_STATUSES, RunRecord

log = logging.getLogger(__name__)


class Decisions:
    """A run service's answers to waiting runs, and its resumes of stopped ones."""

    def __init__(self, service: RunHost, writes: RunWrites, holds: RunHolds) -> None:
        self.service = service
        self.writes = writes
        self.holds = holds

    def pending_approvals(self) -> list[dict]:
        """Every decision waiting for a human, across runs, oldest first; each with its
        run's question, system, design timeout (``timeout_s``, ``timeout_action``) and
        place in an experiment (``experiment``: None when the run is in none) and, when
        its timeout is due but the store could not take it yet, why (``timeout_held``)."""
        self.service.executor.notice_answers()
        pending = []
        for record in self.service.store.runs(status="waiting", limit=1000):
            for item in self.service.store.pending_interrupts(record.id):
                held = self.service.timeouts.held(record.id, item["id"])
                pending.append({**item, **self.run_facts(record), "timeout_held": held})
        places = self.service.store.evals.experiment_places(p["run_id"] for p in pending)
        for item in pending:
            item["experiment"] = places.get(item["run_id"])
        return sorted(pending, key=lambda p: p.get("asked_at") or 0)

    @staticmethod
    def run_facts(record: RunRecord) -> dict:
        return {
            "run_id": record.id,
            "question": record.question,
            "system": record.system,
            "timeout_s": float(
                record.design.get(
                    "approval_timeout_s", Design.model_fields["approval_timeout_s"].default
                )
                or 0
            ),
            "timeout_action": record.design.get("timeout_action") or "reject",
        }

    def recent_decisions(self, since: float) -> list[dict]:
        """The questions answered since ``since`` (by a person or a timeout), shaped like
        ``pending_approvals`` items plus ``decided`` ({decision, by, reason, at})."""
        decided = self.service.store.decisions_since(since)
        places = self.service.store.evals.experiment_places(d["run_id"] for d in decided)
        found = []
        for item in decided:
            record = self.service.store.run(item["run_id"])
            if record is None:
                continue  # deleted from History since
            found.append({**item, **self.run_facts(record), "experiment": places.get(record.id)})
        return found

    def decide(
        self,
        run_id: str,
        interrupt_id: str,
        decision: str,
        query: str = "",
        reason: str = "",
        by: str = "human",
    ) -> None:
        """Answer one pending question of a waiting run; the run goes on in a worker."""
        with self.service.table.decide_lock:
            record, design = self.service.stored(run_id)
            executor = self.service.executor
            compiled = executor.graph_for(design)
            if record.status != "waiting" or interrupt_id not in executor.questions(
                run_id, design, compiled
            ):
                raise ValueError("This approval is no longer pending (already answered?).")
            with self.holds.holding(run_id):  # two processes never both answer it
                self.service.store.set_run_status(run_id, "queued", f"Decision: {decision}")
                asked = [
                    i
                    for i in self.service.store.pending_interrupts(run_id)
                    if i["id"] == interrupt_id
                ]
                item = asked[0] if asked else {"id": interrupt_id}
                if decision == "edit":  # what was done, for the card left in its place
                    item = {**item, "edited_query": query}
                try:
                    self.service.store.decisions.record(run_id, item, decision, by, reason)
                except DiskFull:  # not recorded: the run waits for it as before
                    try:
                        self.writes.write_despite_full(
                            lambda: self.service.store.set_run_status(
                                run_id, record.status, record.reason
                            )
                        )
                    except Exception:  # left queued and let go: marked interrupted later
                        log.exception(
                            "Run %s: its decision could not be recorded, nor its status put "
                            "back to %s",
                            run_id,
                            record.status,
                        )
                    raise
                resume = {
                    interrupt_id: {
                        "decision": decision,
                        "query": query,
                        "reason": reason,
                        "by": by,
                    }
                }
                self.service.submit(run_id, design, compiled, Command(resume=resume), False)

    def resume(self, run_id: str, step_mode: bool = False) -> None:
        """Go on from the last checkpoint: a run interrupted by a crash, or a paused one
        (``step_mode``: one node, then pause again)."""
        # A run the database cut off: its end first, then resume; one whose end is still not
        # recorded is not "in progress" but ended, not recorded.
        self.writes.write_unwritten()
        if unwritten := self.writes.unwritten_end(run_id):
            raise ValueError(
                "The store cannot record how this run ended yet, so it cannot be resumed "
                f"now. {unwritten[1]}"
            )
        record, design = self.service.stored(run_id)
        if self.service.is_live(run_id) or (
            record.status in LIVE_STATUSES
            and self.service.store.run_lease(run_id)[0] == self.service.owner
        ):
            raise ValueError("The run is already in progress.")
        # queued/running here: left by a process that stopped renewing its lease (taken
        # over below) or held by a live one (refused below).
        if record.status not in ("interrupted", "paused", "failed", "cancelled", *LIVE_STATUSES):
            raise ValueError(f"A {record.status} run cannot be resumed.")
        with self.holds.holding(run_id):
            compiled = self.service.executor.graph_for(design)
            try:
                self.service.executor.ready_to_resume(run_id, design, compiled)
            except NothingLeftToRun:
                # Killed after its last checkpoint, before its end was logged: its worker
                # runs nothing and writes the end its last state says.
                if record.status != "interrupted":
                    raise
            self.service.store.set_run_status(run_id, "queued", "Resumed from its last checkpoint.")
            self.service.submit(run_id, design, compiled, None, step_mode)
