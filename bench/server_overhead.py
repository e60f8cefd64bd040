"""A LangGraph Server run's fixed cost: the same compiled graph run locally and through
``langgraph dev``, one run at a time, interleaved, for Stepwise's graph (the factory of
``graph/served.py``, the design in the run's config) and for a trivial three-node graph
(``bench/served_trivial/``: no factory, no config), so the server's own cost is told from
ours. ``bench/scale.py`` prints it; alone:

    python bench/server_overhead.py [--runs 8] [--system plan_execute]

Each side streams ``updates``: first update = from the call to the first node's update,
total = to the end of the stream. Locally the graph is the very object the server's
factory returns (``served_graph``), given an in-memory checkpointer as the server gives
its own, streamed with ``astream`` as the server does. The model is the offline scripted
model on both sides (no HTTP model server: what is left is the runtime's cost).

A server run is then split by its own clocks (same machine): request (the client's call
to the run's ``created_at``), queue (``created_at`` to the worker starting it: the
server log's ``run_queue_ms``), start (the worker starting to the ``metadata`` event the
client receives: the graph factory and the stream's setup), first node (``metadata`` to
the first update) and the rest (to the end of the stream). Last, the served runs again
back to back, each created as soon as the one before it ended (the queue's worst case).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("STEPWISE_HOME", tempfile.mkdtemp(prefix="stepwise-overhead-"))

from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.pregel import Pregel  # noqa: E402
from langgraph_sdk import get_sync_client  # noqa: E402
from langgraph_sdk.client import SyncLangGraphClient  # noqa: E402
from langgraph_sdk.schema import Config  # noqa: E402

from bench.fairness import load, spread  # noqa: E402
from graph.kernel.design import Design  # noqa: E402
from graph.kernel.system import get_system  # noqa: E402
from graph.models.choice import ModelChoice  # noqa: E402
from graph.served import run_config, run_input, served_graph  # noqa: E402
from tests.support_procs import langgraph_server  # noqa: E402
from ui.views import view_of  # noqa: E402

TRIVIAL = ROOT / "bench" / "served_trivial"
SPLIT = ("request", "queue", "start", "first node", "rest")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FIELD = re.compile(r"(\w+)=(\S+)")


def _at(stamp: str | datetime) -> float:
    """A server's time stamp (ISO text on the wire, typed as a datetime by the SDK)."""
    return (stamp if isinstance(stamp, datetime) else datetime.fromisoformat(stamp)).timestamp()


def _with_thread(config: Config) -> RunnableConfig:
    configurable = {**(config.get("configurable") or {}), "thread_id": str(uuid.uuid4())}
    return cast(RunnableConfig, {**config, "configurable": configurable})


async def _local(graph: Pregel, payload: Any, config: Config) -> dict[str, float]:
    started = time.perf_counter()
    first = None
    async for _ in graph.astream(payload, _with_thread(config), stream_mode="updates"):
        if first is None:
            first = time.perf_counter() - started
    total = time.perf_counter() - started
    return {"first update": total if first is None else first, "total": total}


def started_runs(log: str) -> dict[str, dict[str, str]]:
    """The fields of each "Starting background run" line of a ``langgraph dev`` log, by
    run id (``run_queue_ms``, ``run_started_at``...)."""
    found: dict[str, dict[str, str]] = {}
    for line in _ANSI.sub("", log).splitlines():
        if "Starting background run" in line:
            fields = dict(_FIELD.findall(line))
            if "run_id" in fields:
                found[fields["run_id"]] = fields
    return found


def _server(
    client: SyncLangGraphClient, graph_id: str, payload: Any, config: Config
) -> dict[str, Any]:
    thread = client.threads.create()["thread_id"]
    started = time.time()
    meta = first = None
    run_id = ""
    for part in client.runs.stream(
        thread, graph_id, input=payload, config=config, stream_mode="updates"
    ):
        now = time.time()
        if part.event == "metadata" and meta is None:
            meta, run_id = now, str(part.data["run_id"])
        elif part.event == "updates" and first is None:
            first = now
        elif part.event == "error":
            raise RuntimeError(f"the server run of {graph_id} failed: {part.data}")
    ended = time.time()
    first = ended if first is None else first
    created = _at(client.runs.get(thread, run_id)["created_at"])
    return {
        "first update": first - started,
        "total": ended - started,
        "run_id": run_id,
        "marks": {"call": started, "created": created, "meta": meta, "first": first, "end": ended},
    }


def _split(run: dict[str, Any], logged: dict[str, str] | None) -> dict[str, float | None]:
    marks = run["marks"]
    queue = float(logged["run_queue_ms"]) / 1000 if logged else None
    picked = marks["created"] + queue if queue is not None else None
    return {
        "request": marks["created"] - marks["call"],
        "queue": queue,
        "start": marks["meta"] - picked if picked is not None else None,
        "first node": marks["first"] - marks["meta"],
        "rest": marks["end"] - marks["first"],
    }


def _trivial_graph() -> Pregel:
    spec = importlib.util.spec_from_file_location("three_steps", TRIVIAL / "three_steps.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.graph


def measure(system: str, runs: int) -> dict[str, Any]:
    """``runs`` runs (after one warm-up each) of ``system``'s served graph and of the
    trivial graph, locally and on a fresh one-job ``langgraph dev`` each, interleaved."""
    examples = view_of(system).examples
    design = Design(
        system=system,
        approvals_by="experiment",  # no run waits for a person
        model=ModelChoice(endpoint="", model=""),  # the offline scripted model
    )
    config = run_config(design)
    ours_local = served_graph(system, cast(RunnableConfig, config)).copy(
        update={"checkpointer": InMemorySaver()}
    )
    trivial_local = _trivial_graph().copy(update={"checkpointer": InMemorySaver()})
    ours = langgraph_server.start(jobs_per_worker=1)
    try:
        trivial = langgraph_server.start(jobs_per_worker=1, config=TRIVIAL / "langgraph.json")
    except Exception:
        ours.stop()
        raise
    figures: dict[str, list[dict[str, Any]]] = {
        k: []
        for k in ("ours local", "ours server", "trivial local", "trivial server", "back to back")
    }
    loop = asyncio.new_event_loop()

    def local(graph: Pregel, payload: Any, cfg: Config) -> dict[str, float]:
        job: Coroutine[Any, Any, dict[str, float]] = _local(graph, payload, cfg)
        return loop.run_until_complete(job)

    try:
        ours_client = get_sync_client(url=ours.url, timeout=600)
        trivial_client = get_sync_client(url=trivial.url, timeout=600)
        loads = [load()]
        for index in range(runs + 1):
            question = examples[index % len(examples)]
            payload = run_input(system, question, design)
            trivial_payload = {"question": question}
            sides: list[tuple[str, Callable[[], dict[str, Any]]]] = [
                ("ours local", partial(local, ours_local, payload, config)),
                ("ours server", partial(_server, ours_client, system, payload, config)),
                ("trivial local", partial(local, trivial_local, trivial_payload, {})),
                (
                    "trivial server",
                    partial(_server, trivial_client, "three_steps", trivial_payload, {}),
                ),
            ]
            for name, run in sides:
                result = run()
                if index:  # the first of each is a warm-up (a graph built, modules loaded)
                    figures[name].append(result)
        # Then ours again, each run created as soon as the one before it has ended, as a
        # script, an answered approval or step mode's next step does: the first of them
        # follows a pause, so it is not counted.
        for index in range(runs + 1):
            payload = run_input(system, examples[index % len(examples)], design)
            result = _server(ours_client, system, payload, config)
            if index:
                figures["back to back"].append(result)
        loads.append(load())
        logs = {"ours": started_runs(ours.log_text()), "trivial": started_runs(trivial.log_text())}
    finally:
        loop.close()
        ours.stop()
        trivial.stop()
    splits = {
        side: [_split(r, logs[side].get(r["run_id"])) for r in figures[f"{side} server"]]
        for side in ("ours", "trivial")
    }
    return {"figures": figures, "splits": splits, "loads": loads}


def _cell(values: list[float]) -> str:
    figure = spread(values)
    return f"{figure['median']:6.3f} ({figure['min']:.3f}-{figure['max']:.3f})"


def report(system: str, runs: int, measured: dict[str, Any]) -> None:
    """Print the per-run overhead: each side's first update and total, the server's
    excess over the local run, and the server run's split."""
    figures, splits = measured["figures"], measured["splits"]
    print(
        f"per-run overhead: {runs} runs each, one at a time, interleaved (local, served; "
        f"{system} and the trivial three_steps), offline scripted model; median (min-max), s"
    )
    print(f"  load average before: {measured['loads'][0]}")
    print(f"  {'':<28} {'first update':>22} {'total':>22}")
    for side, title in (("ours", system), ("trivial", "three_steps")):
        for where in ("local", "server"):
            rows = figures[f"{side} {where}"]
            print(
                f"  {title + ' ' + where:<28} "
                f"{_cell([r['first update'] for r in rows]):>22} "
                f"{_cell([r['total'] for r in rows]):>22}"
            )
        pairs = list(zip(figures[f"{side} server"], figures[f"{side} local"], strict=True))
        excess = [
            _cell([served[key] - local[key] for served, local in pairs])
            for key in ("first update", "total")
        ]
        print(f"  {title + ' server - local':<28} {excess[0]:>22} {excess[1]:>22}")
    rows = figures["back to back"]
    print(
        f"  {system + ' back to back':<28} "
        f"{_cell([r['first update'] for r in rows]):>22} {_cell([r['total'] for r in rows]):>22}"
    )
    for side, title in (("ours", system), ("trivial", "three_steps")):
        print(f"  {title} server run, split:")
        for part in SPLIT:
            values = [v for s in splits[side] if (v := s[part]) is not None]
            shown = _cell(values) if values else "not in the server log"
            print(f"    {part:<12} {shown}")
    print(f"  load average after: {measured['loads'][1]} (no claim at a load of 2 or more)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--system", default="plan_execute")
    args = parser.parse_args(argv)
    get_system(args.system)  # an unknown system fails here, before any server starts
    report(args.system, args.runs, measure(args.system, args.runs))


if __name__ == "__main__":
    main()
