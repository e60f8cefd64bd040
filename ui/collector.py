"""How the app process runs Python's garbage collector (issue 33, point 7): the app's
modules are loaded with no collection.

Python's cyclic collector walks every container object the process holds each time it
collects its oldest generation, which it does whenever that generation has grown by a
quarter since the last time. Streamlit, LangGraph, LangChain, pydantic and the app's own
modules are about 165,000 such objects once the first page is drawn, all kept until the
process ends: while they load (the process's first script run, before the first page's
heading), the collector kept walking them, finding next to nothing (0.36 s of a 2.0 s
first run in one measurement; 0.15 s of its CPU saved, alternating, README).

So the first script run loads them with the collector off (``hold``) and, once it has
ended (``settle``), one collection takes the imports' garbage away and the collector is
on again, as before. They are not frozen (``gc.freeze()``): with the modules out of its
count, the collector's oldest generation is small, so a quarter of it is soon reached
and full collections came more often, each walking the runs the pages keep
(``ui.event_feed``: about 180,000 objects for two 10,000-message runs); the Run page's
p95 got worse (README, Benchmarks).

Later (``sweep``, issue 33 point 3): after a full script run (a page load, a click; not
a fragment's refresh, which does not run ``app.py``), one collection of every generation
when the last was ``SWEEP_GAP_S`` or more ago. A page run and a closed session leave
cyclic garbage (widget callbacks, the page's namespace, its rows) that only a full
collection frees, and Python starts one only when its oldest generation has grown by a
quarter: with ~270,000 objects kept, the garbage of many page loads piled up first. Its
small objects raised the high-water mark of Python's allocator (1 MiB arenas, 113 → 129
in six cycles of ``bench/app_memory.py``), and a few long-lived objects made meanwhile
kept each new arena: the app's resident memory grew by ~20 MB that no later collection
gave back. Collected after each page run, the garbage never piles up (+6 to +8 MB at a
30 s session TTL). What closed sessions hold until their TTL ends is not garbage; once it
has ended, ``ui/session_expiry`` shuts them down and collects (``collect_now``). A full collection
takes ~150 ms at this size, so at most one per ``SWEEP_GAP_S`` (a burst of clicks pays
once), and never after the first run (``settle`` has just collected).

Process-wide and idempotent: ``app.py`` calls ``hold`` before its imports, ``settle``
and ``sweep`` after every script run; ``settle`` does something on the process's first
run only. No Streamlit here.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time

log = logging.getLogger(__name__)

_lock = threading.Lock()
_held = False  # the collector was switched off by ``hold``, for ``settle`` to switch on
_settled = False  # the first script run has ended: nothing more to do in this process
SWEEP_GAP_S = 5.0  # at least this long between two full collections by ``sweep``
_last_full = 0.0  # time.monotonic() of the last full collection by ``settle`` or ``sweep``
_sweeps = 0


def hold() -> None:
    """Before the app's modules are imported: on the process's first script run, no
    collection until ``settle`` (a collector someone else switched off is left so)."""
    global _held
    with _lock:
        if _settled or _held or not gc.isenabled():
            return
        gc.disable()
        _held = True


def settle() -> None:
    """After a script run: the first time, collect once and switch the collector back on
    if ``hold`` switched it off. Later calls do nothing."""
    global _held, _settled
    with _lock:
        if _settled:
            return
        _settled = True
        held, _held = _held, False
    global _last_full
    started = time.perf_counter()
    found = gc.collect()
    _last_full = time.monotonic()
    if held:
        gc.enable()
    log.info(
        "the app's modules loaded (%d) with no collection; one collection after it took "
        "%.3f s and found %d unreachable objects",
        len(sys.modules),
        time.perf_counter() - started,
        found,
    )


def sweep() -> bool:
    """After a full script run, once ``settle`` has run: every generation collected, when
    the last full collection by this module was ``SWEEP_GAP_S`` or more ago and the
    collector is on (someone who switched it off keeps it so). Whether it collected."""
    global _last_full, _sweeps
    now = time.monotonic()
    with _lock:
        if not _settled or not gc.isenabled() or now - _last_full < SWEEP_GAP_S:
            return False
        _last_full = now
        _sweeps += 1
    started = time.perf_counter()
    found = gc.collect()
    log.debug(
        "full collection after a script run: %d unreachable objects in %.3f s",
        found,
        time.perf_counter() - started,
    )
    return True


def collect_now() -> int:
    """One full collection now, whatever the gap (``ui/session_expiry`` has just shut
    sessions down: their garbage is there), counted as the last full one, so the next
    ``sweep`` waits its gap from it. How many unreachable objects it found."""
    global _last_full
    with _lock:
        _last_full = time.monotonic()
    return gc.collect()


def sweeps() -> int:
    """How many full collections ``sweep`` has made in this process."""
    return _sweeps


def settled() -> bool:
    """Whether this process's first script run has ended."""
    return _settled
