"""Redirects: a run sent on from where it stops, to another node with its state changed
(a follow-up message, an edited request). A part of the run service.

A live run's redirect is recorded in the store and queued; its worker applies it when the
run's stream stops (``run_workers.py``), so a crash in between does not lose it: a resume
applies what is still queued, once (the checkpoint it wrote is marked with its id). A
settled run is sent on by its executor (``send_on``: written into its checkpoints here;
a ``Command`` for a server run, which takes no redirect while in progress) and handed to
a new worker.
"""

from __future__ import annotations

import json
import logging
from typing import Callable

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from graph.kernel.checkpoints import pending_nodes, redirect_state
from graph.kernel.conversation import follow_up_plan
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.chat import describe_error
from graph.service.leases import LeaseLost
from graph.service.questions import checked_question
from graph.service.run_holds import RunHolds
from graph.service.run_host import RunHost
from graph.service.run_models import RunModels
from graph.service.run_writes import RunWrites
from graph.service.store import LIVE_STATUSES
from graph.stopping import Stopped

log = logging.getLogger(__name__)

# Checkpoint metadata key naming the recorded redirect a checkpoint applied.
REDIRECT_MARK = "stepwise_redirect"


class Redirects:
    """A run service's redirects, queued for live runs and applied to stopped ones."""

    def __init__(
        self, service: RunHost, models: RunModels, writes: RunWrites, holds: RunHolds
    ) -> None:
        self.service = service
        self.models = models
        self.writes = writes
        self.holds = holds

    def apply_redirect(
        self,
        run_id: str,
        compiled: CompiledStateGraph,
        plan: Callable,
        note: str,
        redirect_id: int | None = None,
    ) -> None:
        """Work out the redirect from the run's state now (its next node is only known
        once its stream has stopped), apply it and log it as an event of the run. A
        recorded redirect marks the checkpoint it writes with its id (``was_applied``)."""
        snapshot = compiled.get_state({"configurable": {"thread_id": run_id}})
        update, goto = plan(snapshot)
        mark = {REDIRECT_MARK: redirect_id} if redirect_id is not None else None
        redirect_state(compiled, run_id, update, goto, metadata=mark)
        self.writes.log(
            run_id,
            {
                "kind": "redirect",
                "goto": goto,
                "note": note,
                "was_next": list(pending_nodes(snapshot)),
            },
            step=(snapshot.values or {}).get("current_step"),
        )

    def apply_or_refuse(
        self,
        run_id: str,
        compiled: CompiledStateGraph,
        plan: Callable,
        note: str,
        redirect_id: int | None,
    ) -> None:
        """Apply a queued redirect in the worker; one the run's state refuses (e.g. a bad
        hook target) is logged and the run goes on as it was. Either way it is done."""
        try:
            self.apply_redirect(run_id, compiled, plan, note, redirect_id)
        except (Stopped, LeaseLost):
            raise
        except Exception as exc:
            log.warning("Run %s: a change asked of it was refused: %r", run_id, exc)
            self.writes.log(
                run_id,
                {
                    "kind": "redirect_refused",
                    "note": note,
                    "reason": describe_error(exc, self.service.settings),
                },
            )
        if redirect_id is not None:
            self.service.store.decisions.forget_redirect(redirect_id)

    def was_applied(self, run_id: str, redirect_id: int) -> bool:
        """Whether a recorded redirect already wrote its checkpoint (a crash came after
        that and before the record was forgotten): applying it again would repeat it."""
        config: RunnableConfig = {"configurable": {"thread_id": run_id}}
        found = self.service.checkpointer.list(config, filter={REDIRECT_MARK: redirect_id}, limit=1)
        return next(iter(found), None) is not None

    def plan_of(self, spec: dict, design: Design, compiled: CompiledStateGraph | None) -> Callable:
        """Rebuild a redirect's ``plan`` from its recorded ``spec`` (see ``redirect``)."""
        system = get_system(design.system)
        kind, text = spec.get("kind"), spec.get("text") or ""
        if kind == "message":
            assert compiled is not None  # a message's plan reads the graph's nodes
            return follow_up_plan(compiled, design, text, system)  # ValueError: empty
        if kind == "edit":
            return lambda snapshot: (
                system.forks.edit_request(dict(snapshot.values or {}), text),
                system.forks.edit_goto,
            )
        if kind == "goto":
            return lambda _snapshot: (spec.get("update") or {}, spec["goto"])
        raise ValueError(f"This run has a queued change of an unknown kind ({kind!r}).")

    def take_queued_redirects(
        self, run_id: str, design: Design, compiled: CompiledStateGraph
    ) -> None:
        """Redirects recorded for a run whose process stopped before applying them (a
        follow-up message sent just before a crash): the first is applied now, to the
        state the run stopped at, the others wait for the run's next stop as they would
        have; one already applied is only forgotten."""
        queued = self.service.store.queued_redirects(run_id)
        while queued and self.was_applied(run_id, queued[0]["id"]):
            self.service.store.decisions.forget_redirect(queued.pop(0)["id"])
        if not queued:
            return
        first, rest = queued[0], queued[1:]
        try:
            plan = self.plan_of(first["spec"], design, compiled)
        except ValueError as exc:
            self.writes.log(
                run_id, {"kind": "redirect_refused", "note": first["note"], "reason": str(exc)}
            )
            self.service.store.decisions.forget_redirect(first["id"])
        else:
            self.apply_or_refuse(run_id, compiled, plan, first["note"], first["id"])
        with self.service.table.lock:
            self.service.table.redirects[run_id] = [
                (self.plan_of(r["spec"], design, compiled), r["note"], r["id"]) for r in rest
            ]

    def send_message(self, run_id: str, text: str) -> None:
        """A follow-up message in the run's conversation (any system, at any time): the
        ``before_run`` hook (the guardrail, when on) takes it first; a main agent mid-work
        keeps its plan and takes the message when it finishes."""
        _, design = self.service.stored(run_id)
        compiled, _, _ = self.models.graph(design)
        if text.strip():
            checked_question(text, self.service.settings, "message")
        spec = {"kind": "message", "text": text}
        plan = self.plan_of(spec, design, compiled)  # ValueError: empty
        self.redirect(
            run_id,
            plan=plan,
            note=f"Follow-up message: {text.strip()[:120]}",
            compiled=compiled,
            spec=spec,
        )

    def redirect(
        self,
        run_id: str,
        update: dict | None = None,
        goto: str | None = None,
        note: str = "",
        plan: Callable | None = None,
        compiled: CompiledStateGraph | None = None,
        spec: dict | None = None,
    ) -> None:
        """Send a run on to ``goto`` with ``update`` applied to its state, replacing what
        was next: an edited request, a follow-up message. ``plan(snapshot) -> (update,
        goto)`` instead decides from the state at the moment the run stops. A live run
        stops after the event in progress and goes on in its worker; a settled run
        (done, failed, waiting, paused, interrupted...) goes on in a new worker, on
        ``compiled`` if the caller has already built the design's graph.

        For a live run the redirect is recorded in the store first (``spec``: JSON data
        ``plan_of`` rebuilds the plan from; derived from ``update``/``goto``), so a crash
        before the run stops does not lose it: ``resume`` applies it."""
        if plan is None:
            if goto is None:
                raise ValueError("redirect needs a node to go to, or a plan.")
            plan = lambda _snapshot: (update or {}, goto)  # noqa: E731
            spec = {"kind": "goto", "update": update or {}, "goto": goto}
        with self.service.table.decide_lock:
            with self.service.table.lock:
                entry = self.service.table.live.get(run_id)
                if entry is not None:
                    self.service.executor.refuse_redirect_while_live()
                    redirect_id = self.record_redirect(run_id, spec, note)
                    self.service.table.redirects.setdefault(run_id, []).append(
                        (plan, note, redirect_id)
                    )
                    entry[1].redirecting = True
                    entry[1].set()
                    return
            record, design = self.service.stored(run_id)
            if (
                record.status in LIVE_STATUSES
                and self.service.store.run_lease(run_id)[0] == self.service.owner
            ):
                raise ValueError("The run is starting; try again in a moment.")
            with self.holds.holding(run_id):  # refused while another live process runs it
                if compiled is None:
                    compiled, _, _ = self.models.graph(design)
                run_input = self.service.executor.send_on(run_id, design, compiled, plan, note)
                self.service.store.set_run_status(run_id, "queued", note or "Sent on.")
                self.service.submit(run_id, design, compiled, run_input, False)

    def edit_request(self, run_id: str, text: str) -> None:
        """The human edited the run's request, while it runs or after (a system that
        ``Forks.edit_goto``): it goes on from the state the run stops at, at the system's
        ``edit_goto`` (hierarchical_teams: the lead replans, keeping finished subtasks)."""
        _, design = self.service.stored(run_id)
        system = get_system(design.system)
        if system.forks.edit_goto is None:
            raise ValueError(f"A {design.system} run has no request to edit.")
        # Refuse an empty or unchanged text here, not later in the run's worker.
        if text.strip():
            checked_question(text, self.service.settings, "request")
        system.forks.edit_request(
            {"request": (self.service.store.snapshot(run_id) or {}).get("request")}, text
        )
        spec = {"kind": "edit", "text": text}
        self.redirect(
            run_id,
            plan=self.plan_of(spec, design, None),
            note=f"Request edited: {text.strip()[:120]}",
            spec=spec,
        )

    def record_redirect(self, run_id: str, spec: dict | None, note: str) -> int | None:
        """Record a live run's redirect in the store; None when it has no JSON form (a
        caller's own ``plan``, an update holding objects): it then lives in memory only."""
        if spec is None:
            return None
        try:
            json.dumps(spec)
        except (TypeError, ValueError):
            return None
        return self.service.store.queue_redirect(run_id, spec, note)
