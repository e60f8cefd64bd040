"""What the run service's parts share: its table of live runs, and ``RunHost``, the
members of the service they use.

The run service (``run_service.py``) orchestrates; its parts each do one job on its
behalf: models and graphs (``run_models.py``), a worker's writes (``run_writes.py``),
holds on runs (``run_holds.py``), the worker loop (``run_workers.py``), redirects
(``run_redirects.py``), decisions and resumes (``run_decisions.py``), forks
(``run_forks.py``), word outside the app (``run_notices.py``). Each is handed the
service and knows it only as ``RunHost`` (``RunNotices`` as the smaller ``NoticesHost``),
so none imports ``run_service`` and the service layer has no import circle.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from langchain_core.language_models import BaseChatModel

from graph.kernel.design import Design
from graph.models.modes import ModeBook
from graph.service.approval_timeouts import ApprovalTimeouts
from graph.service.disk_space import DiskReserve
from graph.service.leases import LeaseGuardedSaver, Leases
from graph.service.model_profiles import ModelProfiles
from graph.service.run_controls import StopSignal
from graph.service.run_executors import RunExecutor
from graph.service.store import RunRecord, Store
from graph.settings import Settings

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

# A redirect asked of a live run, taken by its worker when its stream stops: (plan, note,
# id in the store's queued redirects or None when not recorded).
QueuedRedirect = tuple[Callable, str, int | None]


@dataclass
class RunTable:
    """This process's live runs and what waits on them, under one lock: start, resume,
    redirect, cancel and a worker's end all read and change them together."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    # A human and the timeout never both answer a question (nor a redirect in between).
    decide_lock: threading.Lock = field(default_factory=threading.Lock)
    live: dict[str, tuple[Future, StopSignal]] = field(default_factory=dict)
    redirects: dict[str, list[QueuedRedirect]] = field(default_factory=dict)
    # How runs ended that the store could not record then (its database away): written,
    # and the runs let go of, once it answers (``RunWrites.end_or_keep``).
    unwritten: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Runs started here and not yet driven (no event logged): their prompt versions,
    # so their first leg reads neither back from the store (``RunService.continue_here``).
    fresh: dict[str, dict[str, int]] = field(default_factory=dict)
    # Runs whose end event this process stored (which set their status): their worker
    # need not read the status back before it finishes (``Workers.redirect_or_finish``).
    ended: set[str] = field(default_factory=set)


class RunHost(Protocol):
    """What the run service's parts use of it. Read through it each time, never copied:
    a test may swap the service's store, settings or model factory."""

    store: Store
    settings: Settings
    owner: str
    lease_s: float
    leases: Leases
    checkpointer: LeaseGuardedSaver
    reserve: DiskReserve
    profiles: ModelProfiles
    modes: ModeBook
    model_factory: Callable[[str], BaseChatModel] | None
    executor: RunExecutor
    timeouts: ApprovalTimeouts
    table: RunTable
    claim_orphans: bool

    @property
    def closed(self) -> bool: ...

    def pause(self, seconds: float) -> None: ...
    def stored(self, run_id: str) -> tuple[RunRecord, Design]: ...
    def release(self, run_id: str) -> None: ...
    def trace_out(self, run_id: str) -> None: ...
    def tell_approval(self, kind: str, run_id: str, item: dict | None = None) -> None: ...
    def is_live(self, run_id: str) -> bool: ...
    # The service's own members its parts call, as they call them (the service's takes more).
    def submit(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
    ) -> None: ...
    def record_run(
        self,
        run_id: str,
        question: str,
        design: Design,
        planner: BaseChatModel,
        worker: BaseChatModel,
        prompt_versions: dict,
        parent_run: str | None,
        parent_checkpoint: str | None,
    ) -> None: ...
    def start(
        self,
        question: str,
        design: Design,
        prompt_versions: dict[str, int] | None = None,
        step_mode: bool = False,
        parent_run: str | None = None,
    ) -> str: ...
