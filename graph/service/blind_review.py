"""Blind pairwise review of an experiment (issue 27, point 3): the queue of pairs a person
judges, the win rate of each variant against the baseline, and the judgements exported.

Blind: a person who knows which answer is the new prompt's favours it. So the queue holds
pairs of runs of one question (the baseline's and a variant's run of the same repeat) in a
random order with a random side for each, and what it hands the review view
(``BlindPair``) has no variant name. The order and sides are drawn from a generator seeded
with the experiment and baseline: a reload, another tab or another reviewer sees the same
queue.

Win rate: of the pairs of a variant and the baseline where a person preferred one side,
the share the variant won; ties and "both bad" are counted beside it, not in it. Its
interval is the Wilson score interval (``eval_statistics.wilson``) at ``LEVEL``.
"""

from __future__ import annotations

import csv
import io
import json
import random
from dataclasses import dataclass
from datetime import datetime, timezone

from graph.redaction import redact_data
from graph.service.eval_sets import EvalSet
from graph.service.eval_statistics import LEVEL, wilson
from graph.service.experiment_comparison import COUNTED_STATUSES
from graph.service.human_reviews import HumanReviews, PairJudgement, pair_key
from graph.service.store import Store

EXPORT_FORMAT = "stepwise-pairwise-review"
EXPORT_COLUMNS = (
    "experiment_id",
    "question",
    "run_a",
    "variant_a",
    "run_b",
    "variant_b",
    "choice",
    "preferred_variant",
    "note",
    "reviewer",
    "judged_at",
)


@dataclass(frozen=True)
class BlindPair:
    """One pair as the review view receives it: the question and the two runs as shown,
    left (A) and right (B); never which variant made which."""

    key: str
    question: str
    run_a: str
    run_b: str


def _variants(store: Store, experiment_id: str) -> dict[str, str]:
    return {r["run_id"]: r["variant"] for r in store.experiment_runs(experiment_id)}


def review_queue(store: Store, experiment_id: str, baseline: str) -> list[BlindPair]:
    """Every pair (the baseline's run and another variant's run of the same question and
    repeat, both ended) in the seeded random order, sides drawn at random."""
    record = store.experiment(experiment_id)
    if record is None:
        raise KeyError(f"No experiment {experiment_id!r}.")
    questions = EvalSet.model_validate(record.eval_set).questions
    ended = {
        (r["question_index"], r["repeat"], r["variant"]): r["run_id"]
        for r in store.experiment_runs(experiment_id)
        if r["status"] in COUNTED_STATUSES
    }
    pairs = []
    for (index, repeat, variant), run_id in sorted(ended.items()):
        base = ended.get((index, repeat, baseline))
        if variant != baseline and base is not None:
            pairs.append((questions[index].question, base, run_id))
    draw = random.Random(f"{experiment_id}:{baseline}")  # a text seed: the same everywhere
    draw.shuffle(pairs)
    queue = []
    for question, base, other in pairs:
        a, b = (base, other) if draw.random() < 0.5 else (other, base)
        queue.append(BlindPair(pair_key(experiment_id, a, b), question, a, b))
    return queue


def judged_keys(reviews: HumanReviews, experiment_id: str, reviewer: str | None) -> dict:
    """{pair key: choice} of the pairs this reviewer has judged."""
    return {
        pair_key(j.experiment_id, j.run_a, j.run_b): j.choice
        for j in reviews.pair_judgements(experiment_id)
        if j.reviewer == (reviewer or None)
    }


def win_rates(store: Store, experiment_id: str, baseline: str) -> list[dict]:
    """Per variant other than the baseline: ``{variant, pairs, wins, losses, ties,
    both_bad, win_rate, low, high}`` from every reviewer's judgements of its pairs with
    the baseline; the rate and interval None while no pair has a preferred side."""
    record = store.experiment(experiment_id)
    if record is None:
        raise KeyError(f"No experiment {experiment_id!r}.")
    variant_of = _variants(store, experiment_id)
    counts = {
        v["name"]: {"wins": 0, "losses": 0, "ties": 0, "both_bad": 0}
        for v in record.variants
        if v["name"] != baseline
    }
    for j in HumanReviews(store).pair_judgements(experiment_id):
        sides = {variant_of.get(j.run_a), variant_of.get(j.run_b)}
        if baseline not in sides or len(sides) != 2:
            continue
        (other,) = sides - {baseline}
        if other not in counts:
            continue
        found = counts[other]
        if j.choice == "tie":
            found["ties"] += 1
        elif j.choice == "both bad":
            found["both_bad"] += 1
        elif variant_of.get(j.winner or "") == other:
            found["wins"] += 1
        else:
            found["losses"] += 1
    rows = []
    for variant, found in counts.items():
        decided = found["wins"] + found["losses"]
        interval = wilson(found["wins"], decided)
        rows.append(
            {
                "variant": variant,
                "pairs": decided + found["ties"] + found["both_bad"],
                **found,
                "win_rate": found["wins"] / decided if decided else None,
                "low": interval[0] if interval else None,
                "high": interval[1] if interval else None,
                "level": LEVEL,
            }
        )
    return rows


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds")


def export_rows(store: Store, experiment_id: str) -> list[dict]:
    """The experiment's pairwise judgements with the variants named (the review is over),
    one dict of ``EXPORT_COLUMNS`` each; no key can be in them (notes are redacted)."""
    variant_of = _variants(store, experiment_id)
    rows = []
    for j in HumanReviews(store).pair_judgements(experiment_id):
        rows.append(_export_row(j, variant_of))
    return redact_data(rows)


def _export_row(j: PairJudgement, variant_of: dict[str, str]) -> dict:
    return {
        "experiment_id": j.experiment_id or "",
        "question": j.question,
        "run_a": j.run_a,
        "variant_a": variant_of.get(j.run_a, ""),
        "run_b": j.run_b,
        "variant_b": variant_of.get(j.run_b, ""),
        "choice": j.choice,
        "preferred_variant": variant_of.get(j.winner or "", ""),
        "note": j.note,
        "reviewer": j.reviewer or "",
        "judged_at": _iso(j.at),
    }


def export_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def export_json(name: str, baseline: str, rows: list[dict], rates: list[dict]) -> str:
    document = {
        "format": EXPORT_FORMAT,
        "experiment": name,
        "baseline": baseline,
        "win_rates": rates,
        "judgements": rows,
    }
    return json.dumps(redact_data(document), indent=2, ensure_ascii=False)
