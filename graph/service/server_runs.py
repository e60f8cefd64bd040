"""Runs executed by a LangGraph Server, seen by the app as if they ran here.

With ``STEPWISE_SERVER_URL`` set, the app's run service is a ``ServerRunService``: the
same public interface the pages and the command line use (start, decide, cancel, resume,
fork, timeline, state, wait, live_runs...), but each run is a thread on the server
(``langgraph.json`` serves the hosted systems, ``graph/served.py``), driven through
``langgraph-sdk``. A worker thread here follows the run's stream and MIRRORS it into the
local store exactly as a local run writes it (node updates keyed by task id, custom
events, whole states, the pending interrupts and the end), so the pages keep reading
the store. The server's workers do the work and bound how many runs go at once; this
process only waits on streams. The thread on the server has the run's id (as a UUID).
"""

from __future__ import annotations

import logging
import time
import typing
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Literal

import httpx
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from langgraph_sdk.errors import APIError, NotFoundError
from langgraph_sdk.schema import StreamMode, StreamPart
from pydantic import TypeAdapter, ValidationError

from graph.errors import StepwiseError
from graph.kernel.checkpoints import CONVERSATION_FIELDS, checkpoint_row, fork_point
from graph.kernel.design import Design
from graph.kernel.system import System, get_system
from graph.models.chat import describe_error
from graph.served import as_json, run_config
from graph.service import answered_elsewhere
from graph.service.run_service import RunService
from graph.service.runs import RunEvent, StopSignal, event_record, is_pseudo_node, update_key
from graph.service.server_client import sdk_client, sends_key_to
from graph.service.store import LIVE_STATUSES, SETTLED_STATUSES, TERMINAL_STATUSES, Store
from graph.service.webhooks import Webhooks
from graph.settings import Settings

log = logging.getLogger(__name__)

STREAM_MODES: list[StreamMode] = ["updates", "custom", "values", "tasks"]
_MESSAGE = TypeAdapter(AnyMessage)
_MESSAGE_TYPES = {"human", "ai", "tool", "system", "function", "chat", "remove"}


class ServerUnavailable(StepwiseError, ValueError):
    """The LangGraph Server cannot be reached or refused the request (one sentence)."""


def thread_of(run_id: str) -> str:
    """The server thread of a run: the run's id as a UUID (the server wants one)."""
    return str(uuid.UUID(run_id))


def namespace_of(event: str) -> str:
    """A stream event's subgraph path as a local run names it (``a:1/b:2``; "" for the top
    graph): the server sends ``updates|a:1|b:2``."""
    return "/".join(event.split("|")[1:])


def revive(value: Any) -> Any:
    """JSON from the server back into what a local run's stream holds: message dicts
    become messages (the pages' message records are made from them)."""
    if isinstance(value, list):
        return [revive(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") in _MESSAGE_TYPES and "content" in value:
            try:
                return _MESSAGE.validate_python(value)
            except ValueError:
                pass
        return {k: revive(v) for k, v in value.items()}
    return value


def revive_state(values: dict, schema: type | None) -> dict:
    """A whole state from the server, each field typed by the system's state schema where
    it can be (a bus's ``Message`` objects), else as ``revive`` makes it."""
    out = {k: revive(v) for k, v in (values or {}).items()}
    if schema is None:
        return out
    try:
        hints = typing.get_type_hints(schema, include_extras=True)
    except (NameError, TypeError) as exc:
        log.warning(
            "state schema %s has unreadable type hints (%s): values kept as data", schema, exc
        )
        return out
    for key, value in (values or {}).items():
        hint = hints.get(key)
        if hint is None or key == "messages" or value is None:
            continue
        try:
            out[key] = TypeAdapter(hint).validate_python(value)
        except (ValidationError, TypeError, ValueError) as exc:
            # a shape the schema does not take (a partial dict): keep it as data
            log.debug("state field %r kept as data: %s", key, exc)
    return out


@dataclass
class _Snap:
    """A server checkpoint shaped like LangGraph's ``StateSnapshot`` (what the pages and
    ``checkpoint_row`` read of one)."""

    values: dict
    next: tuple
    config: dict
    created_at: str | None
    tasks: tuple = ()
    interrupts: tuple = ()
    metadata: dict = field(default_factory=dict)


def _snap(state: dict, schema: type | None) -> _Snap:
    """A server's thread state (``threads.get_state`` / ``get_history``) as a ``_Snap``."""
    return _Snap(
        values=revive_state(state.get("values") or {}, schema),
        next=tuple(state.get("next") or ()),
        config={
            "configurable": {"checkpoint_id": (state.get("checkpoint") or {}).get("checkpoint_id")}
        },
        created_at=state.get("created_at"),
        tasks=tuple(
            SimpleNamespace(
                id=t.get("id"),
                name=t.get("name"),
                error=t.get("error"),
                result=t.get("result"),
                interrupts=tuple(
                    SimpleNamespace(id=i.get("id"), value=i.get("value"))
                    for i in t.get("interrupts") or []
                ),
            )
            for t in state.get("tasks") or []
        ),
        interrupts=tuple(
            SimpleNamespace(id=i.get("id"), value=i.get("value"))
            for i in state.get("interrupts") or []
        ),
        metadata=dict(state.get("metadata") or {}),
    )


class ServerGraph:
    """A design's compiled graph (for drawing it, its nodes and channels) whose
    checkpoints are read from the LangGraph Server: the pages read a run's state and
    history through ``get_state`` / ``get_state_history`` as they do locally."""

    def __init__(self, compiled: CompiledStateGraph, service: ServerRunService) -> None:
        self._compiled = compiled
        self._service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)

    def get_state(self, config: RunnableConfig, subgraphs: bool = False) -> _Snap:
        configurable = config.get("configurable") or {}
        return self._service.snapshot_of(
            configurable["thread_id"], configurable.get("checkpoint_id")
        )

    def get_state_history(self, config: RunnableConfig, **kwargs: Any) -> Iterator[_Snap]:
        return iter(self._service.history_of(config["configurable"]["thread_id"]))


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
        super().__init__(
            store,
            settings,
            max_workers=max_workers,
            timeout_tick_s=timeout_tick_s,
            claim_orphans=False,  # a run on the server outlives this process: follow it again
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
        self._server_runs: dict[str, str] = {}  # our run id -> the server's run in progress
        self.elsewhere_checked_at = 0.0  # answered_elsewhere.notice's last look
        if claim_orphans:
            self.followed_at_start = self._follow_again()

    # ------------------------------------------------------------- the server

    def _unavailable(self, exc: Exception) -> ServerUnavailable:
        return ServerUnavailable(
            f"The LangGraph Server at {self.url} did not answer ({type(exc).__name__}); "
            "nothing was lost: try again once it is up."
        )

    def _call(self, what: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One request to the server; ServerUnavailable (one sentence) when it is down."""
        try:
            return what(*args, **kwargs)
        except (httpx.TransportError, httpx.TimeoutException) as exc:
            raise self._unavailable(exc) from None

    def health(self) -> str:
        """ "" when the server answers, else the sentence the pages show."""
        try:
            reply = httpx.get(f"{self.url}/ok", timeout=2.0)
            reply.raise_for_status()
        except httpx.HTTPError as exc:
            return str(self._unavailable(exc))
        return ""

    def server_state(self, run_id: str, checkpoint_id: str | None = None) -> dict:
        """The server's state of the run's thread (at ``checkpoint_id``)."""
        try:
            return self._call(
                self.client.threads.get_state, thread_of(run_id), checkpoint_id=checkpoint_id
            )
        except NotFoundError:
            raise KeyError(f"No thread of run {run_id} on {self.url}.") from None

    def _schema(self, design: Design) -> type | None:
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

    def start(self, question: str, design: Design, *args: Any, **kwargs: Any) -> str:
        """``RunService.start``, refused in one sentence (nothing recorded, the question
        left with the caller) while the server does not answer."""
        if design.model is not None and design.model.replay_of:
            raise ValueError(
                "A replay answers from a recording kept by this app, so it runs in this app's "
                "process: runs on a LangGraph Server (STEPWISE_SERVER_URL) cannot be replayed."
            )
        problem = self.health()
        if problem:
            raise ServerUnavailable(problem)
        return super().start(question, design, *args, **kwargs)

    def _submit(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        pool: ThreadPoolExecutor | None = None,
    ) -> None:
        if compiled is not None and run_input is not None and not isinstance(run_input, Command):
            # A new run: its thread is created here, so a server that went down since
            # ``start`` asked says so to the caller (the run stays recorded, failed).
            try:
                self._call(
                    self.client.threads.create,
                    thread_id=thread_of(run_id),
                    graph_id=design.system,
                    metadata={"stepwise_run": run_id, "question": self._question(run_id)},
                    if_exists="do_nothing",
                )
            except ServerUnavailable as exc:
                self.store.set_run_status(run_id, "failed", str(exc))
                self._release(run_id)
                raise
        super()._submit(run_id, design, compiled, run_input, step_mode, pool=pool)

    def thread_of(self, run_id: str) -> str:
        """The run's thread on the server (a UUID made from its id)."""
        return thread_of(run_id)

    def _question(self, run_id: str) -> str:
        record = self.store.run(run_id)
        return record.question[:200] if record else ""

    def _work(
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
                self.store.set_run_status(run_id, "cancelled", "Cancelled before it started.")
                return
            self.store.set_run_status(run_id, "running")
            status, reason = self._mirror(run_id, design, run_input, step_mode, cancel)
            self._finish(run_id, status, reason)
        except Exception as exc:  # a run ends in words, never in a traceback
            try:
                reason = (
                    str(self._unavailable(exc))
                    if isinstance(exc, (httpx.TransportError, httpx.TimeoutException))
                    else describe_error(exc, self.settings)
                )
                self.store.set_run_status(run_id, "failed", reason)
            except Exception:
                log.exception("run %s failed (%s) and could not be marked so", run_id, exc)
        finally:
            with self._lock:
                entry = self._live.get(run_id)
                if entry is not None and entry[1] is cancel:
                    self._live.pop(run_id)
                    self._release(run_id)
                self._server_runs.pop(run_id, None)
            self._trace_out(run_id)

    def _finish(self, run_id: str, status: str, reason: str) -> None:
        record = self.store.run(run_id)
        if record is not None and record.status not in (*TERMINAL_STATUSES, *SETTLED_STATUSES):
            self.store.set_run_status(run_id, status, reason)
        if status == "waiting":  # its mirrored end event made it so: a human is asked
            self._tell_approval("waiting", run_id)

    def _stream(
        self, run_id: str, design: Design, run_input: Any, step_mode: bool, join: str | None
    ) -> Iterator[StreamPart]:
        thread = thread_of(run_id)
        if join:  # a run already on the server (this process restarted): follow it
            return self.streams.runs.join_stream(thread, join, stream_mode=STREAM_MODES)
        kwargs: dict[str, Any] = {}
        if isinstance(run_input, Command):
            kwargs["command"] = {
                key: as_json(value)
                for key, value in (
                    ("resume", run_input.resume),
                    ("update", run_input.update),
                    ("goto", run_input.goto or None),
                )
                if value is not None
            }
        elif run_input is not None:
            kwargs["input"] = as_json(run_input)
        interrupt: Literal["*"] | None = "*" if step_mode else None
        return self.streams.runs.stream(
            thread,
            design.system,
            config=run_config(design),
            metadata=self.run_metadata(run_id, design),  # for the server's LangSmith tracing
            stream_mode=STREAM_MODES,
            stream_subgraphs=True,
            interrupt_before=interrupt,
            multitask_strategy="reject",
            **kwargs,
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
        schema = self._schema(design)
        seq = self.store.latest_seq(run_id)
        state: dict = {}
        task_ids: dict[str, dict[str, list[str]]] = {}
        failure = ""

        def emit(kind: str, node: str, ns: str, data: Any, key: str | None = None) -> None:
            nonlocal seq
            seq += 1
            event = RunEvent(seq, time.time(), kind, node, ns, state.get("current_step"), data, key)
            self.store.append_event(run_id, event_record(event, design.system))

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
                            "url": self.url,
                            "thread_id": thread_of(run_id),
                            "run_id": server_run,
                        }
                    },
                )
                if cancel.is_set():
                    self._cancel_on_server(run_id)
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
        snap = self.server_state(run_id)
        values = revive_state(snap.get("values") or {}, schema) or state
        extra: dict = {}
        status, reason = "", ""
        if cancel.is_set():
            status, reason = "cancelled", "Cancelled by the user; everything so far is kept."
        elif failure:
            status, reason = "failed", self.settings.redact(f"The server run failed: {failure}")
        elif snap.get("interrupts"):
            pending = [
                {
                    "id": i["id"],
                    **(
                        i["value"]
                        if isinstance(i.get("value"), dict)
                        else {"value": i.get("value")}
                    ),
                }
                for i in snap["interrupts"]
            ]
            status = "waiting"
            reason = "Waiting for a human: " + "; ".join(
                f"step {p.get('step')} ({p.get('agent')}): {p.get('reason', '')}" for p in pending
            )
            extra["interrupts"] = pending
        elif snap.get("next"):
            status, reason = "paused", f"Paused before {', '.join(snap['next'])} (step mode)."
            extra["next"] = list(snap["next"])
        if not status:
            status = values.get("outcome") or "failed"
            reason = values.get("outcome_reason") or "The server run ended without an outcome."
        emit("end", "", "", {"status": status, "reason": reason, **extra})
        return status, reason

    def _follow_again(self) -> int:
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
                self._release(record.id)
                continue
            join = (
                runs[0]["run_id"] if runs and runs[0]["status"] in ("pending", "running") else None
            )
            cancel = StopSignal()
            with self._lock:
                future = self._executor.submit(self._rejoin, record.id, design, join, cancel)
                self._live[record.id] = (future, cancel)
            followed += 1
        return followed

    def _rejoin(self, run_id: str, design: Design, join: str | None, cancel: StopSignal) -> None:
        """Follow again a run whose process stopped: first the node updates the server
        finished meanwhile (from its checkpoints, keyed by task: stored once), then the
        stream from now on, or, if it has ended, its last state and its end."""
        try:
            graph = ServerGraph(self.prepare(design)[0], self)

            def reconcile() -> None:
                self._reconcile_events(run_id, design, graph)

            reconcile()
            if join:  # again at its end: it may have ended before the stream was joined
                status, reason = self._mirror(
                    run_id, design, None, False, cancel, join=join, before_end=reconcile
                )
            else:
                values = self.state(run_id)
                self._append(run_id, design, "state", values)
                status, reason = self._ending(
                    run_id,
                    design,
                    get_system(design.system),
                    values,
                    cancel,
                    "",
                    self._schema(design),
                    lambda kind, node, ns, data, key=None: self._append(run_id, design, kind, data),
                )
            self._finish(run_id, status, reason)
        except Exception as exc:
            log.warning("run %s interrupted: %r", run_id, exc, exc_info=exc)
            self.store.set_run_status(run_id, "interrupted", describe_error(exc, self.settings))
        finally:
            with self._lock:
                self._live.pop(run_id, None)
                self._release(run_id)

    def _append(self, run_id: str, design: Design, kind: str, data: Any) -> None:
        """One top-level event at the end of the run's log."""
        event = RunEvent(self.store.latest_seq(run_id) + 1, time.time(), kind, "", "", None, data)
        self.store.append_event(run_id, event_record(event, design.system))

    # ------------------------------------------------------------- control

    def _stop_lost(self, run_id: str) -> None:
        """A run lost to another app process is not stopped here: stopping would cancel
        it on the server, where it goes on for the process that holds it now."""

    def _cancel_on_server(self, run_id: str) -> None:
        with self._lock:
            server_run = self._server_runs.get(run_id)
        if server_run:
            try:
                self.client.runs.cancel(thread_of(run_id), server_run, action="interrupt")
            except (APIError, httpx.HTTPError):
                pass  # it ended meanwhile

    def cancel(self, run_id: str) -> bool:
        """Ask the server to stop the run (its checkpoints are kept); False if not live."""
        if not super().cancel(run_id):
            return False
        self._cancel_on_server(run_id)
        return True

    def pending_approvals(self) -> list[dict]:
        """As a local service's, after noticing the questions another client answered on
        the server (``answered_elsewhere``): those show as decided, their runs go on."""
        answered_elsewhere.notice(self)
        return super().pending_approvals()

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
        with self._decide_lock:
            record, design = self._stored(run_id)
            if record.status != "waiting" or interrupt_id not in self._pending_ids(run_id):
                raise ValueError("This approval is no longer pending (already answered?).")
            with self._holding(run_id):
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
                self._submit(run_id, design, None, Command(resume=resume), False)

    def resume(self, run_id: str, step_mode: bool = False) -> None:
        """Go on from the thread's last checkpoint on the server (a paused or cancelled run)."""
        record, design = self._stored(run_id)
        if self.is_live(run_id):
            raise ValueError("The run is already in progress.")
        if record.status not in ("interrupted", "paused", "failed", "cancelled", *LIVE_STATUSES):
            raise ValueError(f"A {record.status} run cannot be resumed.")
        with self._holding(run_id):
            if not self.server_state(run_id).get("next"):
                raise ValueError("Nothing left to run: the run reached its end.")
            self.store.set_run_status(run_id, "queued", "Resumed from its last checkpoint.")
            self._submit(run_id, design, None, None, step_mode)

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
        with self._decide_lock:
            if self.is_live(run_id):
                raise ValueError(
                    "The run is still going on the LangGraph Server: send this once it has "
                    "stopped (or stop it first)."
                )
            record, design = self._stored(run_id)
            compiled = compiled or self.prepare(design)[0]
            with self._holding(run_id):
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
                self._log(
                    run_id,
                    {"kind": "redirect", "goto": target, "note": note, "was_next": []},
                    step=(snapshot.values or {}).get("current_step"),
                )
                self.store.set_run_status(run_id, "queued", note or "Sent on.")
                self._submit(run_id, design, None, Command(update=changes, goto=target), False)

    # ------------------------------------------------------------- time travel

    def _history(self, run_id: str, design: Design) -> list[_Snap]:
        """The thread's checkpoints on the server, oldest first."""
        schema = self._schema(design)
        states = self._call(self.client.threads.get_history, thread_of(run_id), limit=1000)
        return [_snap(s, schema) for s in reversed(states)]

    def history_of(self, run_id: str) -> list[_Snap]:
        """The run's checkpoints on the server, newest first (as LangGraph lists them)."""
        _, design = self._stored(run_id)
        return list(reversed(self._history(run_id, design)))

    def snapshot_of(self, run_id: str, checkpoint_id: str | None = None) -> _Snap:
        """The run's state on the server (at ``checkpoint_id``), as a snapshot."""
        _, design = self._stored(run_id)
        return _snap(self.server_state(run_id, checkpoint_id), self._schema(design))

    def timeline(self, run_id: str, inner: bool = False) -> list[dict]:
        """Each checkpoint of the run's server thread, oldest first (top graph only)."""
        _, design = self._stored(run_id)
        fields = get_system(design.system).forks.timeline_fields
        shown = (*fields, *(f for f in CONVERSATION_FIELDS if f not in fields))
        snaps = self._history(run_id, design)
        rows: list[dict] = []
        previous: dict = {}
        for i in range(len(snaps)):
            row = checkpoint_row(snaps, i, shown, previous)
            row["index"] = i
            rows.append(row)
            previous = row["fields"]
        return rows

    def inner_checkpoints(self, run_id: str) -> list[dict]:
        return []  # a server thread's subgraph checkpoints are not listed here

    def state(self, run_id: str) -> dict:
        """The run's state now, from the server's last checkpoint of its thread."""
        _, design = self._stored(run_id)
        return revive_state(self.server_state(run_id).get("values") or {}, self._schema(design))

    def checkpoint(self, run_id: str) -> tuple[tuple[str, ...], dict]:
        """What runs next from the run's last checkpoint, and the state there."""
        snap = self.server_state(run_id)
        _, design = self._stored(run_id)
        return tuple(snap.get("next") or ()), revive_state(
            snap.get("values") or {}, self._schema(design)
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
        record, design = self._stored(run_id)
        if pace_s is not None:
            design = design.model_copy(update={"pace_s": pace_s})
        compiled, planner, worker = self.prepare(design)
        snaps = self._history(run_id, design)
        index, producer = fork_point(  # the same question a local fork asks
            snaps,
            checkpoint_id,
            run_id,
            lambda: self._first_written_as(run_id, lambda r: self._history(r, design)),
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
        self._call(
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
        self._submit(new_id, design, None, None, step_mode)
        return new_id

    def server_runs(self, run_id: str) -> list[dict]:
        """The runs the server lists on this run's thread (newest first)."""
        return self._call(self.client.runs.list, thread_of(run_id), limit=100)

    def delete(self, run_id: str) -> None:
        """Forget an ended run here and its thread on the server."""
        if self.is_live(run_id):
            raise ValueError("The run is still in progress; cancel it first.")
        self.store.delete_run(run_id)
        try:
            self.client.threads.delete(thread_of(run_id))
        except (APIError, httpx.HTTPError):
            pass  # gone already, or the server is down: the thread is only orphaned there


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
