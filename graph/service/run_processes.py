"""Runs on worker processes: CPU-bound runs (the offline scripted model) in parallel.

In one process the GIL lets only one run compute at a time, so 20 offline runs on
threads take as long as one after another. With ``STEPWISE_RUN_PROCESSES`` set, the run
service hands each run's stream to one of that many worker processes (fresh
interpreters, talking over a socket pair), each holding its own store connection, checkpointer and compiled graphs on the same
``STEPWISE_HOME`` (SQLite in WAL mode takes several processes). Everything else stays in
the owning process: the run's record, its lease (renewed there while the run is live),
approvals, redirects and the final status. A worker only drives the stream and writes
the run's events, as a worker thread does.

A run that never waits (the offline model answering at once) is pure computing: it gets
a worker to itself and the others queue in the owner for the next free one, so each
core runs one at full speed. Runs that wait on a model share the workers freely.

Stop reaches the run through the worker's socket; a worker that dies fails its runs'
streams at once in the owner, which marks them interrupted and lets go of them, so they
can be resumed from their last checkpoint. A worker whose owner dies sees its socket
close and exits: the owner's lease then runs out and another app process may take the run
over, never two running it. Settings go to a worker over its socket, never through a
file or the command line: the API keys in them are never written to disk.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import Future
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any, NamedTuple

from graph.errors import StepwiseError
from graph.kernel.design import Design
from graph.models.keys import typed_keys
from graph.settings import REPO_ROOT, Settings

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from graph.service.run_controls import StopSignal

# How long a worker may take to end on its own at shutdown before it is terminated.
STOP_GRACE_S = 10.0


class WorkerDied(StepwiseError, RuntimeError):
    """The worker process running a run's stream stopped (killed, out of memory)."""


class RunFailed(StepwiseError, RuntimeError):
    """A run's stream failed in its worker; the message is already in words."""


class Ended(NamedTuple):
    """How a stream driven in a worker ended (as ``RunOutcome`` says it)."""

    status: str
    reason: str


class _Worker:
    """One worker process seen from the owner: its socket and the streams it runs.

    A fresh interpreter (not ``multiprocessing``'s spawn, which re-imports the owner's
    main script: Streamlit's, a test's) that imports only this module; the settings
    are its first message."""

    def __init__(self, settings: Settings):
        mine, theirs = socket.socketpair()
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p
            ),
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"from graph.service.run_worker import worker_main; worker_main({theirs.fileno()})",
            ],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()  # only the worker holds its end: it sees EOF when we die
        self.conn = Connection(mine.detach())
        self.send_lock = threading.Lock()
        self.jobs: dict[int, Future] = {}
        self.alone: set[int] = set()  # its jobs that compute without pause (``run(alone=)``)
        self.send(("settings", settings))

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: tuple) -> None:
        with self.send_lock:
            self.conn.send(message)


class RunProcesses:
    """The owner's side of ``processes`` worker processes: ``run`` blocks (in the run
    service's worker thread) while a worker drives one run's stream."""

    def __init__(self, settings: Settings, processes: int):
        if processes < 1:
            raise ValueError("At least one worker process is needed.")
        self.settings = settings.model_copy(update={"run_processes": 0})  # no pools in pools
        self.size = processes
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)  # a job ended: a worker may be free
        self._workers: list[_Worker] = []
        self._ids = itertools.count(1)
        self._closed = False
        with self._lock:
            for _ in range(processes):
                self._workers.append(_Worker(self.settings))
        threading.Thread(target=self._read, name="stepwise-run-workers", daemon=True).start()

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests, benches and the status line)."""
        with self._lock:
            return [w.pid for w in self._workers]

    def _take(
        self, job: int, done: Future, alone: bool, cancel: threading.Event | None
    ) -> _Worker | None:
        """Give ``job`` to the worker with the fewest streams (a dead one is replaced
        first), under the lock a dead worker's streams are failed with. A job ``alone``
        waits for a worker running no other such job; None if ``cancel`` is set first."""
        with self._lock:
            while True:
                if self._closed:
                    raise RuntimeError("The run service has been shut down.")
                self._workers = [w for w in self._workers if w.alive() or w.jobs]
                while len(self._workers) < self.size:
                    self._workers.append(_Worker(self.settings))
                live = [w for w in self._workers if w.alive()] or self._workers
                if alone:
                    live = [w for w in live if not w.alone]
                if live:
                    break
                if cancel is not None and cancel.is_set():
                    return None
                self._freed.wait(0.2)
            worker = min(live, key=lambda w: len(w.jobs))
            worker.jobs[job] = done
            if alone:
                worker.alone.add(job)
            return worker

    def _ended(self, worker: _Worker, job: int) -> Future | None:
        """``job`` is over on ``worker``: its future, and its place free for the next."""
        with self._lock:
            worker.alone.discard(job)
            self._freed.notify_all()
            return worker.jobs.pop(job, None)

    def run(
        self,
        run_id: str,
        design: Design,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
        *,
        alone: bool = False,
        owner: str | None = None,
    ) -> Ended:
        """Drive the run's stream in a worker; (status, reason) as ``continue_run`` ends.
        ``cancel`` (a ``StopSignal``) set now or later stops it there. Raises
        ``WorkerDied`` when the worker stops first, ``RunFailed`` when the stream failed.

        ``alone``: the run computes without pause (its model answers at once), so it
        waits here until a worker runs no other such run: one per core computes at full
        speed, where ten sharing a worker would take turns on its GIL and its writes.
        Runs that wait on a model share workers freely. ``owner``: the lease holder the
        worker writes as (its writes stop when the holder has lost the run)."""
        job, done = next(self._ids), Future[Any]()
        worker = self._take(job, done, alone, cancel)
        if worker is None:
            return Ended("cancelled", "Cancelled before it started.")
        try:
            if design.model is not None and design.model.key_from == "typed":
                # a key typed in the browser: over the socket, into the worker's memory only
                key = typed_keys().get(design.model.profile)
                if key:
                    worker.send(("key", design.model.profile, key))
            worker.send(("run", job, run_id, design.model_dump_json(), run_input, step_mode, owner))
        except Exception as exc:
            self._ended(worker, job)
            if isinstance(exc, (OSError, ValueError)):  # its socket is closed: it died
                raise WorkerDied(f"Its worker process could not take the run ({exc}).") from exc
            raise  # the run's input does not pickle: the run fails saying why

        def forward(redirecting: bool) -> None:
            try:
                worker.send(("stop", job, redirecting))
            except (OSError, ValueError):
                pass  # the worker is gone: its death ends the run anyway

        cancel.forward = forward
        if cancel.is_set():  # set before ``forward`` was in place
            forward(cancel.redirecting)
        try:
            return done.result()
        finally:
            cancel.forward = None

    def _read(self) -> None:
        """The owner's reader: results from the workers' pipes; a closed pipe (a dead
        worker) fails the streams it was running."""
        while True:
            with self._lock:
                workers = {w.conn: w for w in self._workers}
                if self._closed and not workers:
                    return
            if not workers:
                threading.Event().wait(0.2)
                continue
            for conn in wait(list(workers), timeout=0.2):
                assert isinstance(conn, Connection)  # only the workers' are waited on
                worker = workers[conn]
                try:
                    kind, job, *rest = conn.recv()
                except (EOFError, OSError):
                    self._buried(worker)
                    continue
                done = self._ended(worker, job)
                if done is None:
                    continue
                if kind == "ended":
                    done.set_result(Ended(*rest))
                else:
                    done.set_exception(RunFailed(rest[0]))

    def _buried(self, worker: _Worker) -> None:
        try:
            code = worker.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        with self._lock:
            jobs, worker.jobs = worker.jobs, {}
            worker.alone.clear()
            if worker in self._workers:
                self._workers.remove(worker)
            self._freed.notify_all()
        for done in jobs.values():
            done.set_exception(
                WorkerDied(
                    f"Its worker process (pid {worker.pid}) stopped"
                    + (f" (exit code {code})" if code is not None else "")
                    + "; resume goes on from its last checkpoint."
                )
            )
        worker.conn.close()

    def shutdown(self, wait: bool = True) -> None:
        """Ask the workers to end (their streams have been stopped by then, when the run
        service cancels); with ``wait``, terminate those still there after a grace."""
        with self._lock:
            self._closed = True
            self._freed.notify_all()  # runs waiting for a worker: refused now
            workers = list(self._workers)
        for worker in workers:
            try:
                worker.send(("exit",))
            except (OSError, ValueError):
                pass
        if not wait:
            return
        for worker in workers:
            try:
                worker.process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                worker.process.terminate()
                worker.process.wait(timeout=5)
