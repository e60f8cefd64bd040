"""Whether this process still holds a run, asked before each write its worker makes.

A process frozen longer than its lease (SIGSTOP, a laptop asleep, a stalled VM) wakes up
to find another process running its runs, or them marked interrupted. Its own view says
nothing happened, so without asking it ran the rest of the run a second time: two end
events, the model called twice for the same nodes. Only the store knows, so:

- the heartbeat's renewal says which runs are still held (``Leases.renew``); a run that
  is not is lost, and its worker is asked to stop;
- a worker's events and status are written only by the lease holder, in the same
  transaction (``Store.append_events(owner=)``, ``Store.set_run_status(owner=)``);
- a worker's checkpoints go through ``LeaseGuardedSaver``, which asks ``Leases.check``:
  confirmed less than half a lease ago by the monotonic clock (it runs on while a process
  is stopped), the run is still held; older, the store is asked again.

A lost run raises ``LeaseLost`` at its next write and stays lost in this process: no event,
no end, no status, no checkpoint more. Why is logged, once.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    V,
)

from graph.errors import StepwiseError
from graph.kernel.versioned_saver import VersionedSqliteSaver
from graph.service.new_threads import NewThreads

log = logging.getLogger(__name__)


class LeaseLost(StepwiseError, RuntimeError):
    """This process no longer holds the run: another took it over or marked it
    interrupted while this one was not renewing (frozen, cut off)."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        super().__init__(
            f"This app process no longer holds run {run_id}: its lease ran out while the "
            "process was not renewing it, and the run was taken over or marked interrupted. "
            "It stops here and writes nothing more for the run."
        )


class LeaseStore(Protocol):
    """What the leases ask the store (``Store``)."""

    def keep_leases(self, owner: str, run_ids: Iterable[str], lease_s: float) -> set[str]: ...

    def run_lease(self, run_id: str) -> tuple[str | None, float | None]: ...


class Leases:
    """This process's hold on the runs its workers are running, as the store last
    confirmed it. Runs not registered with ``hold`` are not checked (a fork being set
    up, a redirect applied under a claim): the claim itself guards those."""

    def __init__(
        self,
        store: LeaseStore,
        owner: str,
        lease_s: float,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.owner = owner
        self.lease_s = lease_s
        self.on_lost = on_lost
        self._lock = threading.Lock()
        # run id -> (the owner it is held as, monotonic time of the statement that last
        # confirmed it: taken before the statement, so a freeze during it counts)
        self._held: dict[str, tuple[str, float]] = {}
        self._since: dict[str, float] = {}  # run id -> when its worker began holding it
        self._lost: set[str] = set()
        # run id -> (owner, monotonic time) of a lease this process just took (``claimed``)
        self._claimed: dict[str, tuple[str, float]] = {}

    def claimed(self, run_id: str, owner: str, at: float) -> None:
        """The store gave ``owner`` a lease on ``run_id`` by a statement started at ``at``
        (monotonic): the worker that holds it next counts that as its first
        confirmation, instead of asking the store again."""
        with self._lock:
            if len(self._claimed) >= 1024:  # runs recorded but never started: a few
                self._claimed.clear()
            self._claimed[run_id] = (owner, at)

    def hold(self, run_id: str, owner: str | None = None) -> None:
        """A worker starts on a run claimed for ``owner`` (this process's by default):
        check its writes from now; the first check asks the store, unless the lease was
        just taken here for the same owner (``claimed``: confirmed then)."""
        owner = owner or self.owner
        with self._lock:
            claim = self._claimed.pop(run_id, None)
            confirmed = claim[1] if claim is not None and claim[0] == owner else -math.inf
            self._held[run_id] = (owner, confirmed)
            # held since the statement that claimed it here, else from now
            self._since[run_id] = confirmed if confirmed > -math.inf else time.monotonic()
            self._lost.discard(run_id)

    def let_go(self, run_id: str) -> None:
        with self._lock:
            self._held.pop(run_id, None)
            self._since.pop(run_id, None)
            self._claimed.pop(run_id, None)
            self._lost.discard(run_id)

    def is_lost(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._lost

    def owner_of(self, run_id: str) -> str | None:
        """The owner a held run's writes are made as; None for a run no worker here
        holds (its writes are not fenced: a claim guards them)."""
        with self._lock:
            entry = self._held.get(run_id)
        return entry[0] if entry is not None else None

    def renew(self, run_ids: Sequence[str]) -> None:
        """The heartbeat: renew this process's leases on ``run_ids``; those the store
        no longer gives it are lost."""
        if not run_ids:
            return
        asked = time.monotonic()
        kept = self.store.keep_leases(self.owner, run_ids, self.lease_s)
        for run_id in run_ids:
            if run_id in kept:
                self._confirmed(run_id, asked)
            elif self._held_before(run_id, asked):
                self.lose(run_id)

    def _held_before(self, run_id: str, at: float) -> bool:
        """Whether a worker has held ``run_id`` since before ``at``. The heartbeat's list
        of live runs is taken before its statement: a run whose leg ended meanwhile was
        released (not renewed, and not lost), and one whose next leg claimed it again
        after the statement (a resume after a decision) is held on that claim."""
        with self._lock:
            since = self._since.get(run_id)
        return since is not None and since <= at

    def check(self, run_id: str) -> None:
        """Raise ``LeaseLost`` unless this process still holds ``run_id`` (asking the
        store when the last confirmation is older than half a lease)."""
        with self._lock:
            if run_id in self._lost:
                raise LeaseLost(run_id)
            entry = self._held.get(run_id)
        if entry is None:
            return
        owner, confirmed = entry
        if time.monotonic() - confirmed < self.lease_s / 2:
            return
        asked = time.monotonic()
        if run_id in self.store.keep_leases(owner, [run_id], self.lease_s):
            self._confirmed(run_id, asked)
            return
        self.lose(run_id)
        raise LeaseLost(run_id)

    def unconfirm(self, run_id: str | None = None) -> None:
        """A write of the run (of every run: None) failed: whether it is still held is
        not known, so the next check asks the store (and fails at once while the
        database is away, instead of the run going on to wait on it)."""
        with self._lock:
            for held in [run_id] if run_id is not None else list(self._held):
                if held in self._held:
                    self._held[held] = (self._held[held][0], -math.inf)

    def _confirmed(self, run_id: str, at: float) -> None:
        with self._lock:
            entry = self._held.get(run_id)
            if entry is not None and run_id not in self._lost:
                self._held[run_id] = (entry[0], max(entry[1], at))

    def lose(self, run_id: str) -> None:
        """The run is no longer this process's: say why in the log (once) and stop its
        worker; every later write of it raises ``LeaseLost``."""
        with self._lock:
            if run_id in self._lost:
                return
            self._lost.add(run_id)
        try:
            holder = self.store.run_lease(run_id)[0]
        except Exception as exc:  # only for the log line below: logged there
            holder = f"unknown ({exc})"
        log.warning(
            "Run %s: this app process (%s) lost its lease on it (now held by %s): it was "
            "not renewed in time, so the run was taken over or marked interrupted. The "
            "process stops the run before its next node and writes nothing more for it.",
            run_id,
            self.owner,
            holder or "nobody: marked interrupted",
        )
        if self.on_lost is not None:
            self.on_lost(run_id)


def _thread(config: RunnableConfig) -> str | None:
    return (config.get("configurable") or {}).get("thread_id")


class LeaseGuardedSaver(BaseCheckpointSaver):
    """A run service's checkpointer: the saver it wraps, refusing the checkpoint writes
    of a run this process has lost (``Leases.check``). Reads pass through, but for a
    namespace of a new run's thread known to hold nothing yet (``new_threads``)."""

    def __init__(self, inner: BaseCheckpointSaver, leases: Leases):
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.leases = leases
        self.new_threads = NewThreads()
        if isinstance(inner, VersionedSqliteSaver):
            # checked again inside the write, after the values are serialized: the
            # window a freeze could slip a write through is the lock's taking, not the
            # serialization. A write already past its check when the process froze
            # still lands (the check and the write are not one transaction: the leases
            # live in the store's file, the checkpoints in their own).
            inner.before_write = leases.check

    def _guard(self, config: RunnableConfig) -> None:
        thread = _thread(config)
        if thread is not None:
            self.leases.check(thread)
        self.new_threads.writing(config)

    @property
    def conn(self) -> Any:
        """The wrapped saver's connection (or pool), closed at shutdown."""
        inner: Any = self.inner  # a SqliteSaver's connection or a PostgresSaver's pool
        return inner.conn

    @property
    def config_specs(self) -> list:
        return self.inner.config_specs

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if self.new_threads.empty(config):
            return None
        return self.inner.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._guard(config)
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._guard(config)
        return self.inner.put_writes(config, writes, task_id, task_path)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if self.new_threads.empty(config):
            return None
        return await self.inner.aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._guard(config)
        return await self.inner.aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._guard(config)
        return await self.inner.aput_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        return self.inner.delete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        return self.inner.delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.leases.check(target_thread_id)
        return self.inner.copy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        return self.inner.prune(thread_ids, strategy=strategy)

    def get_next_version(self, current: V | None, channel: None) -> V:
        return self.inner.get_next_version(current, channel)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return self.inner.get_delta_channel_history(config=config, channels=channels)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
