"""The run service's public members that its parts do, each forwarded to one part.

``RunService`` (``run_service.py``) orchestrates: its table of live runs, starting and
handing runs to workers, cancelling, waiting, shutting down. What its parts do on its
behalf (``run_host.py`` lists them) stays callable on the service itself through this
base class, so the pages, the command line, the tests and the benchmarks see one object.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph

from graph.kernel.design import Design
from graph.prompts import PromptSet
from graph.service.run_controls import StopSignal
from graph.service.run_decisions import Decisions
from graph.service.run_executors import Drive
from graph.service.run_forks import Forks
from graph.service.run_holds import RunHolds
from graph.service.run_models import RunModels
from graph.service.run_notices import ApprovalHook, RunNotices
from graph.service.run_records import StateHistory
from graph.service.run_redirects import Redirects
from graph.service.run_workers import Workers
from graph.service.run_writes import RunWrites
from graph.settings import Settings


class RunParts:
    """The run service's parts, and its members that forward to them (made by
    ``RunService.__init__``)."""

    models: RunModels
    writes: RunWrites
    holds: RunHolds
    redirects: Redirects
    decisions: Decisions
    forks: Forks
    workers: Workers
    notices: RunNotices

    def run_settings(self, design: Design | None = None) -> Settings:
        """The settings a run of ``design`` uses (``RunModels.run_settings``)."""
        return self.models.run_settings(design)

    def model_settings(self) -> Settings:
        """The settings of the active model profile (``RunModels.model_settings``)."""
        return self.models.model_settings()

    def with_active_model(self, design: Design) -> Design:
        """``design`` on the active profile (``RunModels.with_active_model``)."""
        return self.models.with_active_model(design)

    def computes_without_pause(self, design: Design) -> bool:
        """Whether a run of ``design`` never waits (``RunModels.computes_without_pause``)."""
        return self.models.computes_without_pause(design)

    def run_metadata(
        self, run_id: str, design: Design, versions: dict[str, int] | None = None
    ) -> dict[str, Any]:
        """What a run's config tells LangChain's tracers (``RunModels.run_metadata``)."""
        return self.models.run_metadata(run_id, design, versions)

    def model(
        self, role: Literal["planner", "worker"], design: Design | None = None
    ) -> BaseChatModel:
        """The model a run of ``design`` gets for ``role`` (``RunModels.model``)."""
        return self.models.model(role, design)

    def compiled_of(self, design: Design) -> CompiledStateGraph:
        """The design's compiled graph on this process's checkpointer."""
        return self.models.graph(design)[0]

    def prepare(self, design: Design) -> tuple[CompiledStateGraph, BaseChatModel, BaseChatModel]:
        """Validate a design and build its graph once, for many runs of it (a compiled
        graph serves concurrent runs, each on its own thread id): an experiment's variant
        would otherwise compile the same graph for every run."""
        PromptSet(design.prompts)
        return self.models.graph(design)

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
        """A local executor's worker (``Workers.work_here``)."""
        self.workers.work_here(run_id, design, compiled, run_input, step_mode, cancel, drive)

    def unwritten_end(self, run_id: str) -> tuple[str, str] | None:
        """How a run of this process ended when the store could not record it yet
        (``RunWrites.unwritten_end``)."""
        return self.writes.unwritten_end(run_id)

    def reconcile_events(self, run_id: str, design: Design, compiled: StateHistory) -> None:
        """Log the node updates a crash kept out of the event log
        (``RunWrites.reconcile_events``)."""
        self.writes.reconcile_events(run_id, design, compiled)

    def note(self, run_id: str, data: dict, step: int | None = None) -> None:
        """A note of the service's own in the run's event log (``RunWrites.log``)."""
        self.writes.log(run_id, data, step)

    def apply_redirect(
        self, run_id: str, compiled: CompiledStateGraph, plan: Callable, note: str
    ) -> None:
        """A stopped local run's redirect written into its checkpoints and logged
        (``Redirects.apply_redirect``; a local executor's ``send_on``)."""
        self.redirects.apply_redirect(run_id, compiled, plan, note)

    def take_queued_redirects(
        self, run_id: str, design: Design, compiled: CompiledStateGraph
    ) -> None:
        """Redirects recorded for a run whose process stopped before applying them
        (``Redirects.take_queued_redirects``; a local executor's ``ready_to_resume``)."""
        self.redirects.take_queued_redirects(run_id, design, compiled)

    def send_message(self, run_id: str, text: str) -> None:
        """A follow-up message in the run's conversation (``Redirects.send_message``)."""
        self.redirects.send_message(run_id, text)

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
        """Send a run on to ``goto`` with ``update``, or where ``plan`` says once it stops
        (``Redirects.redirect``)."""
        self.redirects.redirect(run_id, update, goto, note, plan, compiled, spec)

    def edit_request(self, run_id: str, text: str) -> None:
        """The human edited the run's request (``Redirects.edit_request``)."""
        self.redirects.edit_request(run_id, text)

    def release(self, run_id: str) -> None:
        """Let go of a run this process no longer runs (``RunHolds.release``)."""
        self.holds.release(run_id)

    def pending_approvals(self) -> list[dict]:
        """Every decision waiting for a human, across runs, oldest first
        (``Decisions.pending_approvals``)."""
        return self.decisions.pending_approvals()

    def recent_decisions(self, since: float) -> list[dict]:
        """The questions answered since ``since`` (``Decisions.recent_decisions``)."""
        return self.decisions.recent_decisions(since)

    def decide(
        self,
        run_id: str,
        interrupt_id: str,
        decision: str,
        query: str = "",
        reason: str = "",
        by: str = "human",
    ) -> None:
        """Answer one pending question of a waiting run (``Decisions.decide``)."""
        self.decisions.decide(run_id, interrupt_id, decision, query, reason, by)

    def resume(self, run_id: str, step_mode: bool = False) -> None:
        """Go on from the last checkpoint (``Decisions.resume``)."""
        self.decisions.resume(run_id, step_mode)

    def fork(
        self,
        run_id: str,
        checkpoint_id: str,
        changes: dict | None = None,
        step_mode: bool = False,
        pace_s: float | None = None,
    ) -> str:
        """A new run going on from a checkpoint of ``run_id`` (``Forks.fork``)."""
        return self.forks.fork(run_id, checkpoint_id, changes, step_mode, pace_s)

    def fork_with_prompt(
        self,
        run_id: str,
        checkpoint_id: str,
        prompt_name: str,
        text: str | None = None,
        version_id: int | None = None,
        label: str = "",
        step_mode: bool = False,
    ) -> str:
        """A new run going on from a checkpoint of ``run_id`` with another text for one
        of its prompts (``Forks.fork_with_prompt``)."""
        return self.forks.fork_with_prompt(
            run_id, checkpoint_id, prompt_name, text, version_id, label, step_mode
        )

    def replay(self, run_id: str, pace_s: float | None = None, step_mode: bool = False) -> str:
        """A new run answering every model call from ``run_id``'s recording
        (``Forks.replay``)."""
        return self.forks.replay(run_id, pace_s, step_mode)

    def on_approval(self, callback: ApprovalHook) -> None:
        """Have ``callback(kind, run_id, item)`` told when a run starts waiting for a human
        or a timeout answered a question (``RunNotices.on_approval``)."""
        self.notices.on_approval(callback)

    def tell_approval(self, kind: str, run_id: str, item: dict | None = None) -> None:
        """Tell the ``on_approval`` callbacks (``RunNotices.tell_approval``)."""
        self.notices.tell_approval(kind, run_id, item)

    def trace_out(self, run_id: str) -> None:
        """An ended run's trace to the OTLP backend (``RunNotices.trace_out``)."""
        self.notices.trace_out(run_id)
