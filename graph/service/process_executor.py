"""The ``ProcessExecutor``: a run's stream driven by a worker process
(``run_processes.py``: CPU-bound runs in parallel, ``STEPWISE_RUN_PROCESSES``) while the
service's worker thread waits for it. What it shares with the ``ThreadExecutor`` (the
worker loop, a stopped run's checkpoints) is ``LocalExecutor`` (``run_executors.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graph.kernel.design import Design
from graph.service.run_executors import LegEnd, LocalExecutor, LocalRuns
from graph.service.run_processes import RunProcesses

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from graph.service.run_controls import StopSignal


class ProcessExecutor(LocalExecutor):
    """Each run's stream is driven by a worker process while the service's worker thread
    waits for it (leases, redirects and the run's end stay in this process)."""

    def __init__(self, runs: LocalRuns, processes: RunProcesses) -> None:
        super().__init__(runs)
        self.processes = processes

    def drive(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
    ) -> LegEnd:
        """One leg in a worker process (raises ``WorkerDied`` / ``RunFailed``)."""
        return self.processes.run(
            run_id,
            design,
            run_input,
            step_mode,
            cancel,
            alone=self.runs.computes_without_pause(design),
            owner=self.runs.owner,
        )

    def work(
        self,
        run_id: str,
        design: Design,
        compiled: CompiledStateGraph | None,
        run_input: Any,
        step_mode: bool,
        cancel: StopSignal,
    ) -> None:
        self.runs.work_here(run_id, design, compiled, run_input, step_mode, cancel, self.drive)

    def stop(self, run_id: str) -> None:
        """The stop signal is forwarded to the worker process by ``RunProcesses.run``."""

    def shutdown(self, wait: bool) -> None:
        self.processes.shutdown(wait=wait)
