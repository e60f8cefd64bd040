"""The app process's C heap gives freed memory back (issue 33, point 3).

What grew (``bench/app_memory.py``, 200 real runs, 8 cycles of all ten pages, README):
not Python objects (~305,000 after each cycle, the sessions all dropped after their TTL)
nor the memory glibc's malloc held in use (72 MB throughout), but the memory it held
free: 9 → 37 MB, and the resident memory with it. It lay at the tops of the heaps of
glibc's per-thread arenas (16 of them, eight per core, each grown to its own high mark by
the short-lived threads of Streamlit's script runs and the server's workers).

glibc gives a heap's free top back to the system when it exceeds the trim threshold. That
threshold starts at 128 KiB but is dynamic: each time a block from ``mmap`` is freed,
malloc raises its mmap threshold to that block's size and the trim threshold to twice it
(up to 32 and 64 MiB on 64-bit), so after a few large transient blocks (a page's rows, its
message to the browser) big blocks come from the heaps and their tops are never trimmed.
``malloc_trim(0)`` alone did not help: it trims the main arena's top and the free pages
in the arenas' bins, not the other arenas' tops (3 MB given back).

So, once per process as the app's script starts, ``fix_thresholds`` sets both thresholds
(``mallopt``), which also stops glibc moving them: blocks of ``MMAP_THRESHOLD`` and more are
mapped and unmapped on their own, and a heap's free top past ``TRIM_THRESHOLD`` is given
back when a block is freed. The arena count cannot be lowered from here: Streamlit's
server threads have made more than eight arenas before the app's first line runs, and
glibc then fixes its limit (``MALLOC_ARENA_MAX`` in the environment still sets it).
Then, after each script run, ``give_back`` calls ``malloc_trim(0)``: what the run freed in
the arenas' bins goes back to the system in whole pages (about 1 ms, 16 arenas).
A threshold set in the environment (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``)
is left alone. On a C library other than glibc nothing is done, and the log says so.
No Streamlit here.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time

log = logging.getLogger(__name__)

MMAP_THRESHOLD = 256 * 1024  # blocks this big or bigger: mapped alone, unmapped when freed
TRIM_THRESHOLD = 128 * 1024  # a heap's free top past this is given back (glibc's start value)
# mallopt's parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
ENVIRONMENT = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")

_lock = threading.Lock()
_done = False
_libc: ctypes.CDLL | None = None
_looked = False
_trims = 0


def _glibc() -> ctypes.CDLL | None:
    """The process's C library if it is glibc (looked up once, logged if not)."""
    global _libc, _looked
    with _lock:
        if _looked:
            return _libc
        _looked = True
        try:
            libc = ctypes.CDLL(None)  # the symbols the process has loaded: its C library's
            libc.gnu_get_libc_version.restype = ctypes.c_char_p
            libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            libc.mallopt.restype = ctypes.c_int
            libc.malloc_trim.argtypes = [ctypes.c_size_t]
            libc.malloc_trim.restype = ctypes.c_int
        except (OSError, AttributeError) as error:  # not glibc (musl, macOS): no such knobs
            log.info("malloc left as it is: the C library is not glibc (%s)", error)
            return None
        log.info("glibc %s", libc.gnu_get_libc_version().decode())
        _libc = libc
        return libc


def fix_thresholds() -> dict[str, int]:
    """Once per process: glibc's mmap and trim thresholds set, and no longer moved by
    malloc. Returns what was set (empty when nothing was: already done, chosen in the
    environment, not glibc, or refused); each case is logged."""
    global _done
    with _lock:
        if _done:
            return {}
        _done = True
    chosen = {name: os.environ[name] for name in ENVIRONMENT if os.environ.get(name)}
    if chosen:
        log.info("malloc's thresholds left as the environment sets them: %s", chosen)
        return {}
    libc = _glibc()
    if libc is None:
        return {}
    done = {}
    for name, param, value in (
        ("mmap", M_MMAP_THRESHOLD, MMAP_THRESHOLD),
        ("trim", M_TRIM_THRESHOLD, TRIM_THRESHOLD),
    ):
        if libc.mallopt(param, value) == 1:
            done[name] = value
        else:
            log.warning(
                "malloc's %s threshold not set: mallopt(%d, %d) refused", name, param, value
            )
    log.info("malloc's thresholds set: %s", done)
    return done


def give_back() -> bool:
    """After a script run: the free pages in malloc's arenas given back to the system
    (``malloc_trim(0)``). Whether any were; False also when not glibc (logged once)."""
    global _trims
    libc = _glibc()
    if libc is None:
        return False
    started = time.perf_counter()
    released = libc.malloc_trim(0) == 1
    with _lock:
        _trims += 1
    log.debug("malloc_trim: %s in %.1f ms", released, (time.perf_counter() - started) * 1000)
    return released


def trims() -> int:
    """How many times this process has called ``malloc_trim`` (``give_back``)."""
    return _trims
