"""A stand-in app process for restart tests: hosts a RunService, starts one run, and
stays up until it is killed. Usage: service_host.py QUESTION [APPROVALS_JSON]"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.kernel.design import Design  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402

service = RunService(Store.open())
approvals = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
run_id = service.start(sys.argv[1], Design(approvals=approvals))
print(run_id, flush=True)
while True:
    time.sleep(60)
