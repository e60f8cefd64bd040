"""Runs outside the Streamlit script run: a process-wide pool of worker threads.

A click reruns the page script, which would kill a run living inside it; so runs live
here, in background threads that write every event to the store and never touch
Streamlit. Pages only start, cancel and read. All runs share one LangGraph
checkpointer (the state, for resume, replay and forks); the store holds what happened.
Who drives a run's stream is the service's ``RunExecutor`` (``run_executors.py``: this
process's threads, worker processes, or a LangGraph Server's ``server_executor.py``).

Over 400 lines: start, resume, redirect, cancel, crash recovery and run leases share
one lock and one table of live runs; split, that discipline would be spread over several
files.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Durability

from graph.agents.user_agent_tools import use_mcp_servers
from graph.kernel.checkpoints import (
    fork_point,
    fork_state,
    history,
    pending_nodes,
    redirect_state,
)
from graph.kernel.conversation import follow_up_plan
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.chat import describe_error, make_chat_model, model_label
from graph.models.modes import ModeBook
from graph.models.recorded import live_model
from graph.prompts import PromptSet
from graph.service import otel_export, prompt_forks
from graph.service.approval_timeouts import ApprovalTimeouts
from graph.service.database import database_lost, database_lost_reason
from graph.service.disk_space import (
    DiskFull,
    DiskReserve,
    disk_full,
    no_room_message,
    run_cut_off_reason,
    said_when_full,
)
from graph.service.leases import LeaseGuardedSaver, LeaseLost, Leases
from graph.service.model_profiles import ModelProfiles
from graph.service.questions import checked_question
from graph.service.replays import recorded_model, replay_design
from graph.service.run_executors import (
    Drive,
    LegEnd,
    ProcessExecutor,
    RunExecutor,
    ThreadExecutor,
)
from graph.service.run_processes import RunFailed, RunProcesses, WorkerDied
from graph.service.runs import (
    RunOutcome,
    StateHistory,
    StopSignal,
    checkpointer_for,
    continue_run,
    database_url,
    event_record,
    missed_updates,
    run_metadata,
    store_location,
)
from graph.service.store import (
    LIVE_STATUSES,
    SETTLED_STATUSES,
    TERMINAL_STATUSES,
    RunRecord,
    Store,
)
from graph.settings import Settings, get_settings
from graph.stopping import Stopped

ModelFactory = Callable[[str], BaseChatModel]
# Makes the executor a service runs its runs with (``graph/service/run_executors.py``).
ExecutorFactory = Callable[["RunService"], RunExecutor]
log = logging.getLogger(__name__)


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


# Checkpoint metadata key naming the recorded redirect a checkpoint applied.
REDIRECT_MARK = "stepwise_redirect"


class RunService:
    """Starts runs in worker threads and tracks which are live in this process."""

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        max_workers: int = 4,
        model_factory: ModelFactory | None = None,
        timeout_tick_s: float = 1.0,
        claim_orphans: bool = True,
        processes: int | None = None,
        durability: Durability = "async",
        executor: ExecutorFactory | None = None,
    ):
        self.store = store
        # When LangGraph saves a run's checkpoints: "async" (its default) on a thread of its
        # own while the next step runs; "sync" before it (``worker_service``).
        self.durability = durability
        self.settings = settings or get_settings()
        self.model_factory = model_factory
        processes = self.settings.run_processes if processes is None else processes
        if processes and model_factory is not None:
            raise ValueError(
                "Runs on worker processes make their models from the settings; a "
                "model_factory lives in this process only (use processes=0)."
            )
        # Who holds this service's runs in the store: another app process on the same home
        # leaves a run alone while its owner renews the lease (``_keep_leases``).
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_s = self.settings.run_lease_s
        # A live run nobody renews cannot be live: its process is gone. (The command line
        # does not claim them: an app may be running them on the same home.)
        self.claim_orphans = claim_orphans
        self.interrupted_at_start = self._mark_orphans() if claim_orphans else 0
        # Whether this process still holds the runs its workers run, asked before each of
        # their writes: a process frozen past its lease must not run a run twice.
        self.leases = Leases(store, self.owner, self.lease_s, on_lost=self._stop_lost)
        self.checkpointer = LeaseGuardedSaver(checkpointer_for(self.settings), self.leases)
        # What the model server accepts, learnt once and kept in the store across restarts.
        self.modes = ModeBook(store)
        # The Model page's profiles: the active one is the model of the runs started here.
        self.profiles = ModelProfiles(store, self.settings)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="stepwise-run")
        # With processes, a worker thread here waits while a worker process drives the
        # stream (CPU-bound runs in parallel); everything else stays in this process.
        self.processes = RunProcesses(self.settings, processes) if processes else None
        # Who runs the runs: ``executor(self)`` when given (a LangGraph Server's), else
        # worker processes or this process's threads.
        self.executor: RunExecutor
        if executor is not None:
            self.executor = executor(self)
        elif self.processes is not None:
            self.executor = ProcessExecutor(self, self.processes)
        else:
            self.executor = ThreadExecutor(self)
        self._lock = threading.Lock()
        self._decide_lock = threading.Lock()  # a human and the timeout never both answer
        self._live: dict[str, tuple[Future, StopSignal]] = {}
        # Redirects asked of a live run, taken by its worker when its stream stops:
        # (plan, note, id in the store's queued redirects or None when not recorded).
        self._redirects: dict[str, list[tuple[Callable, str, int | None]]] = {}
        # How runs ended that the store could not record then (its database away):
        # written, and the runs let go of, once it answers (``_end_or_keep``).
        self._unwritten: dict[str, tuple[str, str]] = {}
        # Room kept beside the store, given back to write how runs ended on a full disk.
        self.reserve = DiskReserve(store.path)
        self.reserve.keep()
        self._closed = False
        self._stop = threading.Event()
        self.timeout_tick_s = timeout_tick_s
        self._shutdown_hooks: list[Callable[..., None]] = []
        self._approval_hooks: list[Callable[[str, str, dict | None], None]] = []
        # Each ended run's spans to an OTLP backend, when one is configured (None: off).
        self.otel = otel_export.for_settings(self.settings)
        # User agents' MCP tools come from this store's Tools page servers.
        use_mcp_servers(store.mcp_servers)
        # When nobody decides in time: the design's default, applied by a thread of its own.
        self.timeouts = ApprovalTimeouts(self)
        if timeout_tick_s:
            threading.Thread(
                target=self.timeouts.watch, name="stepwise-approval-timeouts", daemon=True
            ).start()
        threading.Thread(target=self._keep_leases, name="stepwise-run-leases", daemon=True).start()

    def run_settings(self, design: Design | None = None) -> Settings:
        """The settings a run of ``design`` uses: the service's, with the design's own model
        (an experiment's model variant) in place of the configured one."""
        if design is None or design.model is None:
            return self.settings
        return design.model.settings(self.settings)

    def model_settings(self) -> Settings:
        """The settings of the active model profile: what a new run, an experiment's
        "model in use" variant and the judge are made with."""
        return self.profiles.settings_of()

    def with_active_model(self, design: Design) -> Design:
        """``design`` on the active profile, recorded in it (so its resume, approvals and
        forks stay on that model), unless it names a model of its own already."""
        if design.model is not None:
            return design
        choice = self.profiles.choice()
        return design if choice is None else design.model_copy(update={"model": choice})

    def computes_without_pause(self, design: Design) -> bool:
        """Whether a run of ``design`` never waits: the offline scripted model answering at
        once, unpaced. Such runs are CPU-bound: on worker processes, one per worker."""
        settings = self.run_settings(design)
        return (
            settings.resolved_provider == "scripted"
            and not settings.scripted_delay_s
            and not settings.scripted_jitter_s
            and not design.pace_s
        )

    def _label(self, planner: BaseChatModel, worker: BaseChatModel, design: Design) -> str:
        if design.model is not None and design.model.replay_of:
            return design.model.label
        if self.model_factory is None and design.model is not None and design.model.fork_of:
            return design.model.label
        if self.model_factory is None:
            return self.run_settings(design).model_label
        names = {model_label(planner), model_label(worker)}
        return (
            names.pop()
            if len(names) == 1
            else (f"planner/executor {model_label(planner)}, workers {model_label(worker)}")
        )

    def _recorded_versions(self, design: Design) -> dict[str, int]:
        """Which stored prompt versions this design's texts are (for comparing runs)."""
        return {
            name: version.id
            for name, version in self.store.active_prompts().items()
            if design.prompts.get(name) == version.text
        }

    def model(
        self, role: Literal["planner", "worker"], design: Design | None = None
    ) -> BaseChatModel:
        """The model a run of ``design`` gets for ``role``, learning into this service's modes."""
        choice = design.model if design is not None else None
        if choice is not None and choice.replay_of:
            return recorded_model(self.store, choice.replay_of)
        if self.model_factory is not None:
            model = self.model_factory(role)
        else:
            prompts = PromptSet(design.prompts) if design is not None else None
            model = make_chat_model(
                role, self.run_settings(design), modes=self.modes, prompts=prompts
            )
        return live_model(model) if choice is not None and choice.fork_of else model

    def _graph(self, design: Design) -> tuple[CompiledStateGraph, BaseChatModel, BaseChatModel]:
        """The design's compiled graph and models. Building it may write files of its
        own under the home (the tools' stock database on first use): a full disk there
        is said as the store's is."""
        planner, worker = self.model("planner", design), self.model("worker", design)
        system = get_system(design.system)
        with said_when_full(store_location(self.settings)):
            compiled = system.build_graph(
                design,
                settings=self.run_settings(design),
                checkpointer=self.checkpointer,
                planner_model=planner,
                worker_model=worker,
            )
        return compiled, planner, worker

    def start(
        self,
        question: str,
        design: Design,
        prompt_versions: dict[str, int] | None = None,
        step_mode: bool = False,
        parent_run: str | None = None,
        parent_checkpoint: str | None = None,
        pool: ThreadPoolExecutor | None = None,
        prepared: tuple | None = None,
    ) -> str:
        """Validate, build the graph here (a bad design fails in the caller, not in a
        worker), record the run as queued and hand it to a worker; returns the run id.
        ``pool``: other workers than the service's own (an experiment's bounded pool);
        ``prepared``: ``prepare(design)`` of this same design, built once for many runs."""
        self.executor.refuse_start(design)
        if self._closed:
            raise RuntimeError("The run service has been shut down.")
        self._check_room()
        question = checked_question(question, self.settings)
        design = self.with_active_model(design)
        if design.model is not None and (problem := design.model.key_problem()):
            raise ValueError(problem)
        PromptSet(design.prompts)  # PromptError naming the prompt and the problem
        compiled, planner, worker = prepared or self._graph(design)
        run_id = uuid.uuid4().hex
        versions = (
            prompt_versions if prompt_versions is not None else self._recorded_versions(design)
        )
        self._record_run(
            run_id, question, design, planner, worker, versions, parent_run, parent_checkpoint
        )
        initial = get_system(design.system).initial_state(question, design)
        self._submit(run_id, design, compiled, initial, step_mode, pool=pool)
        return run_id

    def _record_run(
        self,
        run_id: str,
        question: str,
        design: Design,
        planner: BaseChatModel,
        worker: BaseChatModel,
        prompt_versions: dict,
        parent_run: str | None = None,
        parent_checkpoint: str | None = None,
    ) -> None:
        """The store's record of a new run (a fork names its parent), owned and leased by
        this process: one place for the local and the server runtime."""
        self.store.create_run(
            run_id,
            question,
            design,
            self._label(planner, worker, design),
            prompt_versions=prompt_versions,
            settings=self.run_settings(design),
            parent_run=parent_run,
            parent_checkpoint=parent_checkpoint,
            owner=self.owner,
            lease_s=self.lease_s,
        )

    def compiled_of(self, design: Design) -> CompiledStateGraph:
        """The design's compiled graph on this process's checkpointer."""
        return self._graph(design)[0]

    def prepare(self, design: Design) -> tuple[CompiledStateGraph, BaseChatModel, BaseChatModel]:
        """Validate a design and build its graph once, for many runs of it (a compiled
        graph serves concurrent runs, each on its own thread id): an experiment's variant
        would otherwise compile the same graph for every run."""
        PromptSet(design.prompts)
        return self._graph(design)

    def _submit(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        pool: ThreadPoolExecutor | None = None,
    ) -> None:
        self.executor.admit(run_id, design, run_input)
        cancel = StopSignal()
        with self._lock:
            if run_id in self._live:
                raise ValueError("The run is already in progress.")
            future = (pool or self._pool).submit(
                self.executor.work, run_id, design, compiled, run_input, step_mode, cancel
            )
            self._live[run_id] = (future, cancel)

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
        leftover: list = []
        self.leases.hold(run_id)
        try:
            # A local run is always submitted with its compiled graph.
            assert compiled is not None
            if cancel.is_set() and not cancel.redirecting:
                self._set_status(run_id, "cancelled", "Cancelled before it started.")
                return
            self._set_status(run_id, "running")
            while True:
                outcome = drive(run_id, design, compiled, run_input, step_mode, cancel)
                redirect = self._redirect_or_finish(run_id, cancel, outcome)
                if redirect is None:
                    break
                self._apply_or_refuse(run_id, compiled, *redirect)
                run_input, step_mode = None, False
        except LeaseLost:
            pass  # another process has the run now (logged by Leases.lose)
        except Exception as exc:  # a run ends in words, never in a traceback
            status, reason = "failed", describe_error(exc, self.settings)
            if isinstance(exc, (WorkerDied, RunFailed)):
                status = "interrupted" if isinstance(exc, WorkerDied) else "failed"
                reason = str(exc)
            if database_lost(exc):
                log.warning("Run %s cut off: its database went away (%r).", run_id, exc)
                status, reason = "interrupted", database_lost_reason(database_url(self.settings))
            elif disk_full(exc):
                log.warning("Run %s cut off: the disk holding the store is full (%r).", run_id, exc)
                status, reason = "interrupted", run_cut_off_reason(self.store.location)
            self._end_or_keep(run_id, status, reason)
        finally:
            lost = self.leases.is_lost(run_id)
            self.leases.let_go(run_id)
            with self._lock:
                entry = self._live.get(run_id)
                if entry is not None and entry[1] is cancel:  # not a newer worker's entry
                    self._live.pop(run_id)
                    if run_id not in self._unwritten:  # held until its end is written
                        self.release(run_id)
                leftover = self._redirects.pop(run_id, [])
            if lost:  # recorded ones are in the store, for the process that has the run
                leftover = []
            else:
                self.trace_out(run_id)
            for plan, note, redirect_id in leftover:  # left by a worker that failed: apply now
                try:
                    self.redirect(run_id, plan=plan, note=note)
                    if redirect_id is not None:
                        self.store.decisions.forget_redirect(redirect_id)
                except Exception as exc:  # kept in the store: a resume applies it
                    log.warning("run %s: a queued change could not be applied: %r", run_id, exc)
                    self.store.set_run_status(run_id, "failed", describe_error(exc, self.settings))

    def continue_here(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
    ) -> RunOutcome:
        """Drive the run's stream in this process, its events into the store (a worker
        thread's part of a run; also what a worker process does with one)."""
        return continue_run(
            compiled,
            run_input,
            run_id,
            design,
            settings=self.run_settings(design),
            on_events=lambda events: self._store_events(run_id, design.system, events),
            before_node=lambda: self.leases.check(run_id),
            cancel=cancel,
            step_mode=step_mode,
            first_seq=self.store.latest_seq(run_id),
            durability=self.durability,
            metadata=self.run_metadata(run_id, design),
        )

    def run_metadata(self, run_id: str, design: Design) -> dict[str, Any]:
        """The run's id, system and prompt versions, for LangChain's tracers (LangSmith)."""
        record = self.store.run(run_id)
        return run_metadata(run_id, design.system, record.prompt_versions if record else {})

    def _redirect_or_finish(
        self, run_id: str, cancel: StopSignal, outcome: LegEnd
    ) -> tuple[Callable, str, int | None] | None:
        """The next redirect asked of this run; or, with none pending, its final status
        written and the run no longer live, both under the lock ``redirect`` queues with:
        a caller never finds a run that looks ended yet still takes its redirect later."""
        with self._lock:
            pending = self._redirects.get(run_id) or []
            if pending:
                cancel.clear()
                cancel.redirecting = False
                return pending.pop(0)
            record = self.store.run(run_id)
            if record is not None and record.status not in (*TERMINAL_STATUSES, *SETTLED_STATUSES):
                self._write_despite_full(
                    lambda: self._set_status(run_id, outcome.status, outcome.reason)
                )
            if outcome.status == "waiting":  # its end event made it so: a human is asked
                self.tell_approval("waiting", run_id)
            self._live.pop(run_id, None)
            self.release(run_id)
            return None

    def thread_of(self, run_id: str) -> str:
        """The LangGraph thread a run's state lives in (its executor's)."""
        return self.executor.thread_of(run_id)

    def done_with(self, run_id: str, cancel: StopSignal | None) -> None:
        """A worker's run is no longer live here: let go of it (only when it is still the
        worker's own entry, ``cancel``; None: whichever entry it has)."""
        with self._lock:
            entry = self._live.get(run_id)
            if cancel is None or (entry is not None and entry[1] is cancel):
                self._live.pop(run_id, None)
                self.release(run_id)

    def forget_checkpoints(self, thread_id: str) -> None:
        """Delete a thread's checkpoints from this process's checkpointer."""
        self.checkpointer.delete_thread(thread_id)

    def trace_out(self, run_id: str) -> None:
        """A run that has ended, sent to the OTLP backend when one is configured (once:
        a run waiting for a person is sent when it ends after the answer)."""
        if self.otel is None:
            return
        try:
            record = self.store.run(run_id)
            if record is not None and record.status in otel_export.ENDED:
                self.otel.export_run(self.store, run_id, self.thread_of(run_id))
        except Exception as exc:  # a trace not sent never fails the run
            log.warning("run %s: its trace could not be exported: %s", run_id, exc)

    # ------------------------------------------------------------- a worker's writes

    def _store_events(self, run_id: str, system: str, events: list) -> None:
        """A worker's events, stored only while this process holds the run."""
        self.leases.check(run_id)
        try:
            self.store.append_events(
                run_id,
                [event_record(event, system) for event in events],
                owner=self.leases.owner_of(run_id),
            )
        except LeaseLost:
            self.leases.lose(run_id)
            raise
        except Exception:
            self.leases.unconfirm(run_id)  # the store is away: the next node asks again
            raise

    def _set_status(self, run_id: str, status: str, reason: str = "") -> None:
        """A worker's change of its run's status, only while this process holds it."""
        self.leases.check(run_id)
        try:
            self.store.set_run_status(run_id, status, reason, owner=self.leases.owner_of(run_id))
        except LeaseLost:
            self.leases.lose(run_id)
            raise

    def _end_or_keep(self, run_id: str, status: str, reason: str) -> None:
        """Write how a worker's run ended; when the store cannot take it now (its
        database is away), keep it and the run's lease, and write it as soon as the
        store answers again (``_write_unwritten``): never left "running" by an outage.
        On a full disk the store's reserve is given back for it first."""
        try:
            self._write_despite_full(lambda: self._set_status(run_id, status, reason))
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
            with self._lock:
                self._unwritten[run_id] = (status, reason)

    def _write_despite_full(self, write: Callable[[], None]) -> None:
        """``write``, once more with the store's reserve given back if the disk was full:
        how a run ended (or stands) is the one write a full disk must not take away."""
        try:
            write()
        except DiskFull:
            if not self.reserve.release():
                raise
            write()

    def _check_room(self) -> None:
        """Refuse new work (``DiskFull``) while the store's reserve has been given back to
        a full disk and there is not yet room to make it again: a run started now could
        take the room the ends of runs are written with."""
        if self.reserve.path is not None and not self.reserve.keep():
            raise DiskFull(no_room_message(self.store.location))

    def unwritten_end(self, run_id: str) -> tuple[str, str] | None:
        """How a run of this process ended, (status, reason), when the store could not
        record it yet (its disk full even after the reserve, its database away): what
        the store will say once it can."""
        with self._lock:
            return self._unwritten.get(run_id)

    def _write_unwritten(self) -> None:
        """Write the ends kept by ``_end_or_keep`` and let go of those runs (the
        heartbeat, and ``resume`` before it looks at a run)."""
        with self._lock:
            pending = dict(self._unwritten)
        for run_id, (status, reason) in pending.items():
            try:
                self.store.set_run_status(run_id, status, reason, owner=self.owner)
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
            with self._lock:
                self._unwritten.pop(run_id, None)
                if run_id not in self._live:
                    self.release(run_id)

    def _stop_lost(self, run_id: str) -> None:
        """``Leases.on_lost``: a run taken from this process stops before its next node
        (its checkpoint writes are refused from now on anyway). A server run goes on
        there, for the process that holds it now: not stopped (``stops_when_lost``)."""
        if not self.executor.stops_when_lost:
            return
        with self._lock:
            entry = self._live.get(run_id)
            self._redirects.pop(run_id, None)  # recorded ones wait in the store
        if entry is not None:
            entry[1].redirecting = False
            entry[1].set()

    # ------------------------------------------------------------- leases

    def release(self, run_id: str) -> None:
        """Let go of a run this process no longer runs (called under ``_lock`` by the
        worker loop; also by a server executor and ``answered_elsewhere``)."""
        try:
            self.store.release_run(run_id, self.owner)
        except Exception as exc:  # the store is gone: the lease runs out by itself
            log.warning("Run %s: its lease not given back (it runs out by itself): %s", run_id, exc)

    def _held_elsewhere(self, run_id: str) -> str:
        _, until = self.store.run_lease(run_id)
        left = max(0.0, (until or 0.0) - self.store.lease_clock())
        where = "on this home" if self.store.dialect == "sqlite" else "sharing this database"
        return (
            f"The run is in progress in another app process {where}; it can be taken "
            f"over only once that process has stopped for {self.lease_s:g} s "
            f"(in {left:.0f} s at the earliest)."
        )

    @contextmanager
    def _holding(self, run_id: str) -> Iterator[None]:
        """Hold the run for this process while it is handed to a worker (ValueError when a
        live process holds it); let go again if handing it over fails."""
        self._check_room()
        if not self.store.claim_run(run_id, self.owner, self.lease_s):
            raise ValueError(self._held_elsewhere(run_id))
        try:
            yield
        except BaseException:
            with self._lock:
                if run_id not in self._live:
                    self.release(run_id)
            raise

    def _mark_orphans(self) -> int:
        """Mark interrupted the live runs nobody holds: their lease ran out, or their
        owner was a process on this machine that no longer exists (a restarted app
        need not wait out the lease of the one it replaces)."""
        host = socket.gethostname()
        for owner in self.store.run_records.live_owners():
            owner_host, _, rest = owner.partition(":")
            pid = rest.partition(":")[0]
            if owner_host == host and pid.isdigit() and not _process_exists(int(pid)):
                self.store.run_records.end_leases(owner)
        return self.store.mark_interrupted()

    def _keep_leases(self) -> None:
        """The heartbeat: renew the hold on this process's live runs every few seconds;
        with ``claim_orphans``, also mark runs whose owner stopped renewing interrupted."""
        tick = min(self.lease_s / 3, 5.0)
        failing = ""  # why the last beat failed: said once, and when it works again
        while True:
            with self._lock:
                live = list(self._live)
            if self._closed and not live:
                return
            try:
                self._write_unwritten()
                self.reserve.keep()
                self.leases.renew(live)
                if self.claim_orphans and not self._closed:
                    self._mark_orphans()
            except Exception as exc:  # the store may be closing or away; try again next tick
                self.leases.unconfirm()
                if str(exc) != failing and not self._closed:
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
            if self._closed:
                time.sleep(tick)  # _stop is set: keep renewing until the last run ends
            else:
                self._stop.wait(tick)

    def _apply_redirect(
        self,
        run_id: str,
        compiled: CompiledStateGraph,
        plan: Callable,
        note: str,
        redirect_id: int | None = None,
    ) -> None:
        """Work out the redirect from the run's state now (its next node is only known
        once its stream has stopped), apply it and log it as an event of the run. A
        recorded redirect marks the checkpoint it writes with its id (``_was_applied``)."""
        snapshot = compiled.get_state({"configurable": {"thread_id": run_id}})
        update, goto = plan(snapshot)
        mark = {REDIRECT_MARK: redirect_id} if redirect_id is not None else None
        redirect_state(compiled, run_id, update, goto, metadata=mark)
        self._log(
            run_id,
            {
                "kind": "redirect",
                "goto": goto,
                "note": note,
                "was_next": list(pending_nodes(snapshot)),
            },
            step=(snapshot.values or {}).get("current_step"),
        )

    def _apply_or_refuse(
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
            self._apply_redirect(run_id, compiled, plan, note, redirect_id)
        except (Stopped, LeaseLost):
            raise
        except Exception as exc:
            log.warning("Run %s: a change asked of it was refused: %r", run_id, exc)
            self._log(
                run_id,
                {
                    "kind": "redirect_refused",
                    "note": note,
                    "reason": describe_error(exc, self.settings),
                },
            )
        if redirect_id is not None:
            self.store.decisions.forget_redirect(redirect_id)

    def _was_applied(self, run_id: str, redirect_id: int) -> bool:
        """Whether a recorded redirect already wrote its checkpoint (a crash came after
        that and before the record was forgotten): applying it again would repeat it."""
        config: RunnableConfig = {"configurable": {"thread_id": run_id}}
        found = self.checkpointer.list(config, filter={REDIRECT_MARK: redirect_id}, limit=1)
        return next(iter(found), None) is not None

    def _plan_of(self, spec: dict, design: Design, compiled: CompiledStateGraph | None) -> Callable:
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

    def _take_queued_redirects(
        self, run_id: str, design: Design, compiled: CompiledStateGraph
    ) -> None:
        """Redirects recorded for a run whose process stopped before applying them (a
        follow-up message sent just before a crash): the first is applied now, to the
        state the run stopped at, the others wait for the run's next stop as they would
        have; one already applied is only forgotten."""
        queued = self.store.queued_redirects(run_id)
        while queued and self._was_applied(run_id, queued[0]["id"]):
            self.store.decisions.forget_redirect(queued.pop(0)["id"])
        if not queued:
            return
        first, rest = queued[0], queued[1:]
        try:
            plan = self._plan_of(first["spec"], design, compiled)
        except ValueError as exc:
            self._log(
                run_id, {"kind": "redirect_refused", "note": first["note"], "reason": str(exc)}
            )
            self.store.decisions.forget_redirect(first["id"])
        else:
            self._apply_or_refuse(run_id, compiled, plan, first["note"], first["id"])
        with self._lock:
            self._redirects[run_id] = [
                (self._plan_of(r["spec"], design, compiled), r["note"], r["id"]) for r in rest
            ]

    def reconcile_events(self, run_id: str, design: Design, compiled: StateHistory) -> None:
        """Log the node updates a crash kept out of the event log (saved in the checkpoints,
        never logged), so the log, the drawn graph and the run's state agree; a run
        logged before updates were keyed is left as it is."""
        known = self.store.update_keys(run_id)
        if known is None:
            return
        for event in missed_updates(compiled, run_id, known):
            self.store.append_event(run_id, event_record(event, design.system))

    def _log(self, run_id: str, data: dict, step: int | None = None) -> None:
        """A note of the service's own in the run's event log (a "custom" event), written
        only while this process holds the run when one of its workers runs it."""
        self.leases.check(run_id)
        record = {
            "seq": self.store.latest_seq(run_id) + 1,
            "ts": time.time(),
            "kind": "custom",
            "node": "",
            "namespace": "",
            "step": step,
            "data": data,
        }
        try:
            self.store.append_events(run_id, [record], owner=self.leases.owner_of(run_id))
        except LeaseLost:
            self.leases.lose(run_id)
            raise

    def send_message(self, run_id: str, text: str) -> None:
        """A follow-up message in the run's conversation (any system, at any time): the
        ``before_run`` hook (the guardrail, when on) takes it first; a main agent mid-work
        keeps its plan and takes the message when it finishes."""
        _, design = self.stored(run_id)
        compiled, _, _ = self._graph(design)
        if text.strip():
            checked_question(text, self.settings, "message")
        spec = {"kind": "message", "text": text}
        plan = self._plan_of(spec, design, compiled)  # ValueError: empty
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
        ``_plan_of`` rebuilds the plan from; derived from ``update``/``goto``), so a crash
        before the run stops does not lose it: ``resume`` applies it."""
        if plan is None:
            if goto is None:
                raise ValueError("redirect needs a node to go to, or a plan.")
            plan = lambda _snapshot: (update or {}, goto)  # noqa: E731
            spec = {"kind": "goto", "update": update or {}, "goto": goto}
        with self._decide_lock:
            with self._lock:
                entry = self._live.get(run_id)
                if entry is not None:
                    redirect_id = self._record_redirect(run_id, spec, note)
                    self._redirects.setdefault(run_id, []).append((plan, note, redirect_id))
                    entry[1].redirecting = True
                    entry[1].set()
                    return
            record, design = self.stored(run_id)
            if record.status in LIVE_STATUSES and self.store.run_lease(run_id)[0] == self.owner:
                raise ValueError("The run is starting; try again in a moment.")
            with self._holding(run_id):  # refused while another live process runs it
                if compiled is None:
                    compiled, _, _ = self._graph(design)
                self.reconcile_events(run_id, design, compiled)
                self._apply_redirect(run_id, compiled, plan, note)
                self.store.set_run_status(run_id, "queued", note or "Sent on.")
                self._submit(run_id, design, compiled, None, False)

    def edit_request(self, run_id: str, text: str) -> None:
        """The human edited the run's request, while it runs or after (a system that
        ``Forks.edit_goto``): it goes on from the state the run stops at, at the system's
        ``edit_goto`` (hierarchical_teams: the lead replans, keeping finished subtasks)."""
        _, design = self.stored(run_id)
        system = get_system(design.system)
        if system.forks.edit_goto is None:
            raise ValueError(f"A {design.system} run has no request to edit.")
        # Refuse an empty or unchanged text here, not later in the run's worker.
        if text.strip():
            checked_question(text, self.settings, "request")
        system.forks.edit_request(
            {"request": (self.store.snapshot(run_id) or {}).get("request")}, text
        )
        spec = {"kind": "edit", "text": text}
        self.redirect(
            run_id,
            plan=self._plan_of(spec, design, None),
            note=f"Request edited: {text.strip()[:120]}",
            spec=spec,
        )

    def _record_redirect(self, run_id: str, spec: dict | None, note: str) -> int | None:
        """Record a live run's redirect in the store; None when it has no JSON form (a
        caller's own ``plan``, an update holding objects): it then lives in memory only."""
        if spec is None:
            return None
        try:
            json.dumps(spec)
        except (TypeError, ValueError):
            return None
        return self.store.queue_redirect(run_id, spec, note)

    # ------------------------------------------------------------- after a pause

    def stored(self, run_id: str) -> tuple[RunRecord, Design]:
        """A run's record and its design (KeyError naming the run when there is none)."""
        record = self.store.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        return record, Design.model_validate(record.design)

    def pending_approvals(self) -> list[dict]:
        """Every decision waiting for a human, across runs, oldest first; each with its
        run's question, system, design timeout (``timeout_s``, ``timeout_action``) and
        place in an experiment (``experiment``: None when the run is in none) and, when
        its timeout is due but the store could not take it yet, why (``timeout_held``)."""
        self.executor.notice_answers()
        pending = []
        for record in self.store.runs(status="waiting", limit=1000):
            for item in self.store.pending_interrupts(record.id):
                held = self.timeouts.held(record.id, item["id"])
                pending.append({**item, **self._run_facts(record), "timeout_held": held})
        places = self.store.evals.experiment_places(p["run_id"] for p in pending)
        for item in pending:
            item["experiment"] = places.get(item["run_id"])
        return sorted(pending, key=lambda p: p.get("asked_at") or 0)

    @staticmethod
    def _run_facts(record: RunRecord) -> dict:
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
        decided = self.store.decisions_since(since)
        places = self.store.evals.experiment_places(d["run_id"] for d in decided)
        found = []
        for item in decided:
            record = self.store.run(item["run_id"])
            if record is None:
                continue  # deleted from History since
            found.append({**item, **self._run_facts(record), "experiment": places.get(record.id)})
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
        with self._decide_lock:
            record, design = self.stored(run_id)
            compiled, _, _ = self._graph(design)
            config: RunnableConfig = {"configurable": {"thread_id": run_id}}
            if record.status != "waiting" or interrupt_id not in {
                i.id for i in compiled.get_state(config).interrupts
            }:
                raise ValueError("This approval is no longer pending (already answered?).")
            with self._holding(run_id):  # two processes never both answer it
                self.store.set_run_status(run_id, "queued", f"Decision: {decision}")
                asked = [
                    i for i in self.store.pending_interrupts(run_id) if i["id"] == interrupt_id
                ]
                item = asked[0] if asked else {"id": interrupt_id}
                if decision == "edit":  # what was done, for the card left in its place
                    item = {**item, "edited_query": query}
                try:
                    self.store.decisions.record(run_id, item, decision, by, reason)
                except DiskFull:  # not recorded: the run waits for it as before
                    try:
                        self._write_despite_full(
                            lambda: self.store.set_run_status(run_id, record.status, record.reason)
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
                self._submit(run_id, design, compiled, Command(resume=resume), False)

    def resume(self, run_id: str, step_mode: bool = False) -> None:
        """Go on from the last checkpoint: a run interrupted by a crash, or a paused one
        (``step_mode``: one node, then pause again)."""
        self._write_unwritten()  # a run the database cut off: its end first, then resume
        if unwritten := self.unwritten_end(run_id):  # not "in progress": ended, not recorded
            raise ValueError(
                "The store cannot record how this run ended yet, so it cannot be resumed "
                f"now. {unwritten[1]}"
            )
        record, design = self.stored(run_id)
        if self.is_live(run_id) or (
            record.status in LIVE_STATUSES and self.store.run_lease(run_id)[0] == self.owner
        ):
            raise ValueError("The run is already in progress.")
        # queued/running here: left by a process that stopped renewing its lease (taken
        # over below) or held by a live one (refused below).
        if record.status not in ("interrupted", "paused", "failed", "cancelled", *LIVE_STATUSES):
            raise ValueError(f"A {record.status} run cannot be resumed.")
        with self._holding(run_id):
            compiled, _, _ = self._graph(design)
            self.reconcile_events(run_id, design, compiled)
            self._take_queued_redirects(run_id, design, compiled)
            if not pending_nodes(compiled.get_state({"configurable": {"thread_id": run_id}})):
                raise ValueError("Nothing left to run: the run reached its end.")
            self.store.set_run_status(run_id, "queued", "Resumed from its last checkpoint.")
            self._submit(run_id, design, compiled, None, step_mode)

    def apply_timeouts(self, now: float | None = None) -> int:
        """Apply each design's default to approvals older than its timeout; how many
        (one held by a store that cannot take it is tried again next time)."""
        return self.timeouts.apply(now)

    # ------------------------------------------------------------- time travel

    def timeline(self, run_id: str, inner: bool = False) -> list[dict]:
        """Each checkpoint of the run, oldest first, projected for teaching; ``inner``:
        with the checkpoints saved inside its subgraphs (its teams) placed after the
        top-graph checkpoint each ran from, labelled with the team (``inside``)."""
        _, design = self.stored(run_id)
        return self.executor.timeline(run_id, design, inner)

    def inner_checkpoints(self, run_id: str) -> list[dict]:
        """The checkpoints saved inside the run's subgraphs (``inner_timeline``), to be
        placed in a top-graph timeline with ``interleave``."""
        _, design = self.stored(run_id)
        return self.executor.inner_checkpoints(run_id, design)

    def fork(
        self,
        run_id: str,
        checkpoint_id: str,
        changes: dict | None = None,
        step_mode: bool = False,
        pace_s: float | None = None,
    ) -> str:
        """A new run going on from a checkpoint of ``run_id``, with ``changes`` to its
        state (e.g. another plan or agent_query, a teams run's edited subtasks: the
        system's ``fork_changes`` checks them); records its parent run and checkpoint.
        Without changes this replays from that checkpoint. A checkpoint inside a
        subgraph cannot be forked: its ``fork_from`` names the one to use. ``pace_s``:
        the new run's pace (None: the parent's)."""
        record, design = self.stored(run_id)
        if pace_s is not None:
            design = design.model_copy(update={"pace_s": pace_s})
        compiled, planner, worker = self._graph(design)
        new_id = uuid.uuid4().hex
        goto = None
        if changes:  # the system completes and checks them against the state there
            config: RunnableConfig = {
                "configurable": {"thread_id": run_id, "checkpoint_id": checkpoint_id}
            }
            snapshot = compiled.get_state(config)
            if snapshot.created_at is None:  # not a top-graph checkpoint of this run
                raise ValueError(
                    f"No checkpoint {checkpoint_id!r} in run {run_id} to fork from (a "
                    "checkpoint inside a team cannot be forked: fork from the one before "
                    "the team started)."
                )
            values = dict(snapshot.values or {})
            changes, goto = get_system(design.system).forks.fork_changes(values, changes, design)
        fork_state(
            compiled,
            run_id,
            checkpoint_id,
            new_id,
            changes or {},
            goto=goto,
            first_as=lambda: self._first_written_as(run_id, lambda r: history(compiled, r)),
        )
        self._record_run(
            new_id,
            record.question,
            design,
            planner,
            worker,
            record.prompt_versions,
            run_id,
            checkpoint_id,
        )
        self._submit(new_id, design, compiled, None, step_mode)
        return new_id

    def _first_written_as(self, run_id: str, checkpoints_of: Callable[[str], list]) -> str | None:
        """The node a fork of ``run_id``'s first checkpoint is written as, when ``run_id``
        is itself a fork: the one that produced, in its parent, the checkpoint it was
        forked from (``checkpoints_of``: a run's checkpoints, oldest first). None for a
        run that is no fork or whose parent is gone."""
        record = self.store.run(run_id)
        if record is None or not record.parent_run or not record.parent_checkpoint:
            return None
        parent = record.parent_run
        try:
            _, node = fork_point(
                checkpoints_of(parent),
                record.parent_checkpoint,
                parent,
                lambda: self._first_written_as(parent, checkpoints_of),
            )
        except ValueError as exc:
            log.warning("run %s: the node its fork was written as is unknown: %s", run_id, exc)
            return None
        return node

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
        """A new run going on from a checkpoint of ``run_id`` with another text for one of
        its system's tuned prompts (a stored version, or ``text``, saved as a version
        labelled ``label``), on the active model profile: the calls before the checkpoint
        are the parent's, copied into the fork's log as replayed; every later call is live
        (``graph/service/prompt_forks.py``). Records its parent, checkpoint and the
        prompt version it used; ValueError in words when it cannot be made."""
        record, design = self.stored(run_id)
        if record.is_live:
            raise ValueError("The run is still going: fork it once it has ended.")
        text, version = prompt_forks.chosen_version(
            self.store, design, prompt_name, text, version_id
        )
        active = self.profiles.active().choice()
        new_design = prompt_forks.fork_design(design, prompt_name, text, active, run_id)
        if new_design.model and (problem := new_design.model.key_problem()):
            raise ValueError(problem)
        PromptSet(new_design.prompts)  # PromptError naming the prompt and the problem
        compiled, planner, worker = self._graph(new_design)
        before = prompt_forks.events_before(self.store, compiled, run_id, checkpoint_id)
        new_id = uuid.uuid4().hex
        fork_state(  # ValueError: not forkable
            compiled,
            run_id,
            checkpoint_id,
            new_id,
            {},
            first_as=lambda: self._first_written_as(run_id, lambda r: history(compiled, r)),
        )
        if version is None:
            version = self.store.save_prompt_version(
                prompt_name, label.strip() or f"typed for a fork of run {run_id[:8]}", text
            )
        versions = {**record.prompt_versions, prompt_name: version.id}
        self._record_run(
            new_id,
            record.question,
            new_design,
            planner,
            worker,
            versions,
            run_id,
            checkpoint_id,
        )
        copies = prompt_forks.replayed_copies(before, run_id)
        if copies:
            self.store.append_events(new_id, copies, owner=self.owner)
        self._submit(new_id, new_design, compiled, None, step_mode)
        return new_id

    def replay(self, run_id: str, pace_s: float | None = None, step_mode: bool = False) -> str:
        """A new run of ``run_id``'s question and design with every model call answered
        from its recording (``graph/service/replays.py``); records its parent."""
        question, design = replay_design(self.store, run_id, pace_s)
        record = self.store.run(run_id)
        return self.start(
            question,
            design,
            prompt_versions=record.prompt_versions if record else None,
            step_mode=step_mode,
            parent_run=run_id,
        )

    def cancel(self, run_id: str) -> bool:
        """Ask a live run to stop after the node in progress; False if it is not live."""
        with self._lock:
            entry = self._live.get(run_id)
        if entry is None:
            return False
        entry[1].set()
        self.executor.stop(run_id)
        return True

    def is_live(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._live

    def live_runs(self) -> list[str]:
        with self._lock:
            return list(self._live)

    def state(self, run_id: str) -> dict:
        """The run's state now, from its last checkpoint (where its executor keeps it)."""
        _, design = self.stored(run_id)
        return self.executor.state(run_id, design)

    def wait(self, run_id: str, timeout: float | None = None) -> RunRecord:
        """Block until the run has ended (TimeoutError if it has not within ``timeout``)."""
        with self._lock:
            entry = self._live.get(run_id)
        if entry is not None:
            try:
                entry[0].result(timeout=timeout)
            except FutureTimeout:
                raise TimeoutError(f"Run {run_id} still running after {timeout} s.") from None
        record = self.store.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        if unwritten := self.unwritten_end(run_id):  # ended here; the store cannot say so yet
            record = dataclasses.replace(record, status=unwritten[0], reason=unwritten[1])
        return record

    def delete(self, run_id: str) -> None:
        """Forget an ended run: its events and its checkpoints."""
        if self.is_live(run_id):
            raise ValueError("The run is still in progress; cancel it first.")
        self.store.delete_run(run_id)
        self.executor.forget(run_id)

    def on_approval(self, callback: Callable[[str, str, dict | None], None]) -> None:
        """Have ``callback(kind, run_id, item)`` told when a run of this process starts
        waiting for a human (``"waiting"``, no item) or a timeout answered a question
        (``"timeout"``, the question): word outside the app (graph/service/webhooks.py).
        Called on a run's worker thread: it must return at once."""
        with self._lock:
            self._approval_hooks.append(callback)

    def tell_approval(self, kind: str, run_id: str, item: dict | None = None) -> None:
        """Tell the ``on_approval`` callbacks (a timeout answered ``item``; a run waits)."""
        for hook in list(self._approval_hooks):
            try:
                hook(kind, run_id, item)
            except Exception:  # word outside the app never stops a run
                log.exception("run %s: telling of %s failed", run_id, kind)

    @property
    def closed(self) -> bool:
        """Whether ``shutdown`` was asked: the service's own threads stop."""
        return self._closed

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` on a thread of the service's, or less when it shuts down."""
        self._stop.wait(seconds)

    def on_shutdown(self, callback: Callable[..., None]) -> None:
        """Have ``callback(wait=, cancel=)`` called first when this service shuts down (an
        experiment runner stops its own pools)."""
        with self._lock:
            self._shutdown_hooks.append(callback)

    def shutdown(self, wait: bool = True, cancel: bool = True) -> None:
        """Stop taking runs; by default cancel the live ones (their progress is kept)."""
        self._closed = True
        self._stop.set()
        if cancel:
            with self._lock:
                entries = list(self._live.values())
                self._redirects.clear()
            for _, event in entries:
                event.redirecting = False
                event.set()
        for hook in list(self._shutdown_hooks):
            hook(wait=wait, cancel=cancel)
        self._pool.shutdown(wait=wait, cancel_futures=cancel)
        self.executor.shutdown(wait=wait)
        with self._lock:
            never_started = [rid for rid, (future, _) in self._live.items() if future.cancelled()]
            for run_id in never_started:
                self._live.pop(run_id)
                self.release(run_id)
        for run_id in never_started:
            self.store.set_run_status(run_id, "cancelled", "Cancelled before it started.")
        if wait:
            self.checkpointer.conn.close()
