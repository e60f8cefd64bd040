"""A stand-in app process that dies (SIGKILL, by its own hand) in the window between a
side effect and its record in the ledger: the moment the ledger is told an effect whose
key or result contains MARK is finished. It hosts a RunService and starts one run, like
service_host.py, and approves every call it is asked about. Usage:
dying_host.py SYSTEM QUESTION APPROVALS_JSON MARK

The kill is placed on the ledger's "finished" calls (``finish``, and ``record`` that
older code used), so it lands after the file is in place or the request has reached the
API, and before the ledger knows: exactly the window a crash can hit.
"""

import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.kernel.design import Design  # noqa: E402
from graph.kernel.ledger import SideEffectLedger  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402

system, question, approvals, mark = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]


def dying(original):
    def finished(self, key, result, *args, **kwargs):
        if mark in key or mark in result:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, key, result, *args, **kwargs)

    return finished


for name in ("finish", "record"):
    if hasattr(SideEffectLedger, name):
        setattr(SideEffectLedger, name, dying(getattr(SideEffectLedger, name)))

service = RunService(Store.open())
run_id = service.start(question, Design(system=system, approvals=approvals))
print(run_id, flush=True)
while service.wait(run_id).status == "waiting":  # a human who approves every call
    for pending in service.pending_approvals():
        service.decide(run_id, pending["id"], "approve")
print("the run ended without reaching the marked side effect", flush=True)
sys.exit(3)
