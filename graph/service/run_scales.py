"""Which scale a person scores a run on (issue 27, point 3): the scale of the eval set the
run belongs to, so the Run and History pages offer what the set's author chose.

A run belongs to an eval set when an experiment on the set made it, or when it was added
to the set from the Run or History page (``eval_set_runs``, newest first). The set as it
is stored now decides (a changed scale applies to the scores given from then on); an
experiment whose set was deleted keeps the copy it ran. A run in no set is scored on the
judge's 1-5, and the form says so.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from graph.service.score_scales import JUDGE_SCALE, ScaleError, ScoreScale, scale_from
from graph.service.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunScale:
    scale: ScoreScale
    eval_set: str | None  # whose scale it is; None: the run is in no eval set
    experiment: str | None = None  # the experiment that made the run, if one did


def run_scale(store: Store, run_id: str) -> RunScale:
    """The scale to score ``run_id`` on, and the eval set it comes from."""
    place = store.evals.experiment_places([run_id]).get(run_id)
    record = store.experiment(place["experiment_id"]) if place else None
    if place and record is not None:
        copy = record.eval_set
        name = copy.get("name") if isinstance(copy.get("name"), str) else None
        stored = store.load_eval_set(name) if name else None
        if stored is not None:
            return RunScale(stored.scale, stored.name, record.name)
        try:
            scale = scale_from(copy.get("scale") or JUDGE_SCALE)
        except ScaleError:
            log.warning("experiment %s keeps a scale this build cannot read", record.id)
            scale = JUDGE_SCALE
        return RunScale(scale, name, record.name)
    for row in store.database.query(
        "SELECT eval_set FROM eval_set_runs WHERE run_id = ? ORDER BY added_at DESC", (run_id,)
    ):
        if (stored := store.load_eval_set(row["eval_set"])) is not None:
            return RunScale(stored.scale, stored.name)
    return RunScale(JUDGE_SCALE, None)


def note_added(store: Store, run_id: str, eval_set: str) -> None:
    """Remember that ``run_id`` was added to ``eval_set``: its scores are on that set's scale."""
    store.database.execute(
        "INSERT INTO eval_set_runs (run_id, eval_set, added_at) VALUES (?, ?, ?) "
        "ON CONFLICT (run_id, eval_set) DO UPDATE SET added_at = excluded.added_at",
        (run_id, eval_set, time.time()),
    )
