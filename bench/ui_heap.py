"""Whose heap a full garbage collection walks while the Run page follows a live run (issue
33.4): an analysis that prints figures, never a test.

    python bench/ui_heap.py [--refreshes 200] [--messages 10000]

Builds ``bench/ui_latency.py``'s fixtures in a fresh store (a 100-message run drawn first,
so the app's first script run is a small one, as in that bench; then a finished run and
a live one of ``--messages``), keeps the bench's own copy of the finished run's messages
as that bench does, and reruns the whole Run page script under AppTest on the live run,
one new event before each refresh (``LiveEvents``). Prints, with the load average: the
live refreshes' median, p95 and max; each collection of the oldest generation during
them and its duration; the objects the collector tracks then, how many of them are
reachable from the event feed (``ui.event_feed.FEED``: what the app itself keeps of the
runs shown) and from the bench's copy; and what one ``gc.collect()`` takes with and
without that copy.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.ui_latency as fixtures  # noqa: E402  (sets STEPWISE_HOME to a temp folder)
from bench.fairness import load, percentile  # noqa: E402
from graph.service.store import FILE_NAME, Store  # noqa: E402
from graph.settings import Settings  # noqa: E402

SHARED = (type, types.ModuleType, types.FunctionType, types.CodeType)  # not a run's data


def reachable(roots: list, stop: set[int]) -> int:
    """Objects the collector tracks reachable from ``roots`` (classes, modules and
    functions are not followed: they are shared, not held by the roots)."""
    seen: set[int] = set()
    todo, count = list(roots), 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or id(obj) in stop or isinstance(obj, SHARED):
            continue
        seen.add(id(obj))
        count += gc.is_tracked(obj)
        todo.extend(gc.get_referents(obj))
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refreshes", type=int, default=200)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    from streamlit.testing.v1 import AppTest

    from ui.event_feed import FEED

    full: list[float] = []
    started: list[float] = []

    def note(phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started.append(time.perf_counter())
            else:
                full.append(time.perf_counter() - started[-1])

    gc.callbacks.append(note)
    print(f"load average at start: {load()}; collector thresholds {gc.get_threshold()}")
    store = Store(fixtures.HOME / FILE_NAME)
    lease_s = Settings(home=fixtures.HOME).run_lease_s
    small, _ = fixtures.make_run(store, args.steps, 100)
    fixtures.time_app_test(store, small, 2)  # the app's first script run: a small run
    run_id, _ = fixtures.make_run(store, args.steps, args.messages)
    copy = store.messages(run_id)  # the bench's own copy, as bench/ui_latency.py keeps it
    fixtures.time_app_test(store, run_id, 5)
    live_id, plan = fixtures.make_run(
        store, args.steps, args.messages, question="live", ended=False, lease_s=lease_s
    )
    holder = fixtures.LeaseHolder(fixtures.HOME / FILE_NAME, live_id, lease_s)
    try:
        events = fixtures.LiveEvents(store, live_id, args.steps, plan[str(args.steps)]["agent"])
        at = AppTest.from_file(str(fixtures.ROOT / "app.py"), default_timeout=60)
        at.query_params["run"] = live_id
        at.run()
        at.switch_page("app_pages/run.py").run()
        before = len(full)
        walls = []
        for _ in range(args.refreshes):
            events.log_next()
            t0 = time.perf_counter()
            at.run()
            walls.append(time.perf_counter() - t0)
        assert not at.exception, [e.value for e in at.exception]
    finally:
        holder.close()
    print(
        f"{args.refreshes} live refreshes at {args.messages:,} messages: median "
        f"{statistics.median(walls) * 1000:.1f} ms, p95 {percentile(walls, 95) * 1000:.1f} ms, "
        f"max {max(walls) * 1000:.1f} ms"
    )
    print(
        f"full collections during them: {len(full) - before}, "
        f"{[round(d * 1000, 1) for d in full[before:]]} ms"
    )
    print(f"objects the collector tracks: {len(gc.get_objects()):,}")
    print(f"  reachable from the event feed (the app's): {reachable([FEED], set()):,}")
    print(f"  reachable from the bench's copy of the messages: {reachable([copy], {id(FEED)}):,}")
    t0 = time.perf_counter()
    gc.collect()
    print(f"one gc.collect(): {(time.perf_counter() - t0) * 1000:.1f} ms")
    del copy
    t0 = time.perf_counter()
    gc.collect()
    print(f"  without the bench's copy: {(time.perf_counter() - t0) * 1000:.1f} ms")
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
