"""Forks with another prompt, from a node: the tuner changes one prompt and sees only its
effect.

A fork goes on from a checkpoint of a finished run with another text for one of the
prompts the node playground can try on it (the Executor's, the Planner's, a supervisor's,
the teams lead's replan and routing, a worker's, the guardrail classifier's:
``Prompts.fork_prompts``), a saved version or a typed text (saved as a version, so the fork names the version it used). Its model is
the active profile's.

Which calls count as made before the checkpoint: the fork is LangGraph's fork of the
checkpoint's state (``fork_state``), so no call before it is made again; every one of
them is answered by the parent's recording as the state carries it. The recorded calls
before the checkpoint are the parent's ``llm_call`` events logged up to the update of the
node(s) that produced the checkpoint (each node's calls are logged as they end, before
its update; the next node's calls after it). Those events, with the node updates before
them (the messages the trace shows), are copied into the fork's log, each call marked
``replayed`` and timed 0 s (the parent's time kept as ``recorded_latency_s``); a
checkpoint no node update produced (a redirect) is placed by its time instead. Every
call the fork makes from there on goes to the active model and is marked live.

Why not a new run from the start answering the earlier calls by request: the new prompt
is in every earlier Executor request too, so none would match and all would go live; and
answering them by position would pair replies to the old prompt with requests showing the
new one.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Callable

from langgraph.types import StateSnapshot

from graph.kernel.checkpoints import fork_point
from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.kernel.system_parts import CLASSIFIER_PROMPT
from graph.models.choice import ModelChoice
from graph.prompts import PromptError, template_errors
from graph.service.run_records import update_key
from graph.service.store import PromptVersion, RunRecord, Store

COPIED_KINDS = ("update", "custom")


def tuned_prompt(design: Design, prompt_name: str) -> str:
    """``prompt_name`` checked against the prompts a fork may change (every one the node
    playground can try on the run: ``Prompts.fork_prompts``); ValueError in words for
    another."""
    forkable = get_system(design.system).prompts.fork_prompts(design)
    if prompt_name not in forkable.values():
        why = (
            "the run's design does not ask the guardrail's classifier model, so that "
            "prompt would change nothing"
            if prompt_name == CLASSIFIER_PROMPT
            else f"choose one of {', '.join(sorted(forkable.values()))}"
        )
        raise ValueError(
            f"A {design.system} run cannot be forked with another {prompt_name!r} prompt: {why}."
        )
    return prompt_name


def chosen_version(
    store: Store,
    design: Design,
    prompt_name: str,
    text: str | None = None,
    version_id: int | None = None,
) -> tuple[str, PromptVersion | None]:
    """The text a fork uses for ``prompt_name`` and its stored version (None: typed text
    no version holds yet, to be saved when the fork starts). ValueError or PromptError in
    words: an unknown version, one of another prompt, an empty or broken text."""
    tuned_prompt(design, prompt_name)
    if version_id is not None:
        version = store.prompt_version(version_id)
        if version is None:
            raise ValueError(f"No prompt version {version_id} in the store.")
        if version.prompt_name != prompt_name:
            raise ValueError(
                f"Version {version_id} is a version of {version.prompt_name}, not of {prompt_name}."
            )
        return version.text, version
    if text is None or not text.strip():
        raise ValueError(f"The {prompt_name} prompt for the fork is empty.")
    if errors := template_errors(prompt_name, text):
        raise PromptError(" ".join(errors))
    same = next((v for v in store.prompt_versions(prompt_name) if v.text == text), None)
    return text, same


def fork_design(
    design: Design, prompt_name: str, text: str, live: ModelChoice, parent: str
) -> Design:
    """The parent's design with the new prompt text, on the active profile's model, marked
    a fork of ``parent`` (its calls marked live)."""
    return design.model_copy(
        update={
            "prompts": {**design.prompts, prompt_name: text},
            "model": live.model_copy(update={"fork_of": parent, "replay_of": ""}),
        }
    )


def _created_ts(snapshot: StateSnapshot) -> float | None:
    if snapshot.created_at is None:
        return None
    try:
        return datetime.fromisoformat(snapshot.created_at).timestamp()
    except ValueError:
        return None


def events_before(
    store: Store, checkpoints_of: Callable[[str], list], run_id: str, checkpoint_id: str
) -> list[dict]:
    """The parent's update and custom events logged before the checkpoint (see the module
    docstring for how that is decided); ValueError in words when the checkpoint is not one
    of the run's own or cannot be forked. Before a fork's first checkpoint come the events
    before the checkpoint it was forked from, in its own parent, with their first timings.
    ``checkpoints_of``: a run's top-graph checkpoints, oldest first (its executor's)."""
    checkpoints = checkpoints_of(run_id)
    index, _ = fork_point(checkpoints, checkpoint_id, run_id)
    if index == 0:  # a fork's first checkpoint: what came before it is its parent's
        record = store.run(run_id)
        if record is None or not record.parent_run or not record.parent_checkpoint:
            return []
        earlier = events_before(store, checkpoints_of, record.parent_run, record.parent_checkpoint)
        return [{"from_run": record.parent_run, **e} for e in earlier]
    events = store.events(run_id, kinds=COPIED_KINDS)
    producing = [update_key(task.id) for task in checkpoints[index - 1].tasks]
    last = store.event_log.last_seq_of_keys(run_id, producing)
    if last is not None:
        return [e for e in events if e["seq"] <= last]
    created = _created_ts(checkpoints[index])
    if created is None:
        return []
    return [e for e in events if e["ts"] < created]


def replayed_copies(events: list[dict], parent: str, ts: float | None = None) -> list[dict]:
    """The parent's events before the checkpoint as the fork's log keeps them: at the
    fork's start, each model call marked replayed from ``parent`` (or the run an event
    names as ``from_run``; a call the parent copied from its own parent keeps its source and
    first time) and, like each tool run, timed 0 s (nothing was asked or run again); a pace's
    hold is the parent's and left out."""
    at = time.time() if ts is None else ts
    copies = []
    for event in events:
        data = event.get("data")
        if event["kind"] == "custom" and isinstance(data, dict) and "paced" in data:
            continue
        if isinstance(data, dict) and isinstance(data.get("llm_call"), dict):
            call = dict(data["llm_call"])
            if not call.get("replayed_from"):
                source = event.get("from_run") or parent
                call["recorded_latency_s"] = call.get("latency_s", 0.0)
                call.update({"replayed": True, "replayed_from": f"run {source}"})
            call["latency_s"] = 0.0
            data = {**data, "llm_call": call}
        elif isinstance(data, dict) and isinstance(data.get("tool_call"), dict):
            run = dict(data["tool_call"])  # its result is the parent's: it did not run again
            run.setdefault("recorded_latency_s", run.get("latency_s", 0.0))
            run["latency_s"] = 0.0
            data = {**data, "tool_call": run}
        copies.append(
            {
                "seq": 0,
                "ts": at,
                "kind": event["kind"],
                "node": event.get("node") or "",
                "namespace": event.get("namespace") or "",
                "step": event.get("step"),
                "data": data,
            }
        )
    return copies


def call_sources(events: list[dict]) -> dict[str, int]:
    """How many of a run's model calls were replayed and how many live (calls that say
    neither, of an ordinary run, are not counted)."""
    counts = {"replayed": 0, "live": 0}
    for event in events:
        data = event.get("data")
        call = data.get("llm_call") if isinstance(data, dict) else None
        if isinstance(call, dict) and "replayed" in call:
            counts["replayed" if call["replayed"] else "live"] += 1
    return counts


def prompt_forks(store: Store, limit: int = 500) -> list[RunRecord]:
    """The runs forked with another prompt, newest first: of the ``limit`` newest forks,
    read as such (the Evals page lists them on every visit: the store's other runs, a
    class's thousand, are neither read nor decoded)."""
    return [
        r
        for r in store.runs(limit=limit, forks=True)
        if ((r.design or {}).get("model") or {}).get("fork_of")
    ]


def changed_prompts(parent: RunRecord, fork: RunRecord) -> list[str]:
    """The prompts whose text differs between the parent's design and the fork's."""
    a, b = parent.design.get("prompts") or {}, fork.design.get("prompts") or {}
    return sorted(name for name in {*a, *b} if a.get(name) != b.get(name))
