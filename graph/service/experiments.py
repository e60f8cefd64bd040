"""Experiments: one eval set through two or more variants, compared on the runs.

A variant is a set of prompt texts (Planner and Executor versions together) on a model
(the one in use: the active model profile; or one picked by endpoint and name: two
prompts on one model, or one prompt on two models). Every
question x variant x repeat becomes an ordinary run through ``RunService.start`` (so
each one is in History and can be opened), on a pool of its own bounded by
``experiment_workers``, so an experiment never queues the runs people start by hand.
With ``STEPWISE_RUN_PROCESSES`` those runs' streams go to the run service's worker
processes (CPU-bound offline runs then use every core: ``bench/parallel_runs.py``).

What an experiment ran with is recorded in full: every prompt's text per variant (not
just the edits, so a later change to a default prompt file cannot change a rerun), the
design, and the public model settings; a rerun refuses to run on other model settings.

Who answers its runs' approvals is the experiment's choice (``APPROVALS``): by default
the experiment decides at once (read-only steps approved, side-effecting ones not
performed, recorded as such), so nothing waits; or a person decides (timeouts off), or
the design's own policy (its timeout and default). An experiment whose runs wait for a
person is "waiting", not done, until they are decided; its figures are always computed
from the runs as they are now.

Over 400 lines: an experiment's runner and its comparison share the record of what ran;
the statistics (intervals, verdicts, repeats needed) are in ``eval_statistics``, and the
comparison is the next part to move out.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from pydantic import BaseModel, Field, ValidationError, field_validator

from graph.errors import StepwiseError
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.choice import ModelChoice
from graph.models.replies import parse_json_object
from graph.prompts import PromptError, PromptSet, default_text, prompt_names
from graph.service import eval_statistics as stats
from graph.service.eval_sets import EvalSet
from graph.service.evals import RunResult, evaluate, run_passed
from graph.service.questions import checked_question
from graph.service.run_service import RunService
from graph.service.store import LIVE_STATUSES, ExperimentRecord, Store
from graph.settings import Settings

# Settings that change what a model answers; a rerun must match them. With the offline
# scripted model only the provider matters (it reads none of the others).
MODEL_SETTINGS = (
    "resolved_provider",
    "openai_base_url",
    "planner_model",
    "worker_model",
    "structured_output",
    "temperature",
)
# Runs that count in a comparison: they ended. Waiting for a person, cancelled (a
# stopped experiment), interrupted, still going, or deleted from History do not count.
COUNTED_STATUSES = ("done", "failed")
# Who answers the approvals an experiment's runs ask for, as the form offers it.
APPROVALS = {
    "auto": "Decide automatically: read-only steps approved, side-effecting steps not "
    "performed (nothing waits)",
    "human": "Ask a human: runs wait on the Approvals page until someone decides",
    "design": "The design's policy: as the Design page says, with its timeout and default",
}
METRICS = ("pass_rate", "steps", "replans", "llm_calls", "tokens", "cost", "latency_s")
RUN_METRICS = METRICS[1:]
HIGHER_IS_BETTER = frozenset({"pass_rate"})


class ExperimentError(StepwiseError, ValueError):
    """An experiment that cannot start or rerun; the message says why."""


class Variant(BaseModel):
    """A named set of prompt texts; prompts it does not name keep the design's text."""

    name: str = Field(min_length=1, max_length=80)
    prompts: dict[str, str] = Field(default_factory=dict)  # prompt name -> text
    versions: dict[str, int] = Field(default_factory=dict)  # prompt name -> stored version id
    model: ModelChoice | None = None  # None: the model settings in use

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a variant needs a name")
        return value.strip()

    @classmethod
    def from_versions(
        cls,
        store: Store,
        name: str,
        version_ids: Iterable[int],
        model: ModelChoice | None = None,
    ) -> Variant:
        """A variant from stored prompt versions (e.g. a Planner and an Executor version)."""
        prompts, versions = {}, {}
        for version_id in version_ids:
            version = store.prompt_version(int(version_id))
            if version is None:
                raise ExperimentError(f"No prompt version {version_id}.")
            if version.prompt_name in prompts:
                raise ExperimentError(
                    f"Variant {name!r} has two versions of {version.prompt_name}: pick one."
                )
            prompts[version.prompt_name] = version.text
            versions[version.prompt_name] = version.id
        return cls(name=name, prompts=prompts, versions=versions, model=model)


def full_prompt_texts(design: Design, variant: Variant) -> dict[str, str]:
    """Every prompt of the design's system as this variant runs it (validated)."""
    get_system(design.system)  # a system declares its prompts when imported
    names = prompt_names(design.system)
    if stray := sorted(set(variant.prompts) - set(names)):
        raise ExperimentError(
            f"Variant {variant.name!r} sets prompt(s) that {design.system} "
            f"does not use: {', '.join(stray)}."
        )
    base = {n: t for n, t in design.prompts.items() if n in names}
    try:
        texts = PromptSet({**base, **variant.prompts}).texts
    except PromptError as exc:
        raise ExperimentError(f"Variant {variant.name!r}: {exc}") from None
    return {n: texts[n] for n in names}


def run_design(
    design: Design,
    texts: dict[str, str],
    approvals: str = "auto",
    model: ModelChoice | None = None,
) -> Design:
    """The design a variant's runs use: its texts (only those that differ from the files,
    so the Run page shows real edits), its model, and who answers approvals: the
    experiment ("auto"), a person with no timeout ("human"), or the design ("design")."""
    overrides = {n: t for n, t in texts.items() if t != default_text(n)}
    update: dict = {"prompts": overrides, "model": model, "approvals_by": "human"}
    if approvals == "auto":
        update["approvals_by"] = "experiment"
    if approvals != "design":
        update["approval_timeout_s"] = 0.0
    return design.model_copy(update=update)


def model_settings_difference(recorded: dict, current: Settings) -> list[str]:
    """How the current model settings differ from recorded ones, in words; empty if not."""
    now = {**current.public_dict(), "resolved_provider": current.resolved_provider}
    keys: tuple[str, ...] = MODEL_SETTINGS
    if recorded.get("resolved_provider") == now["resolved_provider"] == "scripted":
        keys = ("resolved_provider",)
    return [
        f"{k} was {recorded.get(k)!r}, now {now.get(k)!r}"
        for k in keys
        if recorded.get(k) != now.get(k)
    ]


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


# --------------------------------------------------------------------------- comparison


def _mean(values: list) -> float | None:
    """Mean of known values; None when there are none or any is unknown (a cost)."""
    if not values or any(v is None for v in values):
        return None
    return statistics.fmean(values)


def _median(values: list) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return float(statistics.median(values))


def run_records(
    store: Store, experiment_id: str, prices: dict[str, tuple[float, float]] | None = None
) -> list[dict]:
    """One record per run of the experiment, with its figures and check results: the
    rows behind the comparison and the distribution charts."""
    record = store.experiment(experiment_id)
    if record is None:
        raise KeyError(f"No experiment {experiment_id!r}.")
    eval_set = EvalSet.model_validate(record.eval_set)
    records = []
    for row in store.experiment_runs(experiment_id):
        question = eval_set.questions[row["question_index"]]
        base = {
            "run_id": row["run_id"],
            "variant": row["variant"],
            "question_index": row["question_index"],
            "question": question.question,
            "repeat": row["repeat"],
            "status": row["status"] or "deleted",
        }
        if row["status"] is None:
            records.append(
                {
                    **base,
                    "counted": False,
                    "passed": None,
                    "checks": [],
                    **{m: None for m in RUN_METRICS},
                }
            )
            continue
        result = RunResult.from_store(store, row["run_id"], prices)
        checks = evaluate(question, result)
        records.append(
            {
                **base,
                "counted": result.status in COUNTED_STATUSES,
                "passed": run_passed(result, checks),
                "checks": [c.as_dict() for c in checks],
                "steps": result.steps,
                "replans": result.replans,
                "llm_calls": result.llm_calls,
                "input_tokens": result.input_tokens,
                "output_tokens": result.output_tokens,
                "tokens": result.tokens,
                "cost": result.cost,
                "unpriced": result.unpriced,
                "latency_s": result.duration_s,
                "final_answer": result.final_answer,
            }
        )
    return records


def distribution_records(
    store: Store, experiment_id: str, prices: dict[str, tuple[float, float]] | None = None
) -> list[dict]:
    """Long-form records for distribution charts (Altair box plots, strip plots): one
    per counted run and metric, ``{variant, question_index, question, repeat, run_id,
    metric, value}``; unknown values (an unpriced cost) are left out."""
    out = []
    for r in run_records(store, experiment_id, prices):
        if not r["counted"]:
            continue
        for metric in RUN_METRICS:
            if r[metric] is not None:
                out.append(
                    {k: r[k] for k in ("variant", "question_index", "question", "repeat", "run_id")}
                    | {"metric": metric, "value": float(r[metric])}
                )
    return out


def _aggregate(runs: list[dict], checks: int) -> dict:
    """Mean figures of one question's runs of one variant: the pass rate over the runs
    that ended, the run figures over the completed ones (ended done)."""
    counted = [r for r in runs if r["counted"]]
    completed = [r for r in counted if r["status"] == "done"]
    cell = {
        "runs": len(counted),
        "completed": len(completed),
        "not_counted": len(runs) - len(counted),
        "pass_rate": _mean([1.0 if r["passed"] else 0.0 for r in counted]),
        "checks": [
            _mean([1.0 if r["checks"][i]["passed"] else 0.0 for r in counted])
            for i in range(checks)
        ],
        "statuses": sorted({r["status"] for r in runs}),
    }
    for metric in RUN_METRICS:
        cell[metric] = _mean([r[metric] for r in completed])
    return cell


def _groups(records: list[dict], variant: str, metric: str, questions: int) -> list[list]:
    """A variant's values of a run figure, per question, from its completed runs."""
    groups: list[list] = [[] for _ in range(questions)]
    for r in records:
        if r["variant"] == variant and r["counted"] and r["status"] == "done":
            groups[r["question_index"]].append(r[metric])
    return groups


def _outcomes(records: list[dict], variant: str, question: int | None = None) -> list[bool]:
    return [
        bool(r["passed"])
        for r in records
        if r["variant"] == variant
        and r["counted"]
        and (question is None or r["question_index"] == question)
    ]


def _contrasts(records: list[dict], baseline: str, variant: str, questions: list[int]) -> dict:
    """Each metric of ``variant`` against ``baseline`` on these questions, with its
    interval and verdict (eval_statistics)."""
    count = max(questions, default=-1) + 1
    found = {
        "pass_rate": stats.rate_contrast(
            [o for q in questions for o in _outcomes(records, baseline, q)],
            [o for q in questions for o in _outcomes(records, variant, q)],
        )
    }
    for metric in RUN_METRICS:
        base = _groups(records, baseline, metric, count)
        mine = _groups(records, variant, metric, count)
        found[metric] = stats.figure_contrast(
            [base[q] for q in questions],
            [mine[q] for q in questions],
            higher_is_better=metric in HIGHER_IS_BETTER,
        )
    return found


@dataclass
class Comparison:
    """Plain lists and dicts, ready for tables and charts (no DataFrames here).

    ``rows``: one per question: ``{question_index, question, checks: [labels],
    variants: {name: {runs, completed, not_counted, pass_rate, checks: [pass rate per
    check], steps, replans, llm_calls, tokens, cost, latency_s, statuses}}, differences:
    {name: {metric: verdict}}, contrasts: {name: {metric: contrast}}}``: the pass rate
    over the runs that ended, run figures the mean over the completed runs (None when
    unknown). ``summary``: per variant ``{runs, completed, passed, pass_rate,
    pass_interval: [low, high], unpriced, <metric>: {mean, median, low, high, runs}}``.
    ``differences``: per non-baseline variant, each metric "better", "worse", "unclear"
    (the interval of the difference holds zero) or "unknown"; ``contrasts`` the same
    with the difference, its interval, the runs counted on each side and the repeats
    that would tell a difference of that size (``eval_statistics``). ``level``: the
    intervals' confidence level.
    """

    experiment_id: str
    name: str
    status: str
    baseline: str
    variants: list[str]
    progress: tuple[int, int]
    waiting: int = 0  # runs waiting for a person: not counted until decided
    rows: list[dict] = field(default_factory=list)
    summary: dict[str, dict] = field(default_factory=dict)
    differences: dict[str, dict[str, str]] = field(default_factory=dict)
    contrasts: dict[str, dict[str, dict]] = field(default_factory=dict)
    level: float = stats.LEVEL
    questions: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _summary(records: list[dict], variant: str, questions: int) -> dict:
    counted = [r for r in records if r["variant"] == variant and r["counted"]]
    completed = [r for r in counted if r["status"] == "done"]
    passed = sum(1 for r in counted if r["passed"])
    interval = stats.wilson(passed, len(counted))
    summary: dict[str, Any] = {
        "runs": len(counted),
        "completed": len(completed),
        "passed": passed,
        "pass_rate": _mean([1.0 if r["passed"] else 0.0 for r in counted]),
        "pass_interval": list(interval) if interval else None,
        "unpriced": sorted({m for r in counted for m in r.get("unpriced") or []}),
    }
    for metric in RUN_METRICS:
        values = [r[metric] for r in completed]
        groups = _groups(records, variant, metric, questions)
        found = None if any(v is None for v in values) else stats.mean_interval(groups)
        summary[metric] = {
            "mean": _mean(values),
            "median": _median(values),
            "low": found[1] if found else None,
            "high": found[2] if found else None,
            "runs": len(values),
        }
    return summary


def compare(
    store: Store,
    experiment_id: str,
    baseline: str,
    prices: dict[str, tuple[float, float]] | None = None,
) -> Comparison:
    """The experiment's figures per question and variant, a summary per variant, and
    each variant against ``baseline`` with intervals, from the runs as they are now. The
    pass rate counts the runs that ended (done, failed; a run passes when it ended done
    with every check passed); run figures count the completed runs (done) only, so a
    variant whose runs fail early is never better on steps or time."""
    finished, total, waiting = refresh_status(store, experiment_id)
    record = store.experiment(experiment_id)
    if record is None:
        raise KeyError(f"No experiment {experiment_id!r}.")
    variants = [v["name"] for v in record.variants]
    if baseline not in variants:
        raise ValueError(
            f"No variant {baseline!r} in this experiment; its variants: {', '.join(variants)}."
        )
    eval_set = EvalSet.model_validate(record.eval_set)
    records = run_records(store, experiment_id, prices)
    count = len(eval_set.questions)
    comparison = Comparison(
        experiment_id,
        record.name,
        record.status,
        baseline,
        variants,
        (finished, total),
        waiting,
        questions=count,
    )
    others = [v for v in variants if v != baseline]
    for index, question in enumerate(eval_set.questions):
        mine = [r for r in records if r["question_index"] == index]
        contrasts = {v: _contrasts(mine, baseline, v, [index]) for v in others}
        comparison.rows.append(
            {
                "question_index": index,
                "question": question.question,
                "checks": [c.label for c in question.checks],
                "variants": {
                    v: _aggregate([r for r in mine if r["variant"] == v], len(question.checks))
                    for v in variants
                },
                "contrasts": contrasts,
                "differences": {
                    v: {m: c["verdict"] for m, c in found.items()} for v, found in contrasts.items()
                },
            }
        )
    comparison.summary = {v: _summary(records, v, count) for v in variants}
    for v in others:
        found = _contrasts(records, baseline, v, list(range(count)))
        comparison.contrasts[v] = found
        comparison.differences[v] = {m: c["verdict"] for m, c in found.items()}
    return comparison


# --------------------------------------------------------------------------- two runs


def _run_view(store: Store, run_id: str) -> dict:
    record = store.run(run_id)
    if record is None:
        raise KeyError(f"No run {run_id!r}.")
    snapshot = store.snapshot(run_id) or {}
    system = get_system(record.design.get("system") or Design().system)
    decisions = []
    for message in store.messages(run_id, agent=system.shape.router) if system.shape.router else []:
        content = message.get("content") or ""
        try:
            parsed = parse_json_object(content)
        except ValueError:
            parsed = None
        decisions.append(
            {
                "step": message.get("step"),
                "content": content,
                "parsed": parsed if isinstance(parsed, dict) else None,
            }
        )
    return {
        "run_id": run_id,
        "question": record.question,
        "status": record.status,
        "reason": record.reason,
        "system": system.name,
        "router": system.shape.router,
        "snapshot": snapshot,
        "decisions": decisions,
        "human_decisions": [m.get("content") for m in store.messages(run_id, agent="human")],
        "answer": record.final_answer,
        "steps": record.counts.get("steps", 0),
        "replans": record.counts.get("replans", 0),
    }


def side_by_side(store: Store, run_a: str, run_b: str) -> dict:
    """Two runs next to each other: their snapshots (the pages show them as their system's
    panels), the decisions of its router node (parsed when they are JSON) and the answers.
    ``same_question`` says whether they are comparable as two runs of one question."""
    a, b = _run_view(store, run_a), _run_view(store, run_b)
    return {"same_question": a["question"] == b["question"], "a": a, "b": b}
