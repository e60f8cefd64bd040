"""A stand-in app process hosting the gated-tools test system (tests/gate_system.py): it
starts one run, answers its approval (approve, or edit with ARGS_JSON), and SIGKILLs itself
when the ledger is told the gated call is finished: WHEN ``before`` the record is written
(the server acted, the ledger does not know), or ``after`` it (the ledger knows, the
checkpoint of the tool's step does not). Usage: gate_host.py QUESTION WHEN [ARGS_JSON]
"""

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.kernel.design import Design  # noqa: E402
from graph.kernel.ledger import SideEffectLedger  # noqa: E402
from graph.kernel.system import register  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from tests.gate_system import SYSTEM  # noqa: E402

question, when = sys.argv[1], sys.argv[2]
edited = sys.argv[3] if len(sys.argv) > 3 else ""
original = SideEffectLedger.finish


def dying(self, key, result, *args, **kwargs):
    if key.startswith("tools/") and when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    original(self, key, result, *args, **kwargs)
    if key.startswith("tools/") and when == "after":
        os.kill(os.getpid(), signal.SIGKILL)


SideEffectLedger.finish = dying  # type: ignore[method-assign]
register(SYSTEM)
service = RunService(Store.open(), timeout_tick_s=0)
run_id = service.start(question, Design(system=SYSTEM.name))
print(run_id, flush=True)
while service.wait(run_id).status == "waiting":
    for pending in service.pending_approvals():
        if edited:
            service.decide(run_id, pending["id"], "edit", query=edited)
        else:
            service.decide(run_id, pending["id"], "approve")
print("the run ended without reaching the gated call", flush=True)
sys.exit(3)
