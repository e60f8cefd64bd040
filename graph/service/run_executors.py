"""Where a run's work happens: the ``RunExecutor`` protocol and its local implementations.

``RunService`` orchestrates (records runs, claims them, queues redirects, answers
approvals, keeps leases) and hands each piece of running work to one executor, chosen
once when the service is made:

- ``ThreadExecutor``: the run's stream is driven on a worker thread of this process (the
  default);
- ``ProcessExecutor`` (``graph/service/process_executor.py``): a worker thread here waits
  while a worker process drives the stream (``run_processes.py``: CPU-bound runs in
  parallel);
- ``ServerExecutor`` (``graph/service/server_executor.py``): the run is a thread on a
  LangGraph Server and a worker thread here mirrors its stream into the store.

The two local executors share the service's worker loop (leases, queued redirects, how
a run ends: ``LocalRuns.work_here``) and differ only in who drives one leg of the stream.
They also share how a stopped run's checkpoints are written when it is answered, resumed,
redirected or forked (``LocalExecutor``); the server executor writes them on the server.
No executor imports another, nor the service (``pyproject.toml``'s import contracts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from langchain_core.runnables import RunnableConfig

from graph.errors import StepwiseError
from graph.kernel.checkpoints import checkpoint_timeline, fork_state, history, pending_nodes
from graph.kernel.design import Design
from graph.kernel.inner_checkpoints import inner_timeline, interleave
from graph.kernel.system import get_system

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from graph.kernel.system_parts import Forks
    from graph.service.run_controls import StopSignal
    from graph.service.run_records import StateHistory


class NothingLeftToRun(StepwiseError, ValueError):
    """A stopped run's last checkpoint has no node left to run: it reached its end."""


class LegEnd(Protocol):
    """How one leg of a local run's stream stopped (``RunOutcome``, ``run_processes.Ended``)."""

    @property
    def status(self) -> str: ...

    @property
    def reason(self) -> str: ...


# One leg of a local run: drive its stream from ``run_input`` until it stops.
Drive = Callable[[str, Design, "CompiledStateGraph", Any, bool, "StopSignal"], LegEnd]
# The node a fork of a run's first checkpoint is written as (``Forks.first_written_as``):
# (run id, that run's checkpoints by run id, oldest first) -> node, None when not a fork.
FirstWrittenAs = Callable[[str, Callable[[str], list]], "str | None"]


class RunExecutor(Protocol):
    """How the run service's runs execute. Every method but ``work`` is called in the
    caller's thread; ``work`` is the body of a run's worker thread."""

    # Whether a run this process lost to another (its lease taken over) is stopped here:
    # a local run is (its writes are refused anyway); a server run goes on on the server,
    # for the process that holds it now.
    stops_when_lost: bool

    def refuse_start(self, design: Design) -> None:
        """Before a new run of ``design`` is recorded: raise, in words, when this executor
        cannot run it now (a replay on a server, a server that does not answer)."""
        ...

    def admit(self, run_id: str, design: Design, run_input: Any) -> None:
        """Before a run (new, answered, resumed, redirected) is handed to a worker: what
        must be refused in the caller, not in the worker (the server's thread is made)."""
        ...

    def work(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
    ) -> None:
        """Run it until it stops (ends, waits, pauses, is cancelled); write its events and
        end to the store. Never raises: a run ends in words."""
        ...

    def stop(self, run_id: str) -> None:
        """After ``cancel`` was set for a live run: what else stops it (the server run)."""
        ...

    def thread_of(self, run_id: str) -> str:
        """The LangGraph thread the run's state lives in."""
        ...

    def state(self, run_id: str, design: Design) -> dict:
        """The run's state now, from its last checkpoint."""
        ...

    def history(self, run_id: str, design: Design) -> list:
        """The run's top-graph checkpoints, oldest first, shaped like LangGraph's
        ``StateSnapshot`` (what ``fork_point`` and a prompt fork's copied events read)."""
        ...

    def timeline(self, run_id: str, design: Design, inner: bool) -> list[dict]:
        """Each checkpoint of the run, oldest first, projected for teaching (``inner``:
        with its subgraphs' checkpoints interleaved, where they are kept)."""
        ...

    def inner_checkpoints(self, run_id: str, design: Design) -> list[dict]:
        """The checkpoints saved inside the run's subgraphs (none where not kept)."""
        ...

    def notice_answers(self) -> None:
        """Before the service lists the questions waiting: learn of those answered
        somewhere else (another client of a server)."""
        ...

    # Writing a stopped run's checkpoints: what differs between answering, resuming,
    # redirecting or forking a run here and on a server (the service does the rest).

    def graph_for(self, design: Design) -> CompiledStateGraph | None:
        """The compiled graph a worker is handed for an answer or a resume, built in the
        caller so a bad design fails there; None where the graph runs elsewhere."""
        ...

    def questions(
        self, run_id: str, design: Design, compiled: CompiledStateGraph | None
    ) -> set[str]:
        """The ids of the questions the run's last checkpoint waits on."""
        ...

    def ready_to_resume(
        self, run_id: str, design: Design, compiled: CompiledStateGraph | None
    ) -> None:
        """Under the run's hold, before it goes on from its last checkpoint: what its
        checkpoints hold that its records do not yet is taken up; ValueError when
        nothing is left to run."""
        ...

    def refuse_redirect_while_live(self) -> None:
        """Raise, in words, where a run in progress cannot be sent on (a server's: a
        command would run the nodes still due); nothing where it is queued for its worker."""
        ...

    def send_on(
        self, run_id: str, design: Design, compiled: CompiledStateGraph, plan: Callable, note: str
    ) -> Any:
        """Under the hold of a stopped run: send it on where ``plan(snapshot)`` says
        (``(update, goto)``), logged as a redirect event; the input its worker is handed."""
        ...

    def fork_thread(
        self,
        run_id: str,
        checkpoint_id: str,
        new_id: str,
        design: Design,
        compiled: CompiledStateGraph,
        changes: dict | None,
        first_written_as: FirstWrittenAs,
    ) -> None:
        """Make the new run's thread from ``checkpoint_id`` of ``run_id`` with ``changes``
        (completed and checked by the system's ``fork_changes``), written as the node that
        produced that checkpoint, going where the original went."""
        ...

    def forget(self, run_id: str) -> None:
        """Delete the run's checkpoints (its store records are deleted by the service)."""
        ...

    def shutdown(self, wait: bool) -> None:
        """Stop what the executor owns besides the service's worker threads."""
        ...


class LocalRuns(Protocol):
    """What the local executors use of the run service."""

    def work_here(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
        drive: Drive,
    ) -> None: ...

    def continue_here(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
    ) -> LegEnd: ...

    def computes_without_pause(self, design: Design) -> bool: ...

    def compiled_of(self, design: Design) -> CompiledStateGraph: ...

    def forget_checkpoints(self, thread_id: str) -> None: ...

    def reconcile_events(self, run_id: str, design: Design, compiled: StateHistory) -> None: ...

    def take_queued_redirects(
        self, run_id: str, design: Design, compiled: CompiledStateGraph
    ) -> None: ...

    def apply_redirect(
        self, run_id: str, compiled: CompiledStateGraph, plan: Callable, note: str
    ) -> None: ...

    @property
    def owner(self) -> str: ...


def _config(run_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": run_id}}


class LocalExecutor:
    """What both local executors share: a run's checkpoints are this process's
    checkpointer's, read through the design's compiled graph; nothing to refuse or to hear
    from elsewhere; a run's thread is its id."""

    stops_when_lost = True

    def __init__(self, runs: LocalRuns) -> None:
        self.runs = runs

    def refuse_start(self, design: Design) -> None:
        """Nothing to refuse: the caller builds and checks the design's graph."""

    def admit(self, run_id: str, design: Design, run_input: Any) -> None:
        """Nothing to refuse here: the graph was built by the caller."""

    def notice_answers(self) -> None:
        """Nobody else answers a local run's questions."""

    def state(self, run_id: str, design: Design) -> dict:
        compiled = self.runs.compiled_of(design)
        return dict(compiled.get_state({"configurable": {"thread_id": run_id}}).values or {})

    def history(self, run_id: str, design: Design) -> list:
        return history(self.runs.compiled_of(design), run_id)

    def timeline(self, run_id: str, design: Design, inner: bool) -> list[dict]:
        compiled = self.runs.compiled_of(design)
        forks = get_system(design.system).forks
        root = checkpoint_timeline(compiled, run_id, forks.timeline_fields)
        if not inner:
            return root
        return interleave(root, _inner_timeline(compiled, run_id, forks))

    def inner_checkpoints(self, run_id: str, design: Design) -> list[dict]:
        forks = get_system(design.system).forks
        return _inner_timeline(self.runs.compiled_of(design), run_id, forks)

    def thread_of(self, run_id: str) -> str:
        return run_id

    def forget(self, run_id: str) -> None:
        self.runs.forget_checkpoints(run_id)

    def graph_for(self, design: Design) -> CompiledStateGraph | None:
        return self.runs.compiled_of(design)

    def questions(
        self, run_id: str, design: Design, compiled: CompiledStateGraph | None
    ) -> set[str]:
        assert compiled is not None  # graph_for made it
        return {i.id for i in compiled.get_state(_config(run_id)).interrupts}

    def ready_to_resume(
        self, run_id: str, design: Design, compiled: CompiledStateGraph | None
    ) -> None:
        """Node updates a crash kept out of the event log logged, redirects recorded
        before it applied (the first) or queued (the rest)."""
        assert compiled is not None  # graph_for made it
        self.runs.reconcile_events(run_id, design, compiled)
        self.runs.take_queued_redirects(run_id, design, compiled)
        if not pending_nodes(compiled.get_state(_config(run_id))):
            raise NothingLeftToRun("Nothing left to run: the run reached its end.")

    def refuse_redirect_while_live(self) -> None:
        """Nothing to refuse: the run's worker applies it when the run stops."""

    def send_on(
        self, run_id: str, design: Design, compiled: CompiledStateGraph, plan: Callable, note: str
    ) -> Any:
        """The redirect written into the run's checkpoints here; its worker goes on from
        there (no input)."""
        self.runs.reconcile_events(run_id, design, compiled)
        self.runs.apply_redirect(run_id, compiled, plan, note)
        return None

    def fork_thread(
        self,
        run_id: str,
        checkpoint_id: str,
        new_id: str,
        design: Design,
        compiled: CompiledStateGraph,
        changes: dict | None,
        first_written_as: FirstWrittenAs,
    ) -> None:
        """The new thread written by ``fork_state`` on this process's checkpointer. A
        checkpoint inside a subgraph cannot be forked: its ``fork_from`` names the one."""
        goto = None
        if changes:  # the system completes and checks them against the state there
            config: RunnableConfig = {
                "configurable": {"thread_id": run_id, "checkpoint_id": checkpoint_id}
            }
            snapshot = compiled.get_state(config)
            if snapshot.created_at is None:  # not a top-graph checkpoint of this run
                raise ValueError(
                    f"No checkpoint {checkpoint_id!r} in run {run_id} to fork from (a "
                    "checkpoint inside a team cannot be forked: fork from the one before "
                    "the team started)."
                )
            values = dict(snapshot.values or {})
            changes, goto = get_system(design.system).forks.fork_changes(values, changes, design)
        fork_state(
            compiled,
            run_id,
            checkpoint_id,
            new_id,
            changes or {},
            goto=goto,
            first_as=lambda: first_written_as(run_id, lambda r: history(compiled, r)),
        )


class ThreadExecutor(LocalExecutor):
    """Each run's stream is driven on the service's worker thread itself."""

    def work(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
    ) -> None:
        self.runs.work_here(
            run_id, design, compiled, run_input, step_mode, cancel, self.runs.continue_here
        )

    def stop(self, run_id: str) -> None:
        """The stop signal reaches the stream directly."""

    def shutdown(self, wait: bool) -> None:
        """Nothing of its own: the service's worker threads are the service's."""


def _inner_timeline(compiled: CompiledStateGraph, run_id: str, forks: Forks) -> list[dict]:
    """The run's checkpoints inside its subgraphs, as its system shows and reads them."""
    return inner_timeline(compiled, run_id, forks.inner_fields, inner_graphs=forks.inner_graph)
