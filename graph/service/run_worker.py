"""A worker process's side of ``graph/service/run_processes.py``: drive the streams the
owning app process sends over its socket, with a run service of its own.

Apart from ``run_processes`` (which only starts this module in a fresh interpreter, by
name) so that the owner's side never imports the run service that uses it: the run
service imports ``run_processes``; this module imports the run service.
"""

from __future__ import annotations

import logging
import os
import threading
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from graph.kernel.design import Design
from graph.logs import configure_logging
from graph.models.keys import put_typed_key
from graph.redaction import remember_secrets
from graph.service.run_processes import STOP_GRACE_S
from graph.settings import Settings
from graph.stopping import Stopped

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from graph.service.run_service import RunService

log = logging.getLogger(__name__)


def worker_service(settings: Settings) -> RunService:
    """The run service a worker process drives its streams with.

    Its checkpoints are saved on the stream's thread before the next step ("sync"): saved
    on a second thread, as by default, a write held the checkpoint file's lock (shared
    with the other workers) while this process's node thread had the GIL and the core,
    and the other workers waited (bench/parallel_runs.py: the lock held twice as long)."""
    # Imported here, once the worker's settings (its home) are in place.
    from graph.service.run_service import RunService
    from graph.service.store import Store

    return RunService(
        Store.open(settings), settings, timeout_tick_s=0, claim_orphans=False, durability="sync"
    )


def worker_main(fd: int) -> None:
    """A worker process: drive the streams the owner sends on socket ``fd``, each on a
    thread of its own (the owner bounds how many), until told to exit or the owner's
    socket closes."""
    conn = Connection(fd)
    try:
        _, settings = conn.recv()
    except (EOFError, OSError):
        return
    # Tools that read the process-wide settings (the stock database) find the same home;
    # the keys are taken out of any text stored here, as in the owner (unpickled settings
    # skip their validators).
    os.environ["STEPWISE_HOME"] = str(settings.home)
    remember_secrets(settings.secret_values())
    configure_logging(settings.log_level)
    from graph.service.run_controls import StopSignal

    service = worker_service(settings)
    send_lock = threading.Lock()
    signals: dict[int, StopSignal] = {}

    def reply(message: tuple) -> None:
        with send_lock:
            conn.send(message)

    def compiled_for(design: Design) -> CompiledStateGraph:
        # one compiled graph per design serves all its runs: the service keeps it
        # (graph.service.run_models)
        return service.prepare(design)[0]

    def drive(
        job: int, run_id: str, design_json: str, run_input: Any, step_mode: bool, owner: str | None
    ) -> None:
        service.leases.hold(run_id, owner)  # written as the owner, while it holds the run
        try:
            design = Design.model_validate_json(design_json)
            outcome = service.continue_here(
                run_id,
                design,
                compiled_for(design),
                run_input,
                step_mode,
                signals[job],
            )
            reply(("ended", job, outcome.status, outcome.reason))
        except Stopped as exc:
            reply(("ended", job, "cancelled", str(exc)))
        except Exception as exc:  # a run ends in words, never in a traceback
            from graph.models.chat import describe_error
            from graph.service.disk_space import disk_full, run_cut_off_reason
            from graph.service.postgres_database import database_lost, database_lost_reason
            from graph.service.run_storage import database_url, store_location

            log.warning("Run %s ended in its worker process: %r", run_id, exc, exc_info=exc)
            if database_lost(exc):  # cut off, as a crash: the owner marks it interrupted
                reply(("ended", job, "interrupted", database_lost_reason(database_url(settings))))
            elif disk_full(exc):
                reply(("ended", job, "interrupted", run_cut_off_reason(store_location(settings))))
            else:
                reply(("failed", job, describe_error(exc, settings)))
        finally:
            signals.pop(job, None)
            service.leases.let_go(run_id)

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(0)  # the owner is gone: its runs must not go on without its lease
        kind = message[0]
        if kind == "exit":
            break
        if kind == "run":
            _, job, run_id, design_json, run_input, step_mode, owner = message
            signals[job] = StopSignal()
            threading.Thread(
                target=drive,
                args=(job, run_id, design_json, run_input, step_mode, owner),
                name=f"stepwise-stream-{run_id[:8]}",
                daemon=True,
            ).start()
        elif kind == "key":
            _, profile, key = message
            put_typed_key(profile, key)
        elif kind == "stop":
            _, job, redirecting = message
            signal = signals.get(job)
            if signal is not None:
                signal.redirecting = redirecting
                signal.set()
    for signal in list(signals.values()):  # exit: stop what still runs, keep its progress
        signal.set()
    for thread in threading.enumerate():
        if thread.name.startswith("stepwise-stream-") and thread is not threading.current_thread():
            thread.join(timeout=STOP_GRACE_S)
    service.shutdown(wait=True, cancel=True)
    service.store.close()
    conn.close()
    os._exit(0)  # all written and closed: skip the slow teardown of the imported libraries
