"""Judging many runs in the background: a judge call takes seconds per run, so a batch
runs on a thread the run service owns (never in a page's script), and its progress is
recorded in the store, where the Evals page reads it as it does an experiment's.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor

from graph.service.evals import judge_run
from graph.service.run_service import RunService
from graph.settings import Settings

log = logging.getLogger(__name__)


def plain_reason(exc: Exception) -> str:
    """Why a run could not be judged, in words (the judge's own errors already are)."""
    said = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # no repr quotes
    text = str(said).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


class JudgeJobs:
    """Starts judge jobs on one background thread per run service
    (``JudgeJobs.of(service)``): jobs queue behind each other, runs keep their workers."""

    _jobs: "weakref.WeakKeyDictionary[RunService, JudgeJobs]" = weakref.WeakKeyDictionary()
    _jobs_lock = threading.Lock()

    @classmethod
    def of(cls, service: RunService) -> JudgeJobs:
        with cls._jobs_lock:
            if service not in cls._jobs:
                cls._jobs[service] = cls(service)
            return cls._jobs[service]

    def __init__(self, service: RunService):
        self.service = service
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stepwise-judge")
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._open_jobs: set[str] = set()  # queued or judging, in this process
        service.on_shutdown(self.shutdown)

    def start(
        self, run_ids: list[str], experiment_id: str | None = None, settings: Settings | None = None
    ) -> str:
        """Record a job judging ``run_ids`` and queue it; returns its id at once. An
        experiment's job still going is returned instead of a second one."""
        store = self.service.store
        with self._lock:
            if experiment_id and (job := store.latest_judge_job(experiment_id)):
                if job["status"] == "running" and job["id"] in self._open_jobs:
                    return job["id"]
            job_id = uuid.uuid4().hex
            store.create_judge_job(job_id, experiment_id, len(run_ids))
            self._open_jobs.add(job_id)
        self._pool.submit(
            self._judge, job_id, list(run_ids), settings or self.service.model_settings()
        )
        return job_id

    def _judge(self, job_id: str, run_ids: list[str], settings: Settings) -> None:
        store = self.service.store
        judged = failed = 0
        error = ""
        for run_id in run_ids:
            if self._closed.is_set():
                return  # shutdown marks it stopped
            try:
                judge_run(store, run_id, settings=settings)
                judged += 1
            except Exception as exc:  # a server that is down, a reply that is no JSON
                log.warning("judging run %s failed: %r", run_id, exc)
                failed += 1
                error = plain_reason(exc)
            with self._lock:  # after a shutdown, the job stays recorded as stopped
                if self._closed.is_set():
                    return
                store.evals.update_judge_job(job_id, judged, failed, error)
        with self._lock:
            if self._closed.is_set():
                return
            self._open_jobs.discard(job_id)
            store.evals.update_judge_job(
                job_id, judged, failed, error, "done" if judged else "failed"
            )

    def owns(self, job_id: str) -> bool:
        """Whether this process is judging (or about to judge) the job. A job the store
        says is running but no one owns was cut off by a killed process."""
        with self._lock:
            return job_id in self._open_jobs

    def wait(self, job_id: str, timeout: float = 60.0) -> dict:
        """Block until a job has ended (for the command line and tests); its record."""
        deadline = time.time() + timeout
        while True:
            job = self.service.store.judge_job(job_id)
            if job is None:
                raise LookupError(f"There is no judge job {job_id!r}.")
            if job["status"] != "running":
                break
            if time.time() > deadline:
                raise TimeoutError(f"judge job {job_id} still running after {timeout} s")
            time.sleep(0.05)
        return job

    def shutdown(self, wait: bool = False, cancel: bool = True) -> None:
        """Stop judging with the run service; unfinished jobs are recorded as stopped."""
        with self._lock:
            self._closed.set()
        self._pool.shutdown(wait=wait, cancel_futures=cancel)
        store = self.service.store
        with self._lock:
            for job_id in self._open_jobs:
                if job := store.judge_job(job_id):
                    store.evals.update_judge_job(
                        job_id,
                        job["judged"],
                        job["failed"],
                        "The app stopped before every run was judged.",
                        "stopped",
                    )
            self._open_jobs.clear()
