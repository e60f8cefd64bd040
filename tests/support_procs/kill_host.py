"""A stand-in app process that SIGKILLs itself at a chosen point of its run, for the
event-log tests. Usage: kill_host.py QUESTION TRIGGER CALLS_FILE

Every model call appends a line to CALLS_FILE (the calls really made). TRIGGER says when
the run's worker thread dies, at the batch of events it is about to store:
  call:K       the first event after model call K;
  saved:NODE   the first event once NODE's writes are in the checkpoint;
  stored:NODE  the same, but after storing that event.
Never while a model call has replied and its llm_call event is not yet handed over (it is
as the call ends, from the node's thread): a crash in that moment loses the call's record
whatever the log does, and the run's events that wait for company are written by the
run's threads at any moment, the linger's too.
"""

import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.kernel.design import Design  # noqa: E402
from graph.models.scripted import ScriptedChatModel  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402

QUESTION, TRIGGER, CALLS_FILE = sys.argv[1], sys.argv[2], sys.argv[3]
KIND, _, WHAT = TRIGGER.partition(":")
calls_here: list[int] = []  # model calls made here, counted before their line is written
logged_here: list[int] = []  # llm_call events this process has stored


class CountingModel(ScriptedChatModel):
    """The scripted model, writing one line per call it makes to CALLS_FILE."""

    delay_s: float = 0.05

    def _generate(self, *args, **kwargs):
        result = super()._generate(*args, **kwargs)
        calls_here.append(1)
        with open(CALLS_FILE, "a") as calls:
            calls.write("call\n")
        return result


def node_saved(run_id: str) -> bool:
    """NODE's writes are in the checkpointer: its task has a result in a checkpoint of
    the run. The whole history, not the last two: on a loaded machine the worker stores
    events in larger batches, and NODE's checkpoint had moved further back by the next
    batch (the run then finished unkilled, seen in the full suite)."""
    config = {"configurable": {"thread_id": run_id}}
    return any(
        task.name == WHAT and task.result is not None
        for snapshot in compiled.get_state_history(config)
        for task in snapshot.tasks
    )


class KillingStore(Store):
    def append_events(self, run_id: str, records: list[dict], **kwargs) -> list[int]:
        """Events come in batches, each written in one transaction: the process dies
        before a batch (or, for "stored", just after it) once the trigger is due."""
        if threading.current_thread().name.startswith("stepwise-run"):  # the run's worker
            due = len(calls_here) >= int(WHAT) if KIND == "call" else node_saved(run_id)
            if due and KIND == "stored":
                seqs = self._logged(run_id, records, **kwargs)
                if len(calls_here) == len(logged_here):
                    os.kill(os.getpid(), signal.SIGKILL)
                return seqs
            if due and len(calls_here) == len(logged_here):
                os.kill(os.getpid(), signal.SIGKILL)
        return self._logged(run_id, records, **kwargs)

    def _logged(self, run_id: str, records: list[dict], **kwargs) -> list[int]:
        seqs = super().append_events(run_id, records, **kwargs)
        logged_here.extend(
            1 for r in records if isinstance(r.get("data"), dict) and "llm_call" in r["data"]
        )
        return seqs


service = RunService(KillingStore.open(), model_factory=lambda role: CountingModel())
design = Design(max_replans=2, recursion_limit=60)
compiled = service.models.graph(design)[0]
run_id = service.start(QUESTION, design)
print(run_id, flush=True)
service.wait(run_id)
print("finished without being killed", flush=True)
