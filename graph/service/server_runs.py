"""Runs executed by a LangGraph Server, seen by the app as if they ran here.

With ``STEPWISE_SERVER_URL`` set, the app's run service is a ``ServerRunService``: the
same public interface the pages and the command line use (start, decide, cancel, resume,
fork, timeline, state, wait, live_runs...), but each run is a thread on the server
(``langgraph.json`` serves the hosted systems, ``graph/served.py``), driven through
``langgraph-sdk``. Its executor (``ServerExecutor``, ``server_executor.py``) follows each
run's stream on a worker thread here and MIRRORS it into the local store exactly as a
local run writes it, so the pages keep reading the store. The server's workers do the
work and bound how many runs go at once; this process only waits on streams. The thread
on the server has the run's id (as a UUID).

A ``RunService`` that overrides nothing but its making: what differs for a run on a
server (running it, reading its state, answering, resuming, redirecting and forking it)
is its executor's; this adds the server's client and what the Server pages read.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import httpx
from langgraph_sdk.errors import NotFoundError

from graph.kernel.design import Design
from graph.service.run_controls import StopSignal
from graph.service.run_service import RunService
from graph.service.server_client import sdk_client, sends_key_to
from graph.service.server_executor import ServerExecutor
from graph.service.server_states import (  # noqa: F401  (re-exported: what callers import)
    STREAM_MODES,
    ServerGraph,
    ServerSnapshot,
    ServerUnavailable,
    namespace_of,
    revive,
    revive_state,
    snapshot_from,
    thread_of,
)
from graph.service.store import LIVE_STATUSES, Store
from graph.service.webhooks import Webhooks
from graph.settings import Settings

log = logging.getLogger(__name__)


class ServerRunService(RunService):
    """``RunService`` whose runs execute on a LangGraph Server at ``url``."""

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        url: str | None = None,
        max_workers: int = 16,
        timeout_tick_s: float = 1.0,
        claim_orphans: bool = True,
    ) -> None:
        # Its runs go to the server (``server_executor.py``); it reads the client below
        # only once a run is handed to it.
        self.server_executor = ServerExecutor(self)
        # answered_elsewhere.notice's last look. Set before the service starts its approval
        # timeout thread, whose tick reads it (it raised AttributeError when that came first),
        # and set to now: the first look waits one period, past the client made below.
        self.elsewhere_checked_at = time.monotonic()
        super().__init__(
            store,
            settings,
            max_workers=max_workers,
            timeout_tick_s=timeout_tick_s,
            claim_orphans=False,  # a run on the server outlives this process: follow it again
            executor=lambda _service: self.server_executor,
        )
        self.url = (url or self.settings.server_url or "").rstrip("/")
        if not self.url:
            raise ValueError("A server runtime needs STEPWISE_SERVER_URL.")
        # Reads (a page redrawing every second) give up soon on a slow server; a run's
        # stream waits as long as the run takes.
        send_key = sends_key_to(self.url, self.settings)
        self.client = sdk_client(self.url, httpx.Timeout(10.0), self.settings, send_key=send_key)
        self.streams = sdk_client(
            self.url, httpx.Timeout(10.0, read=None), self.settings, send_key=send_key
        )
        self._schemas: dict[str, type] = {}
        if claim_orphans:
            self.followed_at_start = self.follow_again()

    # ------------------------------------------------------------- the server

    def unavailable(self, exc: Exception) -> ServerUnavailable:
        return ServerUnavailable(
            f"The LangGraph Server at {self.url} did not answer ({type(exc).__name__}); "
            "nothing was lost: try again once it is up."
        )

    def call(self, what: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One request to the server; ServerUnavailable (one sentence) when it is down."""
        try:
            return what(*args, **kwargs)
        except (httpx.TransportError, httpx.TimeoutException) as exc:
            raise self.unavailable(exc) from None

    def health(self) -> str:
        """ "" when the server answers, else the sentence the pages show."""
        try:
            reply = httpx.get(f"{self.url}/ok", timeout=2.0)
            reply.raise_for_status()
        except httpx.HTTPError as exc:
            return str(self.unavailable(exc))
        return ""

    def server_state(self, run_id: str, checkpoint_id: str | None = None) -> dict:
        """The server's state of the run's thread (at ``checkpoint_id``)."""
        try:
            return self.call(
                self.client.threads.get_state, thread_of(run_id), checkpoint_id=checkpoint_id
            )
        except NotFoundError:
            raise KeyError(f"No thread of run {run_id} on {self.url}.") from None

    def schema_of(self, design: Design) -> type | None:
        """The system's state schema (to type what the server sends back), built once."""
        if design.system not in self._schemas:
            try:
                self._schemas[design.system] = self.prepare(design)[0].builder.state_schema
            except Exception:
                log.warning(
                    "no state schema for %s: its values are shown as data",
                    design.system,
                    exc_info=True,
                )
                return None
        return self._schemas[design.system]

    # ------------------------------------------------------------- running

    def follow_again(self) -> int:
        """Runs left live in the store by a process that stopped: still running on the
        server, they are followed again; else their end is read from the server."""
        followed = 0
        for record in self.store.runs(limit=1000):
            if record.status not in LIVE_STATUSES:
                continue
            owner, until = self.store.run_lease(record.id)
            if owner and (until or 0) > self.store.lease_clock():
                continue  # another live process follows it
            if not self.store.claim_run(record.id, self.owner, self.lease_s):
                continue
            design = Design.model_validate(record.design)
            try:
                runs = self.client.runs.list(thread_of(record.id), limit=1)
            except Exception as exc:
                log.warning(
                    "run %s left to later: the server did not list its runs (%s)", record.id, exc
                )
                self.release(record.id)
                continue
            join = (
                runs[0]["run_id"] if runs and runs[0]["status"] in ("pending", "running") else None
            )
            cancel = StopSignal()
            with self.table.lock:
                future = self._pool.submit(
                    self.server_executor.rejoin, record.id, design, join, cancel
                )
                self.table.live[record.id] = (future, cancel)
            followed += 1
        return followed

    # ------------------------------------------------------------- time travel

    def history_of(self, run_id: str) -> list[ServerSnapshot]:
        """The run's checkpoints on the server, newest first (as LangGraph lists them)."""
        _, design = self.stored(run_id)
        return list(reversed(self.server_executor.history(run_id, design)))

    def snapshot_of(self, run_id: str, checkpoint_id: str | None = None) -> ServerSnapshot:
        """The run's state on the server (at ``checkpoint_id``), as a snapshot."""
        _, design = self.stored(run_id)
        return snapshot_from(self.server_state(run_id, checkpoint_id), self.schema_of(design))

    def checkpoint(self, run_id: str) -> tuple[tuple[str, ...], dict]:
        """What runs next from the run's last checkpoint, and the state there."""
        snap = self.server_state(run_id)
        _, design = self.stored(run_id)
        return tuple(snap.get("next") or ()), revive_state(
            snap.get("values") or {}, self.schema_of(design)
        )

    def server_runs(self, run_id: str) -> list[dict]:
        """The runs the server lists on this run's thread (newest first)."""
        return self.call(self.client.runs.list, thread_of(run_id), limit=100)


def open_run_service(store: Store, settings: Settings, **kwargs: Any) -> RunService:
    """The run service ``settings`` ask for: on the LangGraph Server at
    ``STEPWISE_SERVER_URL`` when it is set, else threads in this process (the default).
    The one place the app and the command line pick their runtime."""
    service = (
        ServerRunService(store, settings, **kwargs)
        if settings.server_url
        else RunService(store, settings, **kwargs)
    )
    if settings.webhook_url is not None:
        Webhooks.attach(service)
    return service
