"""A stand-in app process that tries to resume one run at a given moment, for the
ownership tests: two of these race for the same run. Usage: resume_host.py RUN_ID START_AT

Prints "resumed" and waits for the run to end, or prints why it was refused. Every model
call it makes is one line "call" on stdout, so the test counts the calls really made."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.models.scripted import ScriptedChatModel  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402

RUN_ID, START_AT = sys.argv[1], float(sys.argv[2])


class CountingModel(ScriptedChatModel):
    delay_s: float = 0.1

    def _generate(self, *args, **kwargs):
        print("call", flush=True)
        return super()._generate(*args, **kwargs)


service = RunService(Store.open(), timeout_tick_s=0, model_factory=lambda role: CountingModel())
time.sleep(max(0.0, START_AT - time.time()))
try:
    service.resume(RUN_ID)
except ValueError as exc:
    print(f"refused: {exc}", flush=True)
else:
    print("resumed", flush=True)
    print(f"ended: {service.wait(RUN_ID, timeout=120).status}", flush=True)
service.shutdown()
