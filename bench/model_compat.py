"""Model-server compatibility: each structured-output mode the server can be forced into,
times each hosted system's first example, on a real server and a real model.

    python bench/model_compat.py [--base-url URL --model NAME] [--systems a,b] [--modes a,b]

Without ``--base-url`` it starts the test suite's real server (llama-cpp-python serving
SmolLM2-135M-Instruct, installed by ``bash scripts/test.sh``). Modes: json_schema (only
where the server accepts it: a connection check decides), json_object with the schema,
json_object alone, none. Tool calling stays on auto. A run that asks a human is answered
as a test would (approve an approval, skip an escalation).

Per cell: how the run ended (done, failed: why, or refused by the server), which nodes
needed a repair round (their reply was unusable once), the model calls and the wall
time. Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_HOME = tempfile.TemporaryDirectory(prefix="stepwise-bench-")  # removed when the bench exits
os.environ.setdefault("STEPWISE_HOME", _HOME.name)

from bench.real_server import add_arguments, real_server  # noqa: E402
from graph.kernel.accounting import usage_by_step  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.kernel.system import systems  # noqa: E402
from graph.models.modes import ModeBook, describe_structured  # noqa: E402
from graph.models.probe import check_server  # noqa: E402
from graph.service.run_service import RunService  # noqa: E402
from graph.service.store import Store  # noqa: E402
from graph.settings import Settings  # noqa: E402
from ui.views import view_of  # noqa: E402

SYSTEMS = systems()

MODES = ("json_schema", "json_object", "json_object_bare", "none")
DESIGNS = {
    "plan_execute": lambda: Design(max_replans=1),
    "supervisor_bus": lambda: Design(system="supervisor_bus", bus_timeout_s=600),
    "hierarchical_teams": lambda: Design(system="hierarchical_teams"),
}
ANSWERS = {"approval": "approve", "escalation": "skip"}


def run_cell(settings: Settings, system: str, limit_s: float) -> dict:
    """One system's first example on ``settings``; how it went."""
    home = tempfile.TemporaryDirectory(
        prefix=f"stepwise-compat-{system}-", ignore_cleanup_errors=True
    )
    settings = settings.model_copy(update={"home": Path(home.name)})
    store = Store.open(settings)
    service = RunService(store, settings, timeout_tick_s=0)
    api = None
    if system == "hierarchical_teams":
        from graph.tools.demo_api import start_demo_api

        api = start_demo_api()
        service.settings = settings.model_copy(update={"teams_api_base": api.base_url})
    started = time.perf_counter()
    run_id = service.start(view_of(system).examples[0], DESIGNS[system]())
    try:
        while time.perf_counter() - started < limit_s:
            record = store.run(run_id)
            if record.status in ("done", "failed", "cancelled"):
                break
            if record.status == "waiting" and not service.is_live(run_id):
                for item in store.pending_interrupts(run_id):
                    service.decide(run_id, item["id"], ANSWERS.get(item.get("kind"), "approve"))
            time.sleep(0.2)
        else:
            service.cancel(run_id)
        record = store.run(run_id)
        wall = time.perf_counter() - started
        notices = (store.snapshot(run_id) or {}).get("notices") or []
        repaired = sorted(
            {n.split(" reply unusable")[0] for n in notices if " reply unusable" in n}
        )
        _, total = usage_by_step(store.events(run_id, kinds=("custom",)), {})
        return {
            "status": record.status,
            "reason": record.reason,
            "repaired": repaired,
            "calls": total.calls,
            "wall_s": wall,
        }
    finally:
        service.shutdown()
        store.close()
        if api is not None:
            api.server.shutdown()
        home.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--limit", type=float, default=900, help="seconds one run may take")
    args = parser.parse_args()

    with real_server(args) as served:
        settings = Settings(
            provider="openai",
            openai_base_url=served.base_url,
            planner_model=served.model,
            worker_model=served.model,
            max_retries=0,
            request_timeout_s=180,
            max_tokens=512,
        )
        report = check_server(settings, ModeBook())
        print(f"server: {served.about}\nmodel: {served.model}\n{report.summary()}\n")
        print("| mode | system | outcome | repaired replies | calls | wall |")
        print("|---|---|---|---|--:|--:|")
        for mode in args.modes.split(","):
            for system in args.systems.split(","):
                label = describe_structured(mode)
                if mode == "json_schema" and not report.json_schema:
                    print(f"| {label} | {system} | refused by the server: not run | | | |")
                    continue
                cell = run_cell(
                    settings.model_copy(update={"structured_output": mode}), system, args.limit
                )
                outcome = (
                    cell["status"]
                    if cell["status"] == "done"
                    else f"{cell['status']}: {cell['reason']}"
                )
                print(
                    f"| {label} | {system} | {outcome} | {', '.join(cell['repaired']) or '-'} "
                    f"| {cell['calls']} | {cell['wall_s']:.1f}s |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
