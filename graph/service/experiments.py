"""Running experiments: one eval set through two or more variants
(``experiment_variants``), every question x variant x repeat an ordinary run.

Every run goes through ``RunService.start`` (so each one is in History and can be
opened), on a pool of its own bounded by ``experiment_workers``, so an experiment never
queues the runs people start by hand. With ``STEPWISE_RUN_PROCESSES`` those runs' streams
go to the run service's worker processes (CPU-bound offline runs then use every core:
``bench/parallel_runs.py``).

An experiment whose runs wait for a person is "waiting", not done, until they are
decided (``refresh_status``); its figures (``experiment_comparison``) are always computed
from the runs as they are now.
"""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from pydantic import ValidationError

from graph.kernel.design import Design
from graph.service.eval_sets import EvalSet
from graph.service.experiment_variants import (
    APPROVALS,
    ExperimentError,
    Variant,
    full_prompt_texts,
    model_settings_difference,
    run_design,
)
from graph.service.questions import checked_question
from graph.service.run_service import RunService
from graph.service.store import LIVE_STATUSES, ExperimentRecord, Store


class ExperimentRunner:
    """Starts, watches, stops and reruns experiments on a run service (one runner per
    service: ``ExperimentRunner.of(service)``)."""

    _runners: "weakref.WeakKeyDictionary[RunService, ExperimentRunner]" = (
        weakref.WeakKeyDictionary()
    )
    _runners_lock = threading.Lock()

    @classmethod
    def of(cls, service: RunService) -> ExperimentRunner:
        with cls._runners_lock:
            if service not in cls._runners:
                cls._runners[service] = cls(service)
            return cls._runners[service]

    def __init__(self, service: RunService):
        self.service = service
        self._lock = threading.Lock()
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._stopping: set[str] = set()
        service.on_shutdown(self.shutdown)

    @property
    def store(self) -> Store:
        return self.service.store

    def start(
        self,
        name: str,
        eval_set: EvalSet,
        variants: Sequence[Variant | dict],
        repeats: int = 1,
        design: Design | None = None,
        max_workers: int | None = None,
        rerun_of: str | None = None,
        approvals: str = "auto",
    ) -> str:
        """Record the experiment and queue all its runs; returns at once with its id.
        ``approvals``: a key of ``APPROVALS``. Bad input (no variants, duplicate names, a
        broken prompt) fails here, before any run is made."""
        try:
            checked = [v if isinstance(v, Variant) else Variant.model_validate(v) for v in variants]
        except ValidationError as exc:
            raise ExperimentError(f"Bad variant: {exc.errors()[0]['msg']}.") from None
        if not checked:
            raise ExperimentError("Pick at least one variant (two or more to compare).")
        if len({v.name for v in checked}) != len(checked):
            raise ExperimentError("Two variants have the same name; name each differently.")
        if approvals not in APPROVALS:
            raise ExperimentError(
                f"Approvals must be one of: {', '.join(APPROVALS)} (not {approvals!r})."
            )
        if not isinstance(repeats, int) or not 1 <= repeats <= 100:
            raise ExperimentError("Repeats must be a whole number from 1 to 100.")
        max_workers = int(max_workers or self.service.settings.experiment_workers)
        if max_workers < 1:
            raise ExperimentError("At least one worker is needed.")
        for number, item in enumerate(eval_set.questions, start=1):
            try:  # refused here: past the cap, no run of the experiment could start
                checked_question(item.question, self.service.settings)
            except ValueError as exc:
                raise ExperimentError(f"Question {number} of the eval set: {exc}") from None
        design = design or Design()
        if approvals != "design":
            design = design.model_copy(update={"approval_timeout_s": 0.0})
        texts = {v.name: full_prompt_texts(design, v) for v in checked}
        # "The model in use" is the active model profile, pinned now for all its runs.
        designs = {
            v.name: self.service.with_active_model(
                run_design(design, texts[v.name], approvals, v.model)
            )
            for v in checked
        }
        for variant_name, variant_design in designs.items():
            if variant_design.model is not None and (problem := variant_design.model.key_problem()):
                raise ExperimentError(f"Variant {variant_name!r}: {problem}")
        prepared = {name: self.service.prepare(d) for name, d in designs.items()}

        experiment_id = uuid.uuid4().hex
        recorded = [
            {
                "name": v.name,
                "prompts": texts[v.name],
                "versions": v.versions,
                "model": v.model.model_dump() if v.model else None,
            }
            for v in checked
        ]
        self.store.create_experiment(
            experiment_id,
            (name or "").strip() or eval_set.name,
            eval_set,
            recorded,
            repeats,
            max_workers,
            design,
            self.service.model_settings(),
            rerun_of=rerun_of,
            approvals=approvals,
        )
        pool = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix=f"stepwise-experiment-{experiment_id[:6]}"
        )
        with self._lock:
            self._pools[experiment_id] = pool
        try:
            # Repeat-major, then question, then variant: a stopped experiment still has
            # every variant on the questions it reached.
            for repeat in range(repeats):
                for index, question in enumerate(eval_set.questions):
                    for variant in checked:
                        if experiment_id in self._stopping:
                            return experiment_id
                        run_id = self.service.start(
                            question.question,
                            designs[variant.name],
                            prompt_versions=variant.versions or None,
                            pool=pool,
                            prepared=prepared[variant.name],
                        )
                        self.store.add_experiment_run(
                            experiment_id, run_id, variant.name, index, repeat
                        )
        except Exception:
            self.store.set_experiment_status(experiment_id, "stopped")
            raise
        finally:
            pool.shutdown(wait=False)  # its threads end once the queued runs have run
        return experiment_id

    def _record(self, experiment_id: str) -> ExperimentRecord:
        record = self.store.experiment(experiment_id)
        if record is None:
            raise KeyError(f"No experiment {experiment_id!r}.")
        return record

    def progress(self, experiment_id: str) -> tuple[int, int]:
        """(runs finished, runs in all); a run waiting for a person has not finished. Brings
        the experiment's status up to date (see ``refresh_status``)."""
        finished, total, _ = refresh_status(self.store, experiment_id)
        if finished >= total:
            with self._lock:
                self._pools.pop(experiment_id, None)
        return finished, total

    def is_finished(self, experiment_id: str) -> bool:
        done, total = self.progress(experiment_id)
        return done >= total

    def is_settled(self, experiment_id: str) -> bool:
        """Every run has finished or waits for a person: nothing more happens unasked."""
        finished, total, waiting = refresh_status(self.store, experiment_id)
        return finished + waiting >= total

    def wait(
        self, experiment_id: str, timeout: float | None = None, poll_s: float = 0.05
    ) -> ExperimentRecord:
        """Block until every run has finished or waits for a person; TimeoutError else."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_settled(experiment_id):
            if deadline is not None and time.monotonic() > deadline:
                done, total = self.progress(experiment_id)
                raise TimeoutError(
                    f"Experiment {experiment_id} has {done} of {total} runs "
                    f"finished after {timeout} s."
                )
            time.sleep(poll_s)
        return self._record(experiment_id)

    def stop(self, experiment_id: str) -> int:
        """Cancel the queued and live runs (a live one stops after its current node);
        waiting runs stay waiting. Returns how many runs were cancelled."""
        record = self._record(experiment_id)
        self._stopping.add(experiment_id)
        if record.status in ("running", "waiting"):
            self.store.set_experiment_status(experiment_id, "stopped")
        return sum(
            1 for r in self.store.experiment_runs(experiment_id) if self.service.cancel(r["run_id"])
        )

    def rerun(self, experiment_id: str, max_workers: int | None = None) -> str:
        """A new experiment with exactly the recorded prompt texts, design, eval set and
        repeats; refused when the model settings now differ from the recorded ones."""
        record = self._record(experiment_id)
        on_settings = any(not v.get("model") for v in record.variants)
        if on_settings and (
            difference := model_settings_difference(record.settings, self.service.model_settings())
        ):
            raise ExperimentError(
                f"Cannot rerun {record.name!r} as it ran: the model settings differ from the "
                f"recorded ones ({'; '.join(difference)}). Make the model profile it ran on "
                "active again (Model page), or start a new experiment."
            )
        try:
            design = Design.model_validate(record.design)
            eval_set = EvalSet.model_validate(record.eval_set)
        except ValidationError as exc:
            raise ExperimentError(
                f"The recorded experiment no longer validates: {exc.errors()[0]['msg']}."
            ) from None
        variants = [
            Variant(
                name=v["name"],
                prompts=v["prompts"],
                versions=v.get("versions") or {},
                model=v.get("model"),
            )
            for v in record.variants
        ]
        return self.start(
            f"{record.name} (rerun)",
            eval_set,
            variants,
            record.repeats,
            design,
            max_workers or record.max_workers,
            rerun_of=experiment_id,
            approvals=record.approvals,
        )

    def shutdown(self, wait: bool = True, cancel: bool = True) -> None:
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.shutdown(wait=wait, cancel_futures=cancel)


def refresh_status(store: Store, experiment_id: str) -> tuple[int, int, int]:
    """(runs finished, runs in all, runs waiting for a person), with the stored status
    brought up to date: "running" while a run is live or queued, "waiting" when the rest
    wait for a person, "done" only when every run has finished (a decision taken later
    turns a waiting experiment back to running, then done). A stopped one stays stopped."""
    record = store.experiment(experiment_id)
    if record is None:
        raise KeyError(f"No experiment {experiment_id!r}.")
    runs = store.experiment_runs(experiment_id)
    waiting = sum(1 for r in runs if r["status"] == "waiting")
    finished = sum(1 for r in runs if r["status"] not in (*LIVE_STATUSES, "waiting"))
    total = len(runs) if record.status == "stopped" else record.total
    if record.status != "stopped":
        status = (
            "done"
            if finished >= total
            else "waiting"
            if waiting and finished + waiting >= total
            else "running"
        )
        if status != record.status:
            store.set_experiment_status(experiment_id, status)
    return finished, total, waiting


def status_words(status: str, waiting: int) -> str:
    """An experiment's status as the page says it."""
    if status == "waiting":
        return f"waiting ({waiting} run{'s' if waiting != 1 else ''} wait for a decision)"
    if waiting:
        return f"{status} ({waiting} run{'s' if waiting != 1 else ''} wait for a decision)"
    return status
