"""Runs outside the Streamlit script run: a process-wide pool of worker threads.

A click reruns the page script, which would kill a run living inside it; so runs live
here, in background threads that write every event to the store and never touch
Streamlit. Pages only start, cancel and read. All runs share one LangGraph
checkpointer (the state, for resume, replay and forks); the store holds what happened.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Callable

from langchain_core.language_models import BaseChatModel

from graph.design import Design
from graph.models import describe_error, model_label
from graph.plan_execute import build_graph
from graph.prompts import PromptSet
from graph.runs import event_record, open_checkpointer, run_question
from graph.settings import Settings, get_settings
from graph.store import TERMINAL_STATUSES, RunRecord, Store

ModelFactory = Callable[[str], BaseChatModel]


class RunService:
    """Starts runs in worker threads and tracks which are live in this process."""

    def __init__(self, store: Store, settings: Settings | None = None, max_workers: int = 4,
                 model_factory: ModelFactory | None = None):
        self.store = store
        self.settings = settings or get_settings()
        self.model_factory = model_factory
        # A run this process did not start cannot be live: its process is gone.
        self.interrupted_at_start = store.mark_interrupted()
        self.checkpointer = open_checkpointer(self.settings)
        self._executor = ThreadPoolExecutor(max_workers=max_workers,
                                            thread_name_prefix="stepwise-run")
        self._lock = threading.Lock()
        self._live: dict[str, tuple[Future, threading.Event]] = {}
        self._closed = False

    def _label(self, planner: BaseChatModel | None, worker: BaseChatModel | None) -> str:
        if planner is None:
            return self.settings.model_label
        names = {model_label(planner), model_label(worker)}
        return names.pop() if len(names) == 1 else (
            f"planner/executor {model_label(planner)}, workers {model_label(worker)}")

    def _recorded_versions(self, design: Design) -> dict[str, int]:
        """Which stored prompt versions this design's texts are (for comparing runs)."""
        return {name: version.id for name, version in self.store.active_prompts().items()
                if design.prompts.get(name) == version.text}

    def start(self, question: str, design: Design,
              prompt_versions: dict[str, int] | None = None) -> str:
        """Validate, build the graph here (a bad design fails in the caller, not in a
        worker), record the run as queued and hand it to a worker; returns the run id."""
        if self._closed:
            raise RuntimeError("The run service has been shut down.")
        question = (question or "").strip()
        if not question:
            raise ValueError("The question is empty: type a question to run.")
        PromptSet(design.prompts)  # PromptError naming the prompt and the problem
        planner = worker = None
        if self.model_factory is not None:
            planner, worker = self.model_factory("planner"), self.model_factory("worker")
        compiled = build_graph(design, settings=self.settings, checkpointer=self.checkpointer,
                               planner_model=planner, worker_model=worker)
        run_id = uuid.uuid4().hex
        versions = prompt_versions if prompt_versions is not None else self._recorded_versions(design)
        self.store.create_run(run_id, question, design, self._label(planner, worker),
                              prompt_versions=versions, settings=self.settings)
        cancel = threading.Event()
        with self._lock:
            future = self._executor.submit(self._work, run_id, question, design, compiled, cancel)
            self._live[run_id] = (future, cancel)
        return run_id

    def _work(self, run_id: str, question: str, design: Design, compiled, cancel: threading.Event) -> None:
        """The worker: never raises, never calls Streamlit; the store gets the outcome."""
        try:
            if cancel.is_set():
                self.store.set_run_status(run_id, "cancelled", "Cancelled before it started.")
                return
            self.store.set_run_status(run_id, "running")
            outcome = run_question(
                question, design, settings=self.settings, graph=compiled, thread_id=run_id,
                on_event=lambda event: self.store.append_event(run_id, event_record(event)),
                cancel=cancel)
            record = self.store.run(run_id)
            if record is not None and record.status not in TERMINAL_STATUSES:
                self.store.set_run_status(run_id, outcome.status, outcome.reason)
        except Exception as exc:  # a run ends in words, never in a traceback
            try:
                self.store.set_run_status(run_id, "failed", describe_error(exc, self.settings))
            except Exception:
                pass  # the store itself is gone; mark_interrupted will say so next start
        finally:
            with self._lock:
                self._live.pop(run_id, None)

    def cancel(self, run_id: str) -> bool:
        """Ask a live run to stop after the node in progress; False if it is not live."""
        with self._lock:
            entry = self._live.get(run_id)
        if entry is None:
            return False
        entry[1].set()
        return True

    def is_live(self, run_id: str) -> bool:
        with self._lock:
            return run_id in self._live

    def live_runs(self) -> list[str]:
        with self._lock:
            return list(self._live)

    def wait(self, run_id: str, timeout: float | None = None) -> RunRecord:
        """Block until the run has ended (TimeoutError if it has not within ``timeout``)."""
        with self._lock:
            entry = self._live.get(run_id)
        if entry is not None:
            try:
                entry[0].result(timeout=timeout)
            except FutureTimeout:
                raise TimeoutError(f"Run {run_id} still running after {timeout} s.") from None
        record = self.store.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        return record

    def delete(self, run_id: str) -> None:
        """Forget an ended run: its events and its checkpoints."""
        if self.is_live(run_id):
            raise ValueError("The run is still in progress; cancel it first.")
        self.store.delete_run(run_id)
        self.checkpointer.delete_thread(run_id)

    def shutdown(self, wait: bool = True, cancel: bool = True) -> None:
        """Stop taking runs; by default cancel the live ones (their progress is kept)."""
        self._closed = True
        if cancel:
            with self._lock:
                entries = list(self._live.values())
            for _, event in entries:
                event.set()
        self._executor.shutdown(wait=wait, cancel_futures=cancel)
        with self._lock:
            never_started = [rid for rid, (future, _) in self._live.items() if future.cancelled()]
            for run_id in never_started:
                self._live.pop(run_id)
        for run_id in never_started:
            self.store.set_run_status(run_id, "cancelled", "Cancelled before it started.")
        if wait:
            self.checkpointer.conn.close()
