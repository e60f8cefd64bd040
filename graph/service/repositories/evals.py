"""Eval sets, the experiments run over them, and the judge's scores of their runs."""

from __future__ import annotations

import json
import time
from typing import Any, Iterable

from graph.kernel.design import Design
from graph.service.database import Database
from graph.service.eval_sets import EvalSet
from graph.service.repositories.shared import ExperimentRecord, dumps
from graph.settings import Settings


class Evals:
    """Eval sets, experiments and their runs, judgements and judge jobs."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- eval sets

    def save_eval_set(self, eval_set: EvalSet) -> None:
        """Store (or replace) an eval set under its name."""
        self.db.execute(
            "INSERT INTO eval_sets (name, eval_set_json, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET eval_set_json = excluded.eval_set_json, "
            "updated_at = excluded.updated_at",
            (eval_set.name, eval_set.model_dump_json(), time.time()),
        )

    def eval_set_names(self) -> list[str]:
        return [r["name"] for r in self.db.query("SELECT name FROM eval_sets ORDER BY name")]

    def load_eval_set(self, name: str) -> EvalSet | None:
        rows = self.db.query("SELECT eval_set_json FROM eval_sets WHERE name = ?", (name,))
        return EvalSet.model_validate_json(rows[0]["eval_set_json"]) if rows else None

    def delete_eval_set(self, name: str) -> bool:
        return self.db.execute("DELETE FROM eval_sets WHERE name = ?", (name,)).rowcount > 0

    # -- experiments

    @staticmethod
    def _experiment(row: Any) -> ExperimentRecord:
        return ExperimentRecord(
            id=row["id"],
            name=row["name"],
            eval_set=json.loads(row["eval_set_json"]),
            variants=json.loads(row["variants_json"]),
            repeats=row["repeats"],
            max_workers=row["max_workers"],
            design=json.loads(row["design_json"]),
            settings=json.loads(row["settings_json"]),
            status=row["status"],
            created_at=row["created_at"],
            finished_at=row["finished_at"],
            rerun_of=row["rerun_of"],
            approvals=row["approvals"] or "human",
        )

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
        """Record an experiment before its runs start; settings in their public form plus
        the provider they resolve to (never a key)."""
        public = {**settings.public_dict(), "resolved_provider": settings.resolved_provider}
        self.db.execute(
            "INSERT INTO experiments (id, name, eval_set_json, variants_json, repeats, "
            "max_workers, design_json, settings_json, status, created_at, finished_at, "
            "rerun_of, approvals) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, NULL, ?, ?)",
            (
                experiment_id,
                name,
                eval_set.model_dump_json(),
                dumps(variants),
                int(repeats),
                int(max_workers),
                design.model_dump_json(),
                dumps(public),
                time.time(),
                rerun_of,
                approvals,
            ),
        )
        found = self.experiment(experiment_id)
        assert found is not None  # written above
        return found

    def experiment(self, experiment_id: str) -> ExperimentRecord | None:
        rows = self.db.query("SELECT * FROM experiments WHERE id = ?", (experiment_id,))
        return self._experiment(rows[0]) if rows else None

    def experiments(self, limit: int = 100) -> list[ExperimentRecord]:
        """Newest first."""
        rows = self.db.query(
            "SELECT * FROM experiments ORDER BY created_at DESC, rowid DESC LIMIT ?", (int(limit),)
        )
        return [self._experiment(r) for r in rows]

    def set_experiment_status(self, experiment_id: str, status: str) -> None:
        finished = None if status in ("running", "waiting") else time.time()
        self.db.execute(
            "UPDATE experiments SET status = ?, finished_at = ? WHERE id = ?",
            (status, finished, experiment_id),
        )

    def add_experiment_run(
        self, experiment_id: str, run_id: str, variant: str, question_index: int, repeat: int
    ) -> None:
        self.db.execute(
            "INSERT INTO experiment_runs (experiment_id, run_id, variant, "
            "question_index, repeat) VALUES (?, ?, ?, ?, ?)",
            (experiment_id, run_id, variant, int(question_index), int(repeat)),
        )

    def experiment_runs(self, experiment_id: str) -> list[dict]:
        """The experiment's runs in the order they were started, each with its run's
        status (None when the run was deleted from History)."""
        rows = self.db.query(
            "SELECT e.run_id, e.variant, e.question_index, e.repeat, r.status FROM "
            "experiment_runs e LEFT JOIN runs r ON r.id = e.run_id WHERE e.experiment_id = ? "
            "ORDER BY e.rowid",
            (experiment_id,),
        )
        return [dict(r) for r in rows]

    def experiment_places(self, run_ids: Iterable[str]) -> dict[str, dict]:
        """Where each run sits in an experiment: {run_id: {experiment_id, experiment,
        variant, question_index, repeat (from 0), repeats}}; runs in none are left out."""
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return {}
        rows = self.db.query(
            "SELECT e.run_id, e.experiment_id, x.name, e.variant, e.question_index, e.repeat, "
            "x.repeats FROM experiment_runs e JOIN experiments x ON x.id = e.experiment_id "
            f"WHERE e.run_id IN ({', '.join('?' * len(ids))})",
            ids,
        )
        return {
            r["run_id"]: {
                "experiment_id": r["experiment_id"],
                "experiment": r["name"],
                "variant": r["variant"],
                "question_index": r["question_index"],
                "repeat": r["repeat"],
                "repeats": r["repeats"],
            }
            for r in rows
        }

    # -- judgements

    def save_judgement(self, run_id: str, model_label: str, scores: dict) -> None:
        """A judge model's scores of a run (the latest judgement replaces the previous)."""
        self.db.execute(
            "INSERT INTO judgements (run_id, model_label, scores_json, judged_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET "
            "model_label = excluded.model_label, scores_json = excluded.scores_json, "
            "judged_at = excluded.judged_at",
            (run_id, model_label, dumps(scores), time.time()),
        )

    def judgement(self, run_id: str) -> dict | None:
        """{model_label, scores, judged_at}, or None when the run was never judged."""
        rows = self.db.query("SELECT * FROM judgements WHERE run_id = ?", (run_id,))
        if not rows:
            return None
        return {
            "model_label": rows[0]["model_label"],
            "scores": json.loads(rows[0]["scores_json"]),
            "judged_at": rows[0]["judged_at"],
        }

    def create_judge_job(self, job_id: str, experiment_id: str | None, total: int) -> None:
        """A batch of runs to judge in the background, recorded so any page can show it."""
        self.db.execute(
            "INSERT INTO judge_jobs (id, experiment_id, total, status, created_at) "
            "VALUES (?, ?, ?, 'running', ?)",
            (job_id, experiment_id, total, time.time()),
        )

    def update_judge_job(
        self, job_id: str, judged: int, failed: int, error: str = "", status: str = "running"
    ) -> None:
        """How far a judge job got: runs judged, runs that could not be, the last reason."""
        self.db.execute(
            "UPDATE judge_jobs SET judged = ?, failed = ?, error = ?, status = ?, "
            "finished_at = CASE WHEN ? = 'running' THEN NULL ELSE ? END WHERE id = ?",
            (judged, failed, error, status, status, time.time(), job_id),
        )

    def judge_job(self, job_id: str) -> dict | None:
        rows = self.db.query("SELECT * FROM judge_jobs WHERE id = ?", (job_id,))
        return dict(rows[0]) if rows else None

    def latest_judge_job(self, experiment_id: str) -> dict | None:
        """The newest judge job of an experiment's runs, or None."""
        rows = self.db.query(
            "SELECT * FROM judge_jobs WHERE experiment_id = ? ORDER BY created_at DESC LIMIT 1",
            (experiment_id,),
        )
        return dict(rows[0]) if rows else None
