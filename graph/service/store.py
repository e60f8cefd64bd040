"""Everything a user sees: designs, prompt versions, runs and their events, experiments,
eval sets, decisions, judgements, model modes.

In one SQLite file under ``STEPWISE_HOME`` by default, or in a PostgreSQL database shared
by several app processes when ``STEPWISE_DATABASE_URL`` is set: ``graph.service.database``
gives both one connection interface, so each method has one SQL text, and
``graph.service.schema`` migrates either on open. Pages read it while run workers write to
it, from other threads: one connection behind a lock. Nothing here holds an API key:
designs and settings are stored as their public, key-free forms.

``Store`` is the one object callers hold. The SQL lives in repositories, one per concern
(``graph.service.repositories``), over the store's one ``Database``; the methods below
hand each call to its repository, so callers written against them keep working while
they move to ``store.run_records.get(...)`` and the like.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterable

from graph.kernel.design import Design
from graph.redaction import redact_data
from graph.service.database import Database
from graph.service.database_choice import open_database
from graph.service.eval_sets import EvalSet
from graph.service.repositories.audit import Audit, design_changes
from graph.service.repositories.decisions import Decisions
from graph.service.repositories.designs import Designs
from graph.service.repositories.evals import Evals
from graph.service.repositories.events import Events
from graph.service.repositories.mcp_servers import McpServers
from graph.service.repositories.model_modes import ModelModes
from graph.service.repositories.runs import Runs
from graph.service.repositories.shared import (
    EXPORT_FORMAT,
    INTERRUPTED_REASON,
    LIVE_STATUSES,
    SETTLED_STATUSES,
    SHELVED_TEXT,
    STATUSES,
    TERMINAL_STATUSES,
    ExperimentRecord,
    PromptVersion,
    RunRecord,
)
from graph.service.repositories.user_agents import UserAgents
from graph.service.schema import MIGRATIONS, SCHEMA_VERSION
from graph.service.state_deltas import StateLog
from graph.settings import Settings, get_settings

__all__ = [
    "EXPORT_FORMAT",
    "FILE_NAME",
    "INTERRUPTED_REASON",
    "LIVE_STATUSES",
    "SCHEMA_VERSION",
    "SETTLED_STATUSES",
    "SHELVED_TEXT",
    "STATUSES",
    "TERMINAL_STATUSES",
    "ExperimentRecord",
    "PromptVersion",
    "RunRecord",
    "Store",
]

FILE_NAME = "stepwise.sqlite"


class Store:
    """The app's store. Thread-safe: every statement runs under the database's one
    re-entrant lock."""

    def __init__(self, path: Path | None = None, *, database: Database | None = None):
        """The store in the SQLite file ``path``, or in ``database`` (see ``open``);
        migrated to ``SCHEMA_VERSION`` first."""
        self._db = database if database is not None else open_database(path)
        self.path: Path | None = getattr(self._db, "path", None)  # None on PostgreSQL
        self._db.migrate(MIGRATIONS)
        states = StateLog()  # state events are stored as patches on the previous one
        self.designs = Designs(self._db)
        self.run_records = Runs(self._db, states)
        self.event_log = Events(self._db, states)
        self.evals = Evals(self._db)
        self.decisions = Decisions(self._db)
        self.audit = Audit(self._db)
        self.model_modes = ModelModes(self._db)
        self.mcp_servers = McpServers(self._db)
        self.user_agents = UserAgents(self._db)

    @classmethod
    def open(cls, settings: Settings | None = None) -> Store:
        """The store of ``settings``: the PostgreSQL database of ``STEPWISE_DATABASE_URL``
        when set, else the file under ``STEPWISE_HOME`` (the folder is created if missing).
        ``DatabaseUnavailable`` says in one sentence why PostgreSQL cannot be used."""
        settings = settings or get_settings()
        if settings.database_url is not None:
            return cls(database=open_database(url=settings.database_url.get_secret_value()))
        home = Path(settings.home)
        home.mkdir(parents=True, exist_ok=True)
        return cls(home / FILE_NAME)

    @property
    def location(self) -> str:
        """Where the store is, for people: the file, or the database URL without password."""
        return self._db.location

    @property
    def database(self) -> Database:
        """The connection, for the repositories of other tables (``model_profiles``)."""
        return self._db

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    def close(self) -> None:
        self._db.close()

    @property
    def schema_version(self) -> int:
        return self._query("SELECT MAX(version) FROM schema_version")[0][0]

    def _query(self, sql: str, params: Iterable = ()) -> list:
        return self._db.query(sql, params)

    def _write(self, sql: str, params: Iterable = ()) -> Any:  # the statement's cursor
        return self._db.execute(sql, params)

    # -- across repositories: a subclass that overrides one of the methods they call
    #    (tests count reads, or die mid-write) sees these calls too

    def append_event(self, run_id: str, record: dict) -> int:
        """Store one ``event_record``; returns the seq it was stored under (see
        ``Events.append``)."""
        return self.append_events(run_id, [record])[0]

    def export_run(self, run_id: str) -> dict:
        """A run as one JSON-safe dict: the record, the latest snapshot and every event."""
        record = self.run(run_id)
        if record is None:
            raise KeyError(f"No run {run_id!r}.")
        return redact_data(
            {
                "format": EXPORT_FORMAT,
                "schema_version": SCHEMA_VERSION,
                "exported_at": time.time(),
                "run": record.exported(),
                "snapshot": self.snapshot(run_id),
                "events": self.events(run_id),
            }
        )

    def import_run(self, data: dict) -> str:
        """Load an exported run (``Runs.add_exported``); its id."""
        return self.import_run_noting(data)[0]

    # -- designs and prompt versions (``Designs``)

    def save_design(self, design: Design, name: str = "current", by: str = "human") -> None:
        before = self.designs.load(name)
        self.designs.save(design, name)
        if changed := design_changes(before, design):
            self.audit.record(by, "design changed", name, changed)

    def load_design(self, name: str = "current") -> Design | None:
        return self.designs.load(name)

    def save_prompt_version(
        self, prompt_name: str, label: str, text: str, by: str = "human"
    ) -> PromptVersion:
        version = self.designs.save_prompt_version(prompt_name, label, text)
        self.audit.record(by, "prompt version saved", prompt_name, f"“{version.label}”")
        return version

    def prompt_versions(self, prompt_name: str) -> list[PromptVersion]:
        return self.designs.prompt_versions(prompt_name)

    def prompt_version(self, version_id: int) -> PromptVersion | None:
        return self.designs.prompt_version(version_id)

    def set_active_prompt(
        self, prompt_name: str, version_id: int | None, by: str = "human"
    ) -> None:
        self.designs.set_active_prompt(prompt_name, version_id)
        version = self.designs.prompt_version(version_id) if version_id is not None else None
        detail = f"“{version.label}”" if version else "the shipped default"
        self.audit.record(by, "prompt activated", prompt_name, detail)

    def active_prompts(self) -> dict[str, PromptVersion]:
        return self.designs.active_prompts()

    def active_prompt_texts(self) -> dict[str, str]:
        return self.designs.active_prompt_texts()

    # -- runs and their leases (``Runs``)

    def create_run(
        self,
        run_id: str,
        question: str,
        design: Design,
        model_label: str,
        prompt_versions: dict[str, int] | None = None,
        parent_run: str | None = None,
        parent_checkpoint: str | None = None,
        settings: Settings | None = None,
        owner: str | None = None,
        lease_s: float = 0.0,
    ) -> RunRecord:
        return self.run_records.create(
            run_id,
            question,
            design,
            model_label,
            prompt_versions,
            parent_run,
            parent_checkpoint,
            settings,
            owner,
            lease_s,
        )

    def set_run_status(
        self, run_id: str, status: str, reason: str = "", owner: str | None = None
    ) -> None:
        self.run_records.set_status(run_id, status, reason, owner)

    def run(self, run_id: str) -> RunRecord | None:
        return self.run_records.get(run_id)

    def runs(
        self,
        status: str | None = None,
        text: str | None = None,
        limit: int = 200,
        forks: bool = False,
    ) -> list[RunRecord]:
        return self.run_records.find(status, text, limit, forks)

    def count_runs(self, status: str) -> int:
        return self.run_records.count(status)

    def delete_run(self, run_id: str) -> None:
        self.run_records.delete(run_id)

    def mark_interrupted(self) -> int:
        return self.run_records.mark_interrupted()

    def import_run_noting(self, data: dict) -> tuple[str, list[str]]:
        return self.run_records.add_exported(data)

    def claim_run(self, run_id: str, owner: str, lease_s: float) -> bool:
        return self.run_records.claim(run_id, owner, lease_s)

    def renew_leases(self, owner: str, run_ids: Iterable[str], lease_s: float) -> int:
        return self.run_records.renew_leases(owner, run_ids, lease_s)

    def keep_leases(self, owner: str, run_ids: Iterable[str], lease_s: float) -> set[str]:
        return self.run_records.keep_leases(owner, run_ids, lease_s)

    def release_run(self, run_id: str, owner: str) -> None:
        self.run_records.release(run_id, owner)

    def lease_clock(self) -> float:
        return self.run_records.lease_clock()

    def run_lease(self, run_id: str) -> tuple[str | None, float | None]:
        return self.run_records.lease(run_id)

    # -- decisions and queued redirects (``Decisions``)

    def decisions_since(self, since: float) -> list[dict]:
        return self.decisions.since(since)

    def queue_redirect(self, run_id: str, spec: dict, note: str = "") -> int:
        return self.decisions.queue_redirect(run_id, spec, note)

    def queued_redirects(self, run_id: str) -> list[dict]:
        return self.decisions.queued_redirects(run_id)

    # -- the event log (``Events``)

    def append_events(
        self, run_id: str, records: list[dict], owner: str | None = None
    ) -> list[int]:
        return self.event_log.append(run_id, records, owner)

    def pending_interrupts(self, run_id: str) -> list[dict]:
        return self.event_log.pending_interrupts(run_id)

    def update_keys(self, run_id: str) -> set[str] | None:
        return self.event_log.update_keys(run_id)

    def latest_seq(self, run_id: str) -> int:
        return self.event_log.latest_seq(run_id)

    def events(
        self, run_id: str, after_seq: int = 0, kinds: tuple[str, ...] | None = None
    ) -> list[dict]:
        return self.event_log.read(run_id, after_seq, kinds)

    def idle_events(self, run_ids: list[str]) -> dict[str, list[dict]]:
        return self.event_log.idle(run_ids)

    def snapshot(self, run_id: str) -> dict | None:
        return self.event_log.snapshot(run_id)

    def messages(
        self, run_id: str, step: int | None = None, agent: str | None = None
    ) -> list[dict]:
        return self.event_log.messages(run_id, step, agent)

    def nodes_run(self, run_id: str) -> list[str]:
        return self.event_log.nodes_run(run_id)

    # -- eval sets, experiments, judgements (``Evals``)

    def save_eval_set(self, eval_set: EvalSet) -> None:
        self.evals.save_eval_set(eval_set)

    def eval_set_names(self) -> list[str]:
        return self.evals.eval_set_names()

    def load_eval_set(self, name: str) -> EvalSet | None:
        return self.evals.load_eval_set(name)

    def delete_eval_set(self, name: str) -> bool:
        return self.evals.delete_eval_set(name)

    def create_experiment(
        self,
        experiment_id: str,
        name: str,
        eval_set: EvalSet,
        variants: list[dict],
        repeats: int,
        max_workers: int,
        design: Design,
        settings: Settings,
        rerun_of: str | None = None,
        approvals: str = "human",
    ) -> ExperimentRecord:
        return self.evals.create_experiment(
            experiment_id,
            name,
            eval_set,
            variants,
            repeats,
            max_workers,
            design,
            settings,
            rerun_of,
            approvals,
        )

    def experiment(self, experiment_id: str) -> ExperimentRecord | None:
        return self.evals.experiment(experiment_id)

    def experiments(self, limit: int = 100) -> list[ExperimentRecord]:
        return self.evals.experiments(limit)

    def set_experiment_status(self, experiment_id: str, status: str) -> None:
        self.evals.set_experiment_status(experiment_id, status)

    def add_experiment_run(
        self, experiment_id: str, run_id: str, variant: str, question_index: int, repeat: int
    ) -> None:
        self.evals.add_experiment_run(experiment_id, run_id, variant, question_index, repeat)

    def experiment_runs(self, experiment_id: str) -> list[dict]:
        return self.evals.experiment_runs(experiment_id)

    def save_judgement(self, run_id: str, model_label: str, scores: dict) -> None:
        self.evals.save_judgement(run_id, model_label, scores)

    def judgement(self, run_id: str) -> dict | None:
        return self.evals.judgement(run_id)

    def create_judge_job(self, job_id: str, experiment_id: str | None, total: int) -> None:
        self.evals.create_judge_job(job_id, experiment_id, total)

    def judge_job(self, job_id: str) -> dict | None:
        return self.evals.judge_job(job_id)

    def latest_judge_job(self, experiment_id: str) -> dict | None:
        return self.evals.latest_judge_job(experiment_id)

    # -- model servers (``ModelModes``)

    def load_model_modes(self) -> dict[tuple[str, str], dict]:
        return self.model_modes.load()

    def save_model_modes(self, server: str, model: str, modes: dict) -> None:
        self.model_modes.save(server, model, modes)
