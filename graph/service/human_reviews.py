"""What people say about runs (issue 27, point 3), kept in the store: a score and note per
run (an annotation), and which of two answers to one question is better (a pairwise
judgement: A, B, a tie, or both bad).

Why a repository of its own: the store's tables are moving out of ``Store`` one subject at
a time (``model_profiles`` first); this one needs only the connection. Each judgement
records who made it when the app knows (sign-in), else None, and when. A person judges an
item once: judging it again replaces the earlier judgement (a changed mind, not a second
vote). A pair is one pair whichever side each run was shown on.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Iterable

from graph.errors import StepwiseError
from graph.redaction import redact
from graph.service.run_scales import run_scale
from graph.service.score_scales import JUDGE_SCALE, ScaleError, ScoreScale, scale_from
from graph.service.store import Store

log = logging.getLogger(__name__)

CHOICES = ("A", "B", "tie", "both bad")
MAX_NOTE = 2000


class ReviewError(StepwiseError, ValueError):
    """A judgement that cannot be kept; the message says why."""


@dataclass(frozen=True)
class Annotation:
    """``score`` is a point of ``scale``, the scale it was given on (kept with it)."""

    run_id: str
    score: int
    note: str
    reviewer: str | None
    at: float
    scale: ScoreScale = JUDGE_SCALE

    @property
    def label(self) -> str:
        return self.scale.label(self.score)


@dataclass(frozen=True)
class PairJudgement:
    """``run_a`` and ``run_b`` as the reviewer saw them (left, right); ``choice`` names
    one of those sides."""

    experiment_id: str | None
    question: str
    run_a: str
    run_b: str
    choice: str
    note: str
    reviewer: str | None
    at: float

    @property
    def winner(self) -> str | None:
        """The run chosen, None for a tie or both bad."""
        return {"A": self.run_a, "B": self.run_b}.get(self.choice)


def pair_key(experiment_id: str | None, run_a: str, run_b: str) -> str:
    return "|".join([experiment_id or "", *sorted((run_a, run_b))])


def _note(note: str | None) -> str:
    """A note as kept: trimmed, and with any key pasted into it taken out."""
    text = redact((note or "").strip())
    if len(text) > MAX_NOTE:
        raise ReviewError(f"The note is {len(text)} characters long; keep it to {MAX_NOTE}.")
    return text


def _kept_scale(text: str | None) -> ScoreScale:
    """The scale a score was kept with; the judge's 1-5 for one kept before scales were
    (migration 6 writes it in, so None is a row written since by an older build)."""
    if text is None:
        return JUDGE_SCALE
    try:
        return scale_from(json.loads(text))
    except (ValueError, ScaleError):
        log.warning("an annotation's scale could not be read; shown on the judge's 1-5")
        return JUDGE_SCALE


class HumanReviews:
    """People's annotations and pairwise judgements in one store."""

    def __init__(self, store: Store):
        self.store = store
        self.db = store.database

    # ------------------------------------------------------------------ annotations

    def annotate(
        self,
        run_id: str,
        score: Any,
        note: str | None = "",
        reviewer: str | None = None,
        scale: ScoreScale | None = None,
    ) -> Annotation:
        """Keep a person's score and note of a run, with the scale the score was given on:
        ``scale`` as the form showed it, else the run's (``run_scale``) now."""
        if self.store.run(run_id) is None:
            raise ReviewError(f"There is no run {run_id!r} to annotate (deleted?).")
        scale = scale or run_scale(self.store, run_id).scale
        if not scale.holds(score):
            points = (
                f" ({', '.join(f'{p} {scale.label(p)}' for p in scale.points)})"
                if scale.labels
                else ""
            )
            raise ReviewError(
                f"A score is a whole number from {scale.low} to {scale.high}{points}, "
                f"not {score!r}."
            )
        found = Annotation(run_id, score, _note(note), reviewer, time.time(), scale)
        self.db.execute(
            "INSERT INTO annotations (run_id, reviewer, score, note, annotated_at, scale_json) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, reviewer) DO UPDATE SET "
            "score = excluded.score, note = excluded.note, annotated_at = excluded.annotated_at, "
            "scale_json = excluded.scale_json",
            (run_id, reviewer or "", score, found.note, found.at, scale.model_dump_json()),
        )
        return found

    def annotations(self, run_ids: Iterable[str] | None = None) -> list[Annotation]:
        """Annotations of these runs (all when None), oldest first."""
        rows = self.db.query("SELECT * FROM annotations ORDER BY annotated_at, run_id")
        wanted = None if run_ids is None else set(run_ids)
        return [
            Annotation(
                r["run_id"],
                int(r["score"]),
                r["note"],
                r["reviewer"] or None,
                r["annotated_at"],
                _kept_scale(r["scale_json"]),
            )
            for r in rows
            if wanted is None or r["run_id"] in wanted
        ]

    def annotation(self, run_id: str, reviewer: str | None = None) -> Annotation | None:
        return next(
            (a for a in self.annotations([run_id]) if a.reviewer == (reviewer or None)), None
        )

    # ------------------------------------------------------------------ pairs

    def judge_pair(
        self,
        question: str,
        run_a: str,
        run_b: str,
        choice: str,
        note: str | None = "",
        reviewer: str | None = None,
        experiment_id: str | None = None,
    ) -> PairJudgement:
        """Keep which of two answers to ``question`` a person found better."""
        if choice not in CHOICES:
            raise ReviewError(f"Choose one of {', '.join(CHOICES)}, not {choice!r}.")
        if run_a == run_b:
            raise ReviewError("A run cannot be compared with itself: pick two runs.")
        for run_id in (run_a, run_b):
            if self.store.run(run_id) is None:
                raise ReviewError(f"There is no run {run_id!r} to judge (deleted?).")
        if experiment_id is not None:
            ran = {r["run_id"] for r in self.store.experiment_runs(experiment_id)}
            if not {run_a, run_b} <= ran:
                raise ReviewError("Both runs must belong to the experiment being reviewed.")
        if not question.strip():
            raise ReviewError("A pair is judged on a question; the question is empty.")
        found = PairJudgement(
            experiment_id,
            question.strip(),
            run_a,
            run_b,
            choice,
            _note(note),
            reviewer,
            time.time(),
        )
        self.db.execute(
            "INSERT INTO pairwise_judgements (pair_key, reviewer, experiment_id, question, "
            "run_a, run_b, choice, note, judged_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (pair_key, reviewer) DO UPDATE SET run_a = excluded.run_a, "
            "run_b = excluded.run_b, choice = excluded.choice, note = excluded.note, "
            "judged_at = excluded.judged_at",
            (
                pair_key(experiment_id, run_a, run_b),
                reviewer or "",
                experiment_id,
                found.question,
                run_a,
                run_b,
                choice,
                found.note,
                found.at,
            ),
        )
        return found

    def pair_judgements(self, experiment_id: str | None = None) -> list[PairJudgement]:
        """An experiment's pairwise judgements (every one when None), oldest first."""
        sql = "SELECT * FROM pairwise_judgements"
        params: tuple = ()
        if experiment_id is not None:
            sql += " WHERE experiment_id = ?"
            params = (experiment_id,)
        rows = self.db.query(sql + " ORDER BY judged_at, pair_key", params)
        return [
            PairJudgement(
                r["experiment_id"],
                r["question"],
                r["run_a"],
                r["run_b"],
                r["choice"],
                r["note"],
                r["reviewer"] or None,
                r["judged_at"],
            )
            for r in rows
        ]
