"""A stand-in app process for the frozen-owner tests: hosts a RunService (settings from
the environment: STEPWISE_HOME, STEPWISE_DATABASE_URL, STEPWISE_RUN_LEASE), starts one
run on a slowed scripted model, waits for its worker to end, then exits. The test freezes
it (SIGSTOP) mid-run and lets it go on (SIGCONT) once another process has taken the run
over. Usage: frozen_host.py QUESTION CALLS_FILE DELAY_S

Every model call appends a line to CALLS_FILE as it starts: the calls really made,
whether or not their result was ever stored. Every model call that passed the worker's
lease check (``NodeGuard``) appends to CALLS_FILE.passed the monotonic time (one clock for
every process on the machine) at which its check began: a check can begin, decide, be
frozen before its line is written or before the call reaches the model, and go on once
the process does; the test tells such a call (its check began before the freeze) from one
whose check began after it, which must never pass.

Every checkpoint write keeps a file in CALLS_FILE.writes from its start (before its lease
check) to its end: a write already past its check when the process froze still lands (the
lease and the checkpoint are not one transaction: ``graph.service.leases``), so the test
freezes the host only when none is in flight, as it does outside a database write.
"""

import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.kernel.design import Design  # noqa: E402
from graph.models.scripted import ScriptedChatModel  # noqa: E402
from graph.service.leases import LeaseGuardedSaver  # noqa: E402
from graph.service.run_controls import NodeGuard  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402

QUESTION, CALLS_FILE, DELAY_S = sys.argv[1], sys.argv[2], float(sys.argv[3])


class CountingModel(ScriptedChatModel):
    """The scripted model, slowed down, writing one line per call it starts."""

    delay_s: float = DELAY_S

    def _generate(self, *args, **kwargs):
        with open(CALLS_FILE, "a") as calls:
            calls.write("call\n")
        return super()._generate(*args, **kwargs)


_checked = NodeGuard.on_chat_model_start


def counted_check(self, *args, **kwargs):
    began = time.monotonic()
    _checked(self, *args, **kwargs)  # raises when the lease is lost: then nothing is counted
    with open(CALLS_FILE + ".passed", "a") as passed:
        passed.write(f"{began}\n")


NodeGuard.on_chat_model_start = counted_check  # type: ignore[method-assign]

WRITES = Path(CALLS_FILE + ".writes")
WRITES.mkdir(exist_ok=True)


def in_flight(write):
    """``write`` (a checkpoint write), with a file in WRITES while it runs."""

    def marked(self, *args, **kwargs):
        mark = WRITES / uuid.uuid4().hex
        mark.touch()
        try:
            return write(self, *args, **kwargs)
        finally:
            mark.unlink()

    return marked


LeaseGuardedSaver.put = in_flight(LeaseGuardedSaver.put)  # type: ignore[method-assign]
LeaseGuardedSaver.put_writes = in_flight(LeaseGuardedSaver.put_writes)  # type: ignore[method-assign]

service = RunService(Store.open(), timeout_tick_s=0, model_factory=lambda role: CountingModel())
run_id = service.start(QUESTION, Design(max_replans=2, recursion_limit=60))
print(run_id, flush=True)
service.wait(run_id)
print("worker ended", flush=True)
service.shutdown()
