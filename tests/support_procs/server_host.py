"""A stand-in app process whose runs execute on a LangGraph Server, SIGKILLed while its
run goes on there. Usage: server_host.py HOME SERVER_URL QUESTION

It starts the run, prints its id once the Planner's update is in the store, and dies:
the run goes on on the server with nobody following it.
"""

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.kernel.design import Design  # noqa: E402
from graph.service.server_runs import ServerRunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402

HOME, URL, QUESTION = sys.argv[1], sys.argv[2], sys.argv[3]
settings = Settings(home=Path(HOME), provider="scripted", server_url=URL, run_lease_s=1.0)
store = Store.open(settings)
service = ServerRunService(store, settings, timeout_tick_s=0)
run_id = service.start(QUESTION, Design())
deadline = time.time() + 60
while not any(e["node"] == "planner" for e in store.events(run_id, kinds=("update",))):
    if time.time() > deadline:
        sys.exit("the planner never finished")
    time.sleep(0.02)
print(run_id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
