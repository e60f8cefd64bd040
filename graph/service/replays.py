"""Replays: a finished run played again with every model call answered from its recording.

A replay is a new run of the same question and design whose model is "the recording of run
X" (``ModelChoice.replay_of``): the run service builds its graph with a
``RecordedChatModel`` over X's recorded calls whenever it builds one (at the start, after a
decision, on a resume), so no model server is asked, in this process or a worker process.
The replay records its parent, and its model label says it is a replay and of what.

Tools run again: the bundled read-only ones give what they gave. What is not yet replayed:
a human's decisions (a replay that reaches an approval asks again), and side effects are
keyed by run, so a replay of a run that wrote a report writes its own copy.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from graph.kernel.design import Design
from graph.models.choice import ModelChoice, replay_label
from graph.models.recorded import RecordedChatModel, Recording, recorded_calls
from graph.service.store import Store


def recorded_model(store: Store, run_id: str) -> BaseChatModel:
    """A model answering from run ``run_id``'s recorded calls (ValueError: it has none)."""
    calls = recorded_calls(store.events(run_id, kinds=("custom",)))
    if not calls:
        raise ValueError(
            f"Run {run_id[:8]} has no recorded model calls to replay: it made none, or it "
            "was made before Stepwise recorded them."
        )
    return RecordedChatModel(
        recording=Recording(calls, source=f"run {run_id}"), model_name=replay_label(run_id)
    )


def replay_design(store: Store, run_id: str, pace_s: float | None = None) -> tuple[str, Design]:
    """The question and design of a replay of ``run_id`` (at ``pace_s`` seconds a node when
    given, for a class to follow); ValueError in words when it cannot be replayed."""
    record = store.run(run_id)
    if record is None:
        raise ValueError(f"No run {run_id!r} to replay.")
    if record.is_live:
        raise ValueError("The run is still going: replay it once it has ended.")
    recorded_model(store, run_id)  # says so now when there is nothing to replay
    design = Design.model_validate(record.design)
    update: dict = {"model": ModelChoice(replay_of=run_id)}
    if pace_s is not None:
        update["pace_s"] = pace_s
    return record.question, design.model_copy(update=update)
