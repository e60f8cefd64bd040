"""Runs outside the Streamlit script run: a process-wide pool of worker threads.

A click reruns the page script, which would kill a run living inside it; so runs live
here, in background threads that write every event to the store and never touch
Streamlit. Pages only start, cancel and read. All runs share one LangGraph
checkpointer (the state, for resume, replay and forks); the store holds what happened.
Who drives a run's stream is the service's ``RunExecutor`` (``run_executors.py``: this
process's threads, worker processes, or a LangGraph Server's ``server_executor.py``).

The service orchestrates: it starts runs and hands them to workers, keeps its table of
live runs, cancels, waits and shuts down. The rest is done by its parts (``run_host.py``
lists them), whose public members stay callable on the service through ``RunParts``
(``run_parts.py``), so its callers see one object.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Durability

from graph.agents.user_agent_tools import use_mcp_servers
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.modes import ModeBook
from graph.service.approval_timeouts import ApprovalTimeouts
from graph.service.disk_space import DiskReserve
from graph.service.leases import LeaseGuardedSaver, Leases
from graph.service.model_profiles import ModelProfiles
from graph.service.process_executor import ProcessExecutor
from graph.service.questions import checked_question
from graph.service.run_controls import StopSignal
from graph.service.run_decisions import Decisions
from graph.service.run_executors import RunExecutor, ThreadExecutor
from graph.service.run_forks import Forks
from graph.service.run_holds import RunHolds
from graph.service.run_host import RunTable
from graph.service.run_models import RunModels
from graph.service.run_notices import RunNotices
from graph.service.run_parts import RunParts
from graph.service.run_processes import RunProcesses
from graph.service.run_records import RunOutcome
from graph.service.run_redirects import Redirects
from graph.service.run_storage import checkpointer_for
from graph.service.run_workers import Workers
from graph.service.run_writes import RunWrites
from graph.service.runs import continue_run
from graph.service.store import RunRecord, Store
from graph.settings import Settings, get_settings

ModelFactory = Callable[[str], BaseChatModel]
# Makes the executor a service runs its runs with (``graph/service/run_executors.py``).
ExecutorFactory = Callable[["RunService"], RunExecutor]
log = logging.getLogger(__name__)


class RunService(RunParts):
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
        # leaves a run alone while its owner renews the lease (``RunHolds.keep_leases``).
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_s = self.settings.run_lease_s
        # A live run nobody renews cannot be live: its process is gone. (The command line
        # does not claim them: an app may be running them on the same home.)
        self.claim_orphans = claim_orphans
        # Its live runs, and its parts (``run_host.py``), each doing one job on its behalf.
        self.table = RunTable()
        self.writes = RunWrites(self)
        self.holds = RunHolds(self, self.writes)
        self.models = RunModels(self)
        self.redirects = Redirects(self, self.models, self.writes, self.holds)
        self.decisions = Decisions(self, self.writes, self.holds)
        self.forks = Forks(self, self.models)
        self.workers = Workers(self, self.writes, self.redirects)
        self.interrupted_at_start = self.holds.mark_orphans() if claim_orphans else 0
        # Whether this process still holds the runs its workers run, asked before each of
        # their writes: a process frozen past its lease must not run a run twice.
        self.leases = Leases(store, self.owner, self.lease_s, on_lost=self.holds.stop_lost)
        self.checkpointer = LeaseGuardedSaver(checkpointer_for(self.settings), self.leases)
        # What the model server accepts, learnt once and kept in the store across restarts.
        self.modes = ModeBook(store)
        # The Model page's profiles: the active one is the model of the runs started here.
        self.profiles = ModelProfiles(store, self.settings)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="stepwise-run")
        # With processes, worker processes drive the streams (``process_executor.py``).
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
        # Room kept beside the store, given back to write how runs ended on a full disk.
        self.reserve = DiskReserve(store.path)
        self.reserve.keep()
        self._closed = False
        self._stop = threading.Event()
        self.timeout_tick_s = timeout_tick_s
        self._shutdown_hooks: list[Callable[..., None]] = []
        # Word outside the app: approval callbacks (webhooks), traces to an OTLP backend.
        self.notices = RunNotices(self, self.settings)
        # User agents' MCP tools come from this store's Tools page servers.
        use_mcp_servers(store.mcp_servers)
        # When nobody decides in time: the design's default, applied by a thread of its own.
        self.timeouts = ApprovalTimeouts(self)
        if timeout_tick_s:
            threading.Thread(
                target=self.timeouts.watch, name="stepwise-approval-timeouts", daemon=True
            ).start()
        threading.Thread(
            target=self.holds.keep_leases, name="stepwise-run-leases", daemon=True
        ).start()

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
        self.writes.check_room()
        question = checked_question(question, self.settings)
        design = self.with_active_model(design)
        if design.model is not None and (problem := design.model.key_problem()):
            raise ValueError(problem)
        self.models.check_prompts(design)  # PromptError naming the prompt and the problem
        compiled, planner, worker = prepared or self.models.graph(design)
        run_id = uuid.uuid4().hex
        versions = prompt_versions
        if versions is None:
            versions = self.models.recorded_versions(design)
        self.record_run(
            run_id, question, design, planner, worker, versions, parent_run, parent_checkpoint
        )
        self.table.fresh[run_id] = dict(versions)  # nothing logged before its first leg
        initial = get_system(design.system).initial_state(question, design)
        self.submit(run_id, design, compiled, initial, step_mode, pool=pool)
        return run_id

    def record_run(
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
        this process (confirmed now for its worker: ``Leases.claimed``)."""
        asked = time.monotonic()  # before the statement: a freeze during it counts
        self.store.create_run(
            run_id,
            question,
            design,
            self.models.label(planner, worker, design),
            prompt_versions=prompt_versions,
            settings=self.run_settings(design),
            parent_run=parent_run,
            parent_checkpoint=parent_checkpoint,
            owner=self.owner,
            lease_s=self.lease_s,
        )
        self.leases.claimed(run_id, self.owner, asked)

    def submit(
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
        with self.table.lock:
            if run_id in self.table.live:
                raise ValueError("The run is already in progress.")
            future = (pool or self._pool).submit(
                self.executor.work, run_id, design, compiled, run_input, step_mode, cancel
            )
            self.table.live[run_id] = (future, cancel)

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
        fresh = self.table.fresh.pop(run_id, None)  # recorded here: no event, versions known
        with self.checkpointer.new_threads.driving(run_id, fresh is not None):
            return continue_run(
                compiled,
                run_input,
                run_id,
                design,
                settings=self.run_settings(design),
                on_events=lambda events: self.writes.store_events(run_id, design.system, events),
                before_node=lambda: self.leases.check(run_id),
                cancel=cancel,
                step_mode=step_mode,
                first_seq=0 if fresh is not None else self.store.latest_seq(run_id),
                durability=self.durability,
                metadata=self.run_metadata(run_id, design, fresh),
            )

    def thread_of(self, run_id: str) -> str:
        """The LangGraph thread a run's state lives in (its executor's)."""
        return self.executor.thread_of(run_id)

    def done_with(self, run_id: str, cancel: StopSignal | None) -> None:
        """A worker's run is no longer live here: let go of it (only when it is still the
        worker's own entry, ``cancel``; None: whichever entry it has)."""
        with self.table.lock:
            entry = self.table.live.get(run_id)
            self.table.fresh.pop(run_id, None)
            if cancel is None or (entry is not None and entry[1] is cancel):
                self.table.live.pop(run_id, None)
                self.release(run_id)

    def forget_checkpoints(self, thread_id: str) -> None:
        """Delete a thread's checkpoints from this process's checkpointer."""
        self.checkpointer.delete_thread(thread_id)

    def stored(self, run_id: str) -> tuple[RunRecord, Design]:
        """A run's record and its design (KeyError naming the run when there is none)."""
        record = self.store.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        return record, Design.model_validate(record.design)

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

    # ------------------------------------------------------------- reading and ending runs

    def cancel(self, run_id: str) -> bool:
        """Ask a live run to stop after the node in progress; False if it is not live."""
        with self.table.lock:
            entry = self.table.live.get(run_id)
        if entry is None:
            return False
        entry[1].set()
        self.executor.stop(run_id)
        return True

    def is_live(self, run_id: str) -> bool:
        with self.table.lock:
            return run_id in self.table.live

    def live_runs(self) -> list[str]:
        with self.table.lock:
            return list(self.table.live)

    def state(self, run_id: str) -> dict:
        """The run's state now, from its last checkpoint (where its executor keeps it)."""
        _, design = self.stored(run_id)
        return self.executor.state(run_id, design)

    def wait(self, run_id: str, timeout: float | None = None) -> RunRecord:
        """Block until the run has ended (TimeoutError if it has not within ``timeout``)."""
        with self.table.lock:
            entry = self.table.live.get(run_id)
        if entry is not None:
            try:
                entry[0].result(timeout=timeout)
            except FutureTimeout:
                raise TimeoutError(f"Run {run_id} still running after {timeout} s.") from None
        record = self.store.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        # Ended here, when the store cannot say so yet:
        if unwritten := self.writes.unwritten_end(run_id):
            record = dataclasses.replace(record, status=unwritten[0], reason=unwritten[1])
        return record

    def delete(self, run_id: str) -> None:
        """Forget an ended run: its events and its checkpoints."""
        if self.is_live(run_id):
            raise ValueError("The run is still in progress; cancel it first.")
        self.store.delete_run(run_id)
        self.executor.forget(run_id)

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
        with self.table.lock:
            self._shutdown_hooks.append(callback)

    def shutdown(self, wait: bool = True, cancel: bool = True) -> None:
        """Stop taking runs; by default cancel the live ones (their progress is kept)."""
        self._closed = True
        self._stop.set()
        if cancel:
            with self.table.lock:
                entries = list(self.table.live.values())
                self.table.redirects.clear()
            for _, event in entries:
                event.redirecting = False
                event.set()
        for hook in list(self._shutdown_hooks):
            hook(wait=wait, cancel=cancel)
        self._pool.shutdown(wait=wait, cancel_futures=cancel)
        self.executor.shutdown(wait=wait)
        with self.table.lock:
            never_started = [
                rid for rid, (future, _) in self.table.live.items() if future.cancelled()
            ]
            for run_id in never_started:
                self.table.live.pop(run_id)
                self.release(run_id)
        for run_id in never_started:
            self.store.set_run_status(run_id, "cancelled", "Cancelled before it started.")
        if wait:
            self.checkpointer.conn.close()
