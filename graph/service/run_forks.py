"""Forks and replays: new runs going on from a checkpoint of another (with changes to its
state, or another prompt's text), or answering every model call from its recording. A
part of the run service; each new run records its parent. Its executor makes a fork's
thread (``fork_thread``: on this process's checkpointer, or a new server thread).
"""

from __future__ import annotations

import logging
import uuid
from typing import Callable

from graph.kernel.checkpoints import fork_point
from graph.prompts import PromptSet
from graph.service import prompt_forks
from graph.service.replays import replay_design
from graph.service.run_host import RunHost
from graph.service.run_models import RunModels

log = logging.getLogger(__name__)


class Forks:
    """A run service's forks and replays of its runs."""

    def __init__(self, service: RunHost, models: RunModels) -> None:
        self.service = service
        self.models = models

    def fork(
        self,
        run_id: str,
        checkpoint_id: str,
        changes: dict | None = None,
        step_mode: bool = False,
        pace_s: float | None = None,
    ) -> str:
        """A new run going on from a checkpoint of ``run_id``, with ``changes`` to its
        state (e.g. another plan or agent_query, a teams run's edited subtasks: the
        system's ``fork_changes`` checks them); records its parent run and checkpoint.
        Without changes this replays from that checkpoint. A checkpoint inside a
        subgraph cannot be forked: its ``fork_from`` names the one to use. ``pace_s``:
        the new run's pace (None: the parent's)."""
        record, design = self.service.stored(run_id)
        if pace_s is not None:
            design = design.model_copy(update={"pace_s": pace_s})
        compiled, planner, worker = self.models.graph(design)
        new_id = uuid.uuid4().hex
        self.service.executor.fork_thread(
            run_id, checkpoint_id, new_id, design, compiled, changes, self.first_written_as
        )
        self.service.record_run(
            new_id,
            record.question,
            design,
            planner,
            worker,
            record.prompt_versions,
            run_id,
            checkpoint_id,
        )
        self.service.submit(new_id, design, compiled, None, step_mode)
        return new_id

    def first_written_as(self, run_id: str, checkpoints_of: Callable[[str], list]) -> str | None:
        """The node a fork of ``run_id``'s first checkpoint is written as, when ``run_id``
        is itself a fork: the one that produced, in its parent, the checkpoint it was
        forked from (``checkpoints_of``: a run's checkpoints, oldest first). None for a
        run that is no fork or whose parent is gone."""
        record = self.service.store.run(run_id)
        if record is None or not record.parent_run or not record.parent_checkpoint:
            return None
        parent = record.parent_run
        try:
            _, node = fork_point(
                checkpoints_of(parent),
                record.parent_checkpoint,
                parent,
                lambda: self.first_written_as(parent, checkpoints_of),
            )
        except ValueError as exc:
            log.warning("run %s: the node its fork was written as is unknown: %s", run_id, exc)
            return None
        return node

    def fork_with_prompt(
        self,
        run_id: str,
        checkpoint_id: str,
        prompt_name: str,
        text: str | None = None,
        version_id: int | None = None,
        label: str = "",
        step_mode: bool = False,
    ) -> str:
        """A new run going on from a checkpoint of ``run_id`` with another text for one of
        its system's tuned prompts (a stored version, or ``text``, saved as a version
        labelled ``label``), on the active model profile: the calls before the checkpoint
        are the parent's, copied into the fork's log as replayed; every later call is live
        (``graph/service/prompt_forks.py``). Records its parent, checkpoint and the
        prompt version it used; ValueError in words when it cannot be made."""
        record, design = self.service.stored(run_id)
        if record.is_live:
            raise ValueError("The run is still going: fork it once it has ended.")
        text, version = prompt_forks.chosen_version(
            self.service.store, design, prompt_name, text, version_id
        )
        active = self.service.profiles.active().choice()
        new_design = prompt_forks.fork_design(design, prompt_name, text, active, run_id)
        if new_design.model and (problem := new_design.model.key_problem()):
            raise ValueError(problem)
        PromptSet(new_design.prompts)  # PromptError naming the prompt and the problem
        compiled, planner, worker = self.models.graph(new_design)
        executor = self.service.executor
        before = prompt_forks.events_before(
            self.service.store, lambda r: executor.history(r, new_design), run_id, checkpoint_id
        )
        new_id = uuid.uuid4().hex
        # ValueError: not forkable. A new thread where the executor keeps them (this
        # process's checkpointer, or a LangGraph Server), as ``fork`` without changes.
        executor.fork_thread(
            run_id, checkpoint_id, new_id, new_design, compiled, {}, self.first_written_as
        )
        if version is None:
            version = self.service.store.save_prompt_version(
                prompt_name, label.strip() or f"typed for a fork of run {run_id[:8]}", text
            )
        versions = {**record.prompt_versions, prompt_name: version.id}
        self.service.record_run(
            new_id,
            record.question,
            new_design,
            planner,
            worker,
            versions,
            run_id,
            checkpoint_id,
        )
        copies = prompt_forks.replayed_copies(before, run_id)
        if copies:
            self.service.store.append_events(new_id, copies, owner=self.service.owner)
        self.service.submit(new_id, new_design, compiled, None, step_mode)
        return new_id

    def replay(self, run_id: str, pace_s: float | None = None, step_mode: bool = False) -> str:
        """A new run of ``run_id``'s question and design with every model call answered
        from its recording (``graph/service/replays.py``); records its parent."""
        question, design = replay_design(self.service.store, run_id, pace_s)
        record = self.service.store.run(run_id)
        return self.service.start(
            question,
            design,
            prompt_versions=record.prompt_versions if record else None,
            step_mode=step_mode,
            parent_run=run_id,
        )
