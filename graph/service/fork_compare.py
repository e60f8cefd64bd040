"""A fork with another prompt beside its parent, for the Evals page: the prompt that
changed and its versions, each run's figures (the fork's calls split into replayed and
live), and the two runs side by side as an experiment's runs are compared."""

from __future__ import annotations

from graph.service.evals import RunResult
from graph.service.prompt_forks import call_sources, changed_prompts, prompt_forks
from graph.service.side_by_side import side_by_side
from graph.service.store import RunRecord, Store

FIGURES = (
    ("status", "Status"),
    ("steps", "Steps"),
    ("replans", "Replans"),
    ("llm_calls", "LLM calls"),
    ("replayed", "of which replayed"),
    ("live", "of which live"),
    ("tokens", "Tokens"),
    ("cost", "Cost ($)"),
    ("duration_s", "Time (s)"),
)


def forks_with_parents(store: Store) -> list[RunRecord]:
    """The prompt forks whose parent is still in the store, newest first."""
    return [r for r in prompt_forks(store) if r.parent_run and store.run(r.parent_run)]


Prices = dict[str, tuple[float, float]]


def _figures(store: Store, record: RunRecord, prices: Prices | None) -> dict:
    result = RunResult.from_store(store, record.id, prices)
    sources = call_sources(store.events(record.id, kinds=("custom",)))
    return {
        "status": record.status,
        "steps": result.steps,
        "replans": result.replans,
        "llm_calls": result.llm_calls,
        **sources,
        "tokens": result.tokens,
        "cost": None if result.cost is None else round(result.cost, 6),
        "duration_s": None if result.duration_s is None else round(result.duration_s, 1),
    }


def compare_with_parent(store: Store, fork_id: str, prices: Prices | None = None) -> dict:
    """The fork and its parent: ``prompts`` [{prompt, parent version, fork version}],
    ``figures`` rows (one per figure, a column per run) and ``pair`` (``side_by_side``);
    KeyError when either run is gone."""
    fork = store.run(fork_id)
    if fork is None or not fork.parent_run:
        raise KeyError(f"No fork {fork_id!r}.")
    parent = store.run(fork.parent_run)
    if parent is None:
        raise KeyError(f"The parent of fork {fork_id[:8]} is no longer in the store.")
    mine, theirs = _figures(store, fork, prices), _figures(store, parent, prices)
    return {
        "fork": fork,
        "parent": parent,
        "prompts": [
            {
                "prompt": name,
                "parent": parent.prompt_versions.get(name),
                "fork": fork.prompt_versions.get(name),
            }
            for name in changed_prompts(parent, fork)
        ],
        "figures": [
            {"Figure": label, "Parent": theirs[key], "Fork": mine[key]} for key, label in FIGURES
        ],
        "pair": side_by_side(store, parent.id, fork.id),
    }
