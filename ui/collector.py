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

Process-wide and idempotent: ``app.py`` calls ``hold`` before its imports and ``settle``
after every script run; only the process's first run does anything. No Streamlit here.
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
    started = time.perf_counter()
    found = gc.collect()
    if held:
        gc.enable()
    log.info(
        "the app's modules loaded (%d) with no collection; one collection after it took "
        "%.3f s and found %d unreachable objects",
        len(sys.modules),
        time.perf_counter() - started,
        found,
    )


def settled() -> bool:
    """Whether this process's first script run has ended."""
    return _settled
