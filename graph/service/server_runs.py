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

Still a subclass of ``RunService`` (issue 32.3, open): running and reading a run are its
executor's, but the four methods that write a run's checkpoints (decide, resume,
redirect, fork) are overridden here, their state being on the server.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Callable

import httpx
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from langgraph_sdk.errors import NotFoundError

from graph.kernel.checkpoints import fork_point
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.served import as_json
from graph.service.run_service import RunService
from graph.service.runs import StopSignal
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

    def _pending_ids(self, run_id: str) -> set[str]:
        return {i["id"] for i in self.server_state(run_id).get("interrupts") or []}

    def decide(
        self,
        run_id: str,
        interrupt_id: str,
        decision: str,
        query: str = "",
        reason: str = "",
        by: str = "human",
    ) -> None:
        """Answer one pending question: a new server run on the thread with
        ``Command(resume={interrupt_id: decision})``, followed like the first."""
        with self.table.decide_lock:
            record, design = self.stored(run_id)
            if record.status != "waiting" or interrupt_id not in self._pending_ids(run_id):
                raise ValueError("This approval is no longer pending (already answered?).")
            with self.holds.holding(run_id):
                self.store.set_run_status(run_id, "queued", f"Decision: {decision}")
                asked = [
                    i for i in self.store.pending_interrupts(run_id) if i["id"] == interrupt_id
                ]
                item = asked[0] if asked else {"id": interrupt_id}
                if decision == "edit":
                    item = {**item, "edited_query": query}
                self.store.decisions.record(run_id, item, decision, by, reason)
                resume = {
                    interrupt_id: {"decision": decision, "query": query, "reason": reason, "by": by}
                }
                self.submit(run_id, design, None, Command(resume=resume), False)

    def resume(self, run_id: str, step_mode: bool = False) -> None:
        """Go on from the thread's last checkpoint on the server (a paused or cancelled run)."""
        record, design = self.stored(run_id)
        if self.is_live(run_id):
            raise ValueError("The run is already in progress.")
        if record.status not in ("interrupted", "paused", "failed", "cancelled", *LIVE_STATUSES):
            raise ValueError(f"A {record.status} run cannot be resumed.")
        with self.holds.holding(run_id):
            if not self.server_state(run_id).get("next"):
                raise ValueError("Nothing left to run: the run reached its end.")
            self.store.set_run_status(run_id, "queued", "Resumed from its last checkpoint.")
            self.submit(run_id, design, None, None, step_mode)

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
        """Send a run that has stopped on the server on to ``goto`` with ``update``: a new
        server run on its thread whose input is ``Command(update=..., goto=...)`` (a
        follow-up message, an edited request). Only from a checkpoint with nothing left
        to run (the run ended): a command applied where other nodes are still due would
        run them too, so a run in progress or waiting is refused in words."""
        if plan is None:
            if goto is None:
                raise ValueError("redirect needs a node to go to, or a plan.")
            plan = lambda _snapshot: (update or {}, goto)  # noqa: E731
        with self.table.decide_lock:
            if self.is_live(run_id):
                raise ValueError(
                    "The run is still going on the LangGraph Server: send this once it has "
                    "stopped (or stop it first)."
                )
            record, design = self.stored(run_id)
            compiled = compiled or self.prepare(design)[0]
            with self.holds.holding(run_id):
                snapshot = self.snapshot_of(run_id)
                if snapshot.next:
                    raise ValueError(
                        f"The run is {record.status} before {', '.join(snapshot.next)}: on a "
                        "LangGraph Server a message or an edit goes to a run that has ended; "
                        "answer or resume it first."
                    )
                changes, target = plan(snapshot)
                if target not in set(compiled.nodes) - {"__start__"}:
                    raise ValueError(
                        f"Cannot send the run to {target!r}: the graph has no such node."
                    )
                self.writes.log(
                    run_id,
                    {"kind": "redirect", "goto": target, "note": note, "was_next": []},
                    step=(snapshot.values or {}).get("current_step"),
                )
                self.store.set_run_status(run_id, "queued", note or "Sent on.")
                self.submit(run_id, design, None, Command(update=changes, goto=target), False)

    # ------------------------------------------------------------- time travel

    def _history(self, run_id: str, design: Design) -> list[ServerSnapshot]:
        """The thread's checkpoints on the server, oldest first."""
        return self.server_executor.history(run_id, design)

    def history_of(self, run_id: str) -> list[ServerSnapshot]:
        """The run's checkpoints on the server, newest first (as LangGraph lists them)."""
        _, design = self.stored(run_id)
        return list(reversed(self._history(run_id, design)))

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

    def fork(
        self,
        run_id: str,
        checkpoint_id: str,
        changes: dict | None = None,
        step_mode: bool = False,
        pace_s: float | None = None,
    ) -> str:
        """A new run (its own server thread) going on from a checkpoint of ``run_id``:
        the thread is created holding that state with ``changes``, as the node that
        produced it (``fork_point``, as a local fork), going where the original went
        (``update_state`` with a Command).
        ``pace_s``: the new run's pace (None: the parent's)."""
        record, design = self.stored(run_id)
        if pace_s is not None:
            design = design.model_copy(update={"pace_s": pace_s})
        compiled, planner, worker = self.prepare(design)
        snaps = self._history(run_id, design)
        index, producer = fork_point(  # the same question a local fork asks
            snaps,
            checkpoint_id,
            run_id,
            lambda: self.forks.first_written_as(run_id, lambda r: self._history(r, design)),
        )
        goto = None
        values = dict(snaps[index].values)
        if changes:
            unknown = set(changes) - set(compiled.builder.channels) - {"messages"}
            if unknown:
                raise ValueError(f"Unknown state field(s): {', '.join(sorted(unknown))}.")
            changes, goto = get_system(design.system).forks.fork_changes(values, changes, design)
        values = {**values, **(changes or {})}
        values.pop("messages", None)  # kept by the new thread's first checkpoint below
        new_id = uuid.uuid4().hex
        update = {**values, "messages": snaps[index].values.get("messages") or []}
        # The SDK's threads.create passes only values with each superstep; the server also
        # takes a command (goto), which a fork needs: nodes route by Command here.
        self.call(
            self.client.http.post,
            "/threads",
            json={
                "thread_id": thread_of(new_id),
                "graph_id": design.system,
                "metadata": {
                    "stepwise_run": new_id,
                    "forked_from": run_id,
                    "graph_id": design.system,
                },
                "supersteps": [
                    {
                        "updates": [
                            {
                                "command": {
                                    "update": as_json(update),
                                    "goto": [goto] if goto else list(snaps[index].next),
                                },
                                "as_node": producer,
                            }
                        ]
                    }
                ],
            },
        )
        self.record_run(
            new_id,
            record.question,
            design,
            planner,
            worker,
            record.prompt_versions,
            run_id,
            checkpoint_id,
        )
        self.submit(new_id, design, None, None, step_mode)
        return new_id

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
