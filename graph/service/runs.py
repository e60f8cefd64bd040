"""Running a question through a design and turning the stream into events.

This is the one place that drives a compiled graph: the command line, the app's run
service and the benchmarks all call ``run_question``. It streams node updates and
full states (node updates only when no callback reads them), hands each event to a
callback (print it, store it), and always ends with an outcome in words: done, failed
(and why) or cancelled, with the state as far as it got. LangGraph's quiet endings (a
route to a missing node, the recursion limit) are turned into failures that say so. What
it reports is in ``run_records.py``, what stops it from outside in ``run_controls.py``,
where runs are kept in ``run_storage.py``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any, Callable, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphDrained, GraphRecursionError
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import RunControl
from langgraph.types import Checkpointer, Durability

from graph.kernel.accounting import UsageRecorder, calls_logged
from graph.kernel.approval import AUTOMATIC
from graph.kernel.design import Design, limit_words, node_run_limit
from graph.kernel.system import get_system
from graph.logs import run_context
from graph.models.chat import describe_error
from graph.service.disk_space import disk_full, run_cut_off_reason
from graph.service.pace import InnerPace, hold_pace
from graph.service.postgres_database import database_lost, database_lost_reason
from graph.service.run_controls import NodeGuard, StopSignal
from graph.service.run_records import Row, RunEvent, RunOutcome, is_pseudo_node, update_key
from graph.service.run_storage import database_url, store_location
from graph.settings import Settings, get_settings
from graph.stopping import Stopped, stoppable

log = logging.getLogger(__name__)

# The longest an event waits to share one store transaction with the events after it
# (the Run page reads new events every 0.5 s).
EVENT_LINGER_S = 0.2


def _repeat(every_s: float, action: Callable[[], None], name: str) -> Callable[[], None]:
    """Call ``action`` every ``every_s`` seconds on a daemon thread; returns what stops it
    (and waits for a call under way)."""
    done = threading.Event()

    def loop() -> None:
        while not done.wait(every_s):
            action()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()

    def stop() -> None:
        done.set()
        thread.join()

    return stop


def run_question(
    question: str,
    design: Design | None = None,
    *,
    settings: Settings | None = None,
    checkpointer: Checkpointer = None,
    graph: CompiledStateGraph | None = None,
    thread_id: str | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    cancel: threading.Event | None = None,
    step_mode: bool = False,
) -> RunOutcome:
    """Run ``question`` until it ends, waits for a human, or (step mode) pauses; never
    raises for what went wrong inside the run."""
    design = design or Design()
    question = question.strip()
    if not question:
        raise ValueError("The question is empty.")
    system = get_system(design.system)
    graph = graph or system.build_graph(design, settings=settings, checkpointer=checkpointer)
    return continue_run(
        graph,
        system.initial_state(question, design),
        thread_id or uuid.uuid4().hex,
        design,
        settings=settings,
        on_event=on_event,
        cancel=cancel,
        step_mode=step_mode,
    )


def _stored_unless_full(deliver: Callable[[], None], thread_id: str) -> bool:
    """Deliver a run's last events; True when the disk was too full to store them (the
    run's status, written from the store's reserve, then says why)."""
    try:
        deliver()
    except Exception as exc:
        if not disk_full(exc):
            raise
        log.warning("Run %s: its last events not stored, the disk is full (%s).", thread_id, exc)
        return True
    return False


def continue_run(
    graph: CompiledStateGraph,
    run_input: Any,
    thread_id: str,
    design: Design,
    *,
    settings: Settings | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    cancel: threading.Event | None = None,
    step_mode: bool = False,
    first_seq: int = 0,
    durability: Durability = "async",
    on_events: Callable[[list[RunEvent]], None] | None = None,
    before_node: Callable[[], None] | None = None,
    metadata: dict[str, Any] | None = None,
) -> RunOutcome:
    """Drive a run: ``run_input`` is the initial state, a ``Command(resume=...)`` with a
    human's decision, or None to go on from the last checkpoint (resume after a crash,
    next step in step mode). ``durability``: LangGraph's; "sync" saves each checkpoint
    before the next step starts, on the stream's own thread.

    Events go to ``on_event`` one by one, or to ``on_events`` in batches a store writes in
    one transaction (each SQLite call mid-run hands the interpreter to the run's other
    threads: per event, that cost more than the write). Node updates, states, tool
    timings and streamed custom events wait at most ``EVENT_LINGER_S`` for company; a
    model call (a crash must not lose a call that happened) and the end are handed over
    at once, with whatever waits before them: a superstep's updates and state go with
    the next superstep's first model call (half the transactions of handing each state
    over at once). A paced run hands each update and state over before its pause.

    ``before_node`` is called as each node starts (inner ones too); what it raises fails
    the node before it does anything (a run whose process lost its lease).

    ``metadata`` goes into the run's config (with tags naming Stepwise and the system), as
    LangChain's tracers read it: a run traced to LangSmith carries Stepwise's run id,
    system and prompt versions (``run_metadata``).

    Log records made while the run is driven name ``thread_id`` (the run's id)."""
    with run_context(thread_id):
        return _drive(
            graph,
            run_input,
            thread_id,
            design,
            settings=settings or get_settings(),
            on_event=on_event,
            cancel=cancel,
            step_mode=step_mode,
            first_seq=first_seq,
            durability=durability,
            on_events=on_events,
            before_node=before_node,
            metadata=metadata,
        )


def run_metadata(run_id: str, system: str, prompt_versions: dict[str, int]) -> dict[str, Any]:
    """What a run's config says of it to LangChain's tracers (LangSmith's metadata)."""
    return {
        "stepwise_run_id": run_id,
        "stepwise_system": system,
        "stepwise_prompt_versions": dict(sorted(prompt_versions.items())),
    }


def _drive(
    graph: CompiledStateGraph,
    run_input: Any,
    thread_id: str,
    design: Design,
    *,
    settings: Settings,
    on_event: Callable[[RunEvent], None] | None,
    cancel: threading.Event | None,
    step_mode: bool,
    first_seq: int,
    durability: Durability,
    on_events: Callable[[list[RunEvent]], None] | None,
    before_node: Callable[[], None] | None,
    metadata: dict[str, Any] | None,
) -> RunOutcome:
    started = time.time()
    seq = first_seq
    state: dict = {}
    nodes_run = 0
    status, reason = "", ""
    cut_off = False  # its database went away: nothing more can be read from it
    full = False  # the disk holding its records is full: nothing more can be written
    extra: dict = {}
    emitting = threading.Lock()  # model calls report from the nodes' threads
    # The ids of the tasks each namespace is running, by node name, from the "tasks"
    # stream: an update is keyed by its task's id, so a replayed one is stored once.
    task_ids: dict[str, dict[str, list[str]]] = {}

    held: list[RunEvent] = []  # events waiting to be handed over together

    def emit(
        kind: str, node: str, namespace: str, data: Any, key: str | None = None, hold: bool = False
    ) -> None:
        nonlocal seq
        with emitting:
            seq += 1
            if on_event or on_events:
                step = state.get("current_step")
                held.append(RunEvent(seq, time.time(), kind, node, namespace, step, data, key))
                if not hold:
                    hand_over()

    def hand_over() -> None:
        """Deliver the held events (called with ``emitting`` held); an event leaves
        ``held`` only once delivered, so one that could not be is tried again."""
        if on_events is not None:
            if held:
                on_events(held[:])
                held.clear()
        elif on_event is not None:
            while held:
                on_event(held[0])
                del held[0]

    def flush_held() -> None:
        with emitting:
            try:
                hand_over()
            except Exception as exc:  # kept: the run's next state, call or end tries again
                log.warning("held run events not stored yet, kept for the next try: %s", exc)

    def task_key(namespace: str, node: str) -> str | None:
        # Tasks of one name in one superstep (a fan-out) take the ids in start order as
        # they finish; a replay of their saved writes takes them in the same order.
        ids = task_ids.get(namespace, {}).get(node)
        return update_key(ids.pop(0)) if ids else None

    # Nodes inside a subgraph are held on their own threads (the stream loop holds the rest).
    inner_pace = (
        InnerPace(
            design.pace_s,
            frozenset(name for name, _ in graph.get_subgraphs()),
            cancel,
            lambda ns, data: emit("custom", "", ns, data),
        )
        if design.pace_s
        else None
    )
    # What may wait for company (``EVENT_LINGER_S``): every event but a model call and the
    # end, unless the run is paced (each update and state shown before its pause).
    hold = not design.pace_s
    # Nobody reads the events (no callback, no pace): only node updates are streamed (the
    # node count), the usage handler only for the debug log; the end state is read from
    # the checkpoint.
    watched = bool(on_event or on_events or inner_pace or not graph.checkpointer)
    usage = UsageRecorder(
        on_call=lambda call, ns: emit("custom", "", ns, {"llm_call": call}),
        on_tool=lambda timing, ns: emit("custom", "", ns, {"tool_call": timing}, hold=hold),
    )
    configurable: dict = {"thread_id": thread_id}
    if design.approvals_by == "experiment":  # the gate answers without a person
        agents = get_system(design.system).agents
        configurable[AUTOMATIC] = sorted(a for a, spec in agents.items() if spec.side_effects)
    config: RunnableConfig = {
        "configurable": configurable,
        "recursion_limit": node_run_limit(design),
        "metadata": {"stepwise_system": design.system, **(metadata or {})},
        "tags": ["stepwise", design.system],
        # Every model call becomes an llm_call event, logged as the call ends: before the
        # node's writes can be checkpointed, so a crash cannot lose a call that happened.
        # Each tool run's latency becomes a tool_call event, which waits for company.
        "callbacks": [
            *([usage] if watched or calls_logged() else []),
            *([NodeGuard(before_node)] if before_node is not None else []),
            *([inner_pace] if inner_pace is not None else []),
        ],
    }

    control = RunControl()
    if isinstance(cancel, StopSignal):
        cancel.control = control
    if cancel is not None and cancel.is_set():
        control.request_drain("cancel")
    stop_flusher = (
        _repeat(EVENT_LINGER_S, flush_held, f"{threading.current_thread().name}:events")
        if on_event or on_events
        else lambda: None
    )
    try:
        with stoppable(cancel):  # Stop reaches model calls and queries in flight
            stream = graph.stream(
                run_input,
                config,
                stream_mode=["updates", "custom", "values", "tasks"] if watched else ["updates"],
                subgraphs=watched,
                interrupt_before="*" if step_mode else None,
                control=control,
                # (LangGraph warns when there is no checkpointer to be durable with.)
                durability=durability if graph.checkpointer else None,
            )
            for part in stream:
                # LangGraph types a v1 stream's parts loosely; with subgraphs and several
                # modes each is (namespace, mode, chunk).
                namespace, mode, chunk = cast(
                    tuple[tuple[str, ...], str, Any], part if watched else ((), *part)
                )
                ns = "/".join(namespace)
                if mode == "values":
                    if not namespace:
                        state = chunk
                        emit("state", "", "", chunk, hold=hold)
                    continue
                if mode == "tasks":
                    if isinstance(chunk, dict) and "triggers" in chunk:  # a task starts
                        task_ids.setdefault(ns, {}).setdefault(chunk["name"], []).append(
                            chunk["id"]
                        )
                    continue
                if mode == "custom":
                    emit("custom", "", ns, chunk, hold=hold)
                else:
                    ran = False  # an interrupt alone (step mode's pause) is no node run
                    for node, update in (chunk or {}).items():
                        if is_pseudo_node(node):
                            continue  # an interrupt is read from the checkpoint below
                        if not namespace:
                            nodes_run += 1
                            ran = True
                        emit("update", node, ns, update, task_key(ns, node), hold=hold)
                        if namespace and inner_pace is not None:
                            inner_pace.shown(ns)
                    if ran and design.pace_s:
                        hold_pace(design.pace_s, cancel, lambda s: emit("custom", "", "", s))
                if cancel is not None and cancel.is_set():
                    control.request_drain("cancel")  # a plain Event cannot ask by itself
    except (GraphDrained, Stopped) as exc:
        if isinstance(exc, Stopped) or not getattr(cancel, "redirecting", False):
            status, reason = "cancelled", "Cancelled by the user; everything so far is kept."
        else:
            status, reason = "redirected", "Stopped to go on elsewhere."
    except GraphRecursionError:
        status = "failed"
        reason = (
            f"Stopped at the recursion limit ({limit_words(design)}) after "
            f"{nodes_run} node run(s); the partial results are kept. Raise the limit or "
            "lower max replans."
        )
    except Exception as exc:  # a run ends in words, never in a traceback
        status, reason = "failed", describe_error(exc, settings)
        if cut_off := database_lost(exc):  # cut off, not wrong: resumable like a crash
            log.warning("Run %s cut off: its database went away (%r).", thread_id, exc)
            status, reason = "interrupted", database_lost_reason(database_url(settings))
        elif full := disk_full(exc):  # cut off too: resumable once there is room
            log.warning("Run %s cut off: the disk holding the store is full (%r).", thread_id, exc)
            status, reason = "interrupted", run_cut_off_reason(store_location(settings))
        else:
            log.debug("the run failed on this exception", exc_info=True)  # its end says why
    finally:
        stop_flusher()
    with emitting:
        full = _stored_unless_full(hand_over, thread_id) or full

    if graph.checkpointer is not None and not cut_off:
        snapshot = graph.get_state(config)
        state = dict(snapshot.values) or state
        if not status and snapshot.interrupts:
            pending = [
                {"id": i.id, **(i.value if isinstance(i.value, dict) else {"value": i.value})}
                for i in snapshot.interrupts
            ]
            status = "waiting"
            reason = "Waiting for a human: " + "; ".join(
                f"step {p.get('step')} ({p.get('agent')}): {p.get('reason', '')}" for p in pending
            )
            extra["interrupts"] = pending
        elif not status and snapshot.next:
            status, reason = "paused", f"Paused before {', '.join(snapshot.next)} (step mode)."
            extra["next"] = list(snapshot.next)
    if not status:
        status = state.get("outcome") or "failed"
        reason = state.get("outcome_reason") or (
            "The run stopped without reaching an end: LangGraph ended it after a route it "
            "could not follow."
        )
    if status != "redirected" and not full:  # a redirected run goes on at once
        _stored_unless_full(
            lambda: emit("end", "", "", {"status": status, "reason": reason, **extra}), thread_id
        )
    log.info("run %s after %d node run(s): %s", status, nodes_run, reason or "-")
    return RunOutcome(
        thread_id,
        status,
        reason,
        state,
        seq,
        time.time() - started,
        nodes_run,
        [Row(r) for r in get_system(design.system).snapshot(state)["rows"]],
        extra.get("interrupts", []),
    )
