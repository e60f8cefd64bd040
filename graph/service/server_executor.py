"""Runs executed by a LangGraph Server: the ``RunExecutor`` of ``ServerRunService``.

Each run is a thread on the server (``langgraph.json`` serves the hosted systems,
``graph/served.py``), driven through ``langgraph-sdk``. A worker thread here follows the
run's stream and MIRRORS it into the local store exactly as a local run writes it (node
updates keyed by task id, custom events, whole states, the pending interrupts and the
end), so the pages keep reading the store. The server's workers do the work; this
process only waits on streams.

It is handed its service (``ServerRunService``) and knows it only as ``ServerSide``, the
members it uses (``server_states.py``): it imports neither the service nor ``server_runs``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Iterator, Literal

import httpx
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from langgraph_sdk.errors import APIError
from langgraph_sdk.schema import StreamPart

from graph.kernel.design import Design
from graph.kernel.system import System, get_system
from graph.models.chat import describe_error
from graph.served import run_config, stream_payload
from graph.service import answered_elsewhere, server_checkpoints
from graph.service.run_controls import StopSignal
from graph.service.run_records import RunEvent, event_record, is_pseudo_node, update_key
from graph.service.server_endings import server_ending
from graph.service.server_states import (
    STREAM_MODES,
    ServerGraph,
    ServerSide,
    ServerSnapshot,
    ServerUnavailable,
    namespace_of,
    revive,
    revive_state,
    thread_of,
)
from graph.service.store import SETTLED_STATUSES, TERMINAL_STATUSES

log = logging.getLogger(__name__)


class ServerExecutor:
    """Runs on the LangGraph Server at ``service.url``, mirrored into the store."""

    # A run lost to another app process goes on on the server, for the process that
    # holds it now: stopping it here would cancel it there.
    stops_when_lost = False

    def __init__(self, service: ServerSide) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._server_runs: dict[str, str] = {}  # our run id -> the server's run in progress

    def refuse_start(self, design: Design) -> None:
        """Refused in one sentence (nothing recorded, the question left with the caller):
        a replay, which answers from recordings kept by this app, and any run while the
        server does not answer."""
        if design.model is not None and design.model.replay_of:
            raise ValueError(
                "A replay answers from a recording kept by this app, so it runs in this app's "
                "process: runs on a LangGraph Server (STEPWISE_SERVER_URL) cannot be replayed."
            )
        problem = self.service.health()
        if problem:
            raise ServerUnavailable(problem)

    def notice_answers(self) -> None:
        """The questions another client answered on the server (``answered_elsewhere``):
        they show as decided, their runs go on."""
        answered_elsewhere.notice(self.service)

    def history(self, run_id: str, design: Design) -> list[ServerSnapshot]:
        """The thread's checkpoints on the server, oldest first."""
        return server_checkpoints.history(self.service, run_id, design)

    def state(self, run_id: str, design: Design) -> dict:
        """The run's state now, from the server's last checkpoint of its thread."""
        values = self.service.server_state(run_id).get("values") or {}
        return revive_state(values, self.service.schema_of(design))

    def timeline(self, run_id: str, design: Design, inner: bool) -> list[dict]:
        """Each checkpoint of the run's server thread, oldest first (top graph only)."""
        return server_checkpoints.timeline(self.history(run_id, design), design)

    def inner_checkpoints(self, run_id: str, design: Design) -> list[dict]:
        return []  # a server thread's subgraph checkpoints are not listed here

    # Writing a stopped run's checkpoints on the server (``server_checkpoints.py``).

    def graph_for(self, design: Design) -> CompiledStateGraph | None:
        return None  # the server runs the graph

    def questions(
        self, run_id: str, design: Design, compiled: CompiledStateGraph | None
    ) -> set[str]:
        return server_checkpoints.questions(self.service, run_id)

    def ready_to_resume(
        self, run_id: str, design: Design, compiled: CompiledStateGraph | None
    ) -> None:
        server_checkpoints.ready_to_resume(self.service, run_id)

    def refuse_redirect_while_live(self) -> None:
        raise ValueError(
            "The run is still going on the LangGraph Server: send this once it has "
            "stopped (or stop it first)."
        )

    def send_on(
        self, run_id: str, design: Design, compiled: CompiledStateGraph, plan: Callable, note: str
    ) -> Any:
        return server_checkpoints.send_on(self.service, run_id, compiled, plan, note)

    def fork_thread(
        self,
        run_id: str,
        checkpoint_id: str,
        new_id: str,
        design: Design,
        compiled: CompiledStateGraph,
        changes: dict | None,
        first_written_as: Callable[[str, Callable[[str], list]], str | None],
    ) -> None:
        server_checkpoints.fork_thread(
            self.service,
            lambda r: self.history(r, design),
            run_id,
            checkpoint_id,
            new_id,
            design,
            compiled,
            changes,
            first_written_as,
        )

    def admit(self, run_id: str, design: Design, run_input: Any) -> None:
        """A new run's thread is created here, so a server that went down since ``start``
        asked says so to the caller (the run stays recorded, failed)."""
        if run_input is None or isinstance(run_input, Command):
            return  # an answer, a resume, a redirect or a fork: its thread exists
        service = self.service
        try:
            service.call(
                service.client.threads.create,
                thread_id=thread_of(run_id),
                graph_id=design.system,
                metadata={"stepwise_run": run_id, "question": self._question(run_id)},
                if_exists="do_nothing",
            )
        except ServerUnavailable as exc:
            service.store.set_run_status(run_id, "failed", str(exc))
            service.release(run_id)
            raise

    def _question(self, run_id: str) -> str:
        record = self.service.store.run(run_id)
        return record.question[:200] if record else ""

    def thread_of(self, run_id: str) -> str:
        """The run's thread on the server (a UUID made from its id)."""
        return thread_of(run_id)

    def stop(self, run_id: str) -> None:
        """Ask the server to stop the run (its checkpoints are kept)."""
        with self._lock:
            server_run = self._server_runs.get(run_id)
        if server_run:
            try:
                self.service.client.runs.cancel(thread_of(run_id), server_run, action="interrupt")
            except (APIError, httpx.HTTPError):
                pass  # it ended meanwhile

    def forget(self, run_id: str) -> None:
        """Delete the run's thread on the server."""
        try:
            self.service.client.threads.delete(thread_of(run_id))
        except (APIError, httpx.HTTPError):
            pass  # gone already, or the server is down: the thread is only orphaned there

    def shutdown(self, wait: bool) -> None:
        """Nothing of its own: the server's runs outlive this process (followed again)."""

    def work(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
    ) -> None:
        """The worker: follows one server run and mirrors it; never raises."""
        try:
            if cancel.is_set():
                self.service.store.set_run_status(
                    run_id, "cancelled", "Cancelled before it started."
                )
                return
            self.service.store.set_run_status(run_id, "running")
            status, reason = self._mirror(run_id, design, run_input, step_mode, cancel)
            self._finish(run_id, status, reason)
        except Exception as exc:  # a run ends in words, never in a traceback
            try:
                reason = (
                    str(self.service.unavailable(exc))
                    if isinstance(exc, (httpx.TransportError, httpx.TimeoutException))
                    else describe_error(exc, self.service.settings)
                )
                self.service.store.set_run_status(run_id, "failed", reason)
            except Exception:
                log.exception("run %s failed (%s) and could not be marked so", run_id, exc)
        finally:
            self.service.done_with(run_id, cancel)
            with self._lock:
                self._server_runs.pop(run_id, None)
            self.service.trace_out(run_id)

    def _finish(self, run_id: str, status: str, reason: str) -> None:
        """The run's status at its end, unless it was settled meanwhile; a waiting run
        tells the approval hooks."""
        record = self.service.store.run(run_id)
        if record is not None and record.status not in (*TERMINAL_STATUSES, *SETTLED_STATUSES):
            self.service.store.set_run_status(run_id, status, reason)
        if status == "waiting":  # its mirrored end event made it so: a human is asked
            self.service.tell_approval("waiting", run_id)

    def _stream(
        self, run_id: str, design: Design, run_input: Any, step_mode: bool, join: str | None
    ) -> Iterator[StreamPart]:
        thread = thread_of(run_id)
        if join:  # a run already on the server (this process restarted): follow it
            return self.service.streams.runs.join_stream(thread, join, stream_mode=STREAM_MODES)
        interrupt: Literal["*"] | None = "*" if step_mode else None
        return self.service.streams.runs.stream(
            thread,
            design.system,
            config=run_config(design),
            metadata=self.service.run_metadata(
                run_id, design
            ),  # for the server's LangSmith tracing
            stream_mode=STREAM_MODES,
            stream_subgraphs=True,
            interrupt_before=interrupt,
            multitask_strategy="reject",
            **stream_payload(run_input),
        )

    def _mirror(
        self,
        run_id: str,
        design: Design,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
        join: str | None = None,
        before_end: Callable[[], None] | None = None,
    ) -> tuple[str, str]:
        """Follow the server run's stream, writing each event to the store as
        ``continue_run`` would; the run's status and reason at its end."""
        system = get_system(design.system)
        schema = self.service.schema_of(design)
        seq = self.service.store.latest_seq(run_id)
        state: dict = {}
        task_ids: dict[str, dict[str, list[str]]] = {}
        failure = ""

        def emit(kind: str, node: str, ns: str, data: Any, key: str | None = None) -> None:
            nonlocal seq
            seq += 1
            event = RunEvent(seq, time.time(), kind, node, ns, state.get("current_step"), data, key)
            self.service.store.append_event(run_id, event_record(event, design.system))

        for part in self._stream(run_id, design, run_input, step_mode, join):
            mode, ns = part.event.split("|")[0], namespace_of(part.event)
            data = part.data
            if mode == "metadata":
                server_run = str((data or {}).get("run_id") or "")
                with self._lock:
                    self._server_runs[run_id] = server_run
                emit(
                    "custom",
                    "",
                    "",
                    {
                        "server": {
                            "url": self.service.url,
                            "thread_id": thread_of(run_id),
                            "run_id": server_run,
                        }
                    },
                )
                if cancel.is_set():
                    self.stop(run_id)
            elif mode == "values":
                if not ns:
                    state = revive_state(data, schema)
                    emit("state", "", "", state)
            elif mode == "tasks":
                if isinstance(data, dict) and "triggers" in data:
                    task_ids.setdefault(ns, {}).setdefault(data["name"], []).append(data["id"])
            elif mode == "custom":
                emit("custom", "", ns, data)
            elif mode == "updates":
                for node, update in (data or {}).items():
                    if is_pseudo_node(node):
                        continue
                    ids = task_ids.get(ns, {}).get(node)
                    key = update_key(ids.pop(0)) if ids else None
                    if join and not ns and key is None:
                        continue  # began before we joined: read from the checkpoints at the end
                    emit("update", node, ns, revive(update), key)
            elif mode == "error":
                failure = (data or {}).get("message") or str(data)
        if before_end is not None:
            before_end()
        return self._ending(run_id, design, system, state, cancel, failure, schema, emit)

    def _ending(
        self,
        run_id: str,
        design: Design,
        system: System,
        state: dict,
        cancel: StopSignal,
        failure: str,
        schema: type | None,
        emit: Callable[..., None],
    ) -> tuple[str, str]:
        """How the run stands once its stream stopped, read from the server's thread, and
        the "end" event a local run writes."""
        snap = self.service.server_state(run_id)
        values = revive_state(snap.get("values") or {}, schema) or state
        status, reason, extra = server_ending(
            snap, values, cancel.is_set(), failure, self.service.settings
        )
        emit("end", "", "", {"status": status, "reason": reason, **extra})
        return status, reason

    def rejoin(self, run_id: str, design: Design, join: str | None, cancel: StopSignal) -> None:
        """Follow again a run whose process stopped: first the node updates the server
        finished meanwhile (from its checkpoints, keyed by task: stored once), then the
        stream from now on, or, if it has ended, its last state and its end."""
        try:
            graph = ServerGraph(self.service.prepare(design)[0], self.service)

            def reconcile() -> None:
                self.service.reconcile_events(run_id, design, graph)

            reconcile()
            if join:  # again at its end: it may have ended before the stream was joined
                status, reason = self._mirror(
                    run_id, design, None, False, cancel, join=join, before_end=reconcile
                )
            else:
                values = self.service.state(run_id)
                self._append(run_id, design, "state", values)
                status, reason = self._ending(
                    run_id,
                    design,
                    get_system(design.system),
                    values,
                    cancel,
                    "",
                    self.service.schema_of(design),
                    lambda kind, node, ns, data, key=None: self._append(run_id, design, kind, data),
                )
            self._finish(run_id, status, reason)
        except Exception as exc:
            log.warning("run %s interrupted: %r", run_id, exc, exc_info=exc)
            self.service.store.set_run_status(
                run_id, "interrupted", describe_error(exc, self.service.settings)
            )
        finally:
            self.service.done_with(run_id, None)

    def _append(self, run_id: str, design: Design, kind: str, data: Any) -> None:
        """One top-level event at the end of the run's log."""
        event = RunEvent(
            self.service.store.latest_seq(run_id) + 1, time.time(), kind, "", "", None, data
        )
        self.service.store.append_event(run_id, event_record(event, design.system))
