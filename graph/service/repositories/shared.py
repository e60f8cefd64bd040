"""What every repository of the store shares: the records pages read, the run statuses,
the run columns, and the lease fence a write of another table may need."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from graph.service.database import Transaction
from graph.service.import_checks import shown_object
from graph.service.leases import LeaseLost

STATUSES = ("queued", "running", "waiting", "paused", "done", "failed", "cancelled", "interrupted")
LIVE_STATUSES = ("queued", "running")
# Stopped on purpose, safe in the checkpointer, going on when someone acts: waiting for
# a human's decision, or paused between nodes in step mode. A restart leaves them be.
SETTLED_STATUSES = ("waiting", "paused")
TERMINAL_STATUSES = ("done", "failed", "cancelled", "interrupted")
SHELVED_TEXT = 4096  # characters: a text this long is stored once, not in every event
INTERRUPTED_REASON = "The app stopped while this run was in progress."
EXPORT_FORMAT = "stepwise-run"

RUN_COLUMNS = (
    "id, question, system, design_json, prompt_versions_json, settings_json, status, "
    "reason, model_label, created_at, started_at, finished_at, final_answer, "
    "counts_json, parent_run, parent_checkpoint"
)

# A run nobody holds: no owner, or its owner stopped renewing (the one parameter: now).
LEASE_FREE = "(owner IS NULL OR lease_until IS NULL OR lease_until < ?)"


@dataclass
class PromptVersion:
    id: int
    prompt_name: str
    label: str
    text: str
    created_at: float


@dataclass
class RunRecord:
    id: str
    question: str
    system: str
    design: dict
    prompt_versions: dict
    status: str
    reason: str
    model_label: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    final_answer: str | None
    counts: dict[str, int]  # as its system counts (System.counts): {"steps": 3, ...}
    parent_run: str | None
    parent_checkpoint: str | None
    # The run's settings (Settings.public_dict(): no secrets) as stored, decoded when
    # ``settings`` is read: a listing (History's 200 runs, the Run page's 50) read every
    # run's ~100 values to show none of them, a page's largest passing allocation (issue 33).
    settings_json: str | None = None

    @property
    def settings(self) -> dict:
        """The settings the run was made with, {} when none were stored or they do not
        read as an object (decoded at each read: a caller keeps what it needs)."""
        return shown_object(self.settings_json)

    def exported(self) -> dict:
        """The record as a run export holds it: its fields, the settings decoded."""
        fields = asdict(self)
        fields["settings"] = shown_object(fields.pop("settings_json"))
        return fields

    @property
    def duration_s(self) -> float | None:
        """Wall time from start to finish, or so far while it runs; None before it starts."""
        if self.started_at is None:
            return None
        end = (
            self.finished_at
            if self.finished_at is not None
            else (time.time() if self.status in LIVE_STATUSES else None)
        )
        return None if end is None else max(0.0, end - self.started_at)

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_STATUSES


@dataclass
class ExperimentRecord:
    """An experiment as recorded: what it ran with, so a rerun can run exactly that."""

    id: str
    name: str
    eval_set: dict  # EvalSet.model_dump()
    variants: list[dict]  # [{name, prompts: every prompt's full text, versions}]
    repeats: int
    max_workers: int
    design: dict
    settings: dict  # Settings.public_dict() plus resolved_provider: no secrets
    status: str  # running / waiting (runs wait for a person) / done / stopped
    created_at: float
    finished_at: float | None
    rerun_of: str | None
    approvals: str = "human"  # auto: decided by the experiment; human; design: its policy

    @property
    def total(self) -> int:
        """How many runs the experiment makes: questions x variants x repeats."""
        return len(self.eval_set.get("questions") or []) * len(self.variants) * self.repeats


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# The statement that fences a write: it matches the run's row only while ``owner`` holds
# it, and keeps the row locked until the commit (``fence``; the event log adds a RETURNING).
FENCE_SQL = "UPDATE runs SET owner = owner WHERE id = ? AND owner = ?"


def fence(tx: Transaction, run_id: str, owner: str) -> None:
    """Go on with this transaction only while ``owner`` holds the run; the row stays
    locked until the commit, so no other process claims it in between. Here, not with
    the leases, because the event log's writes need it too."""
    if tx.execute(FENCE_SQL, (run_id, owner)).rowcount == 0:
        refuse_unheld(tx, run_id)


def refuse_unheld(tx: Transaction, run_id: str) -> None:
    """After ``FENCE_SQL`` matched no row: ``LeaseLost`` when the run is there (another
    holds it); nothing when it is not (a run that is not there is fenced by nobody)."""
    if tx.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
        raise LeaseLost(run_id)
