"""What closed browser tabs hold, given back when their session's time is up (issue 33,
point 3).

Streamlit keeps a closed tab's session for ``server.disconnectedSessionTTL`` seconds (120
by default) in case the tab reconnects, in a TTL cache that, as its own docstring says,
removes an expired entry only when the cache is next written (another tab's disconnect),
its length is asked, or ``expire()`` is called, and then just drops it: the session is
never shut down (its uploaded files, media and dataframe sources stay registered with the
runtime under its id). An app left alone after a class closed its tabs kept every one of
them: ``bench/app_memory.py`` measured +25 MB at 120 s against +6 to +8 MB at 30 s, and
no later page load gave it back (the sessions dropped at a disconnect were garbage no
collection looked for before the next script run).

So a timer (``start``, once per process, from ``app.py``; a daemon thread) looks every
``CHECK_S`` seconds: sessions whose time is up are taken out of Streamlit's session
storage (under the session manager's own lock, as Streamlit moves sessions in and out of
it), each shut down as Streamlit shuts down a closed session it does not keep; then one
full collection and ``malloc_trim`` (``ui/native_heap.py``) give their memory back. A
session is taken only once its TTL has passed, when Streamlit would no longer resume it
anyway (its cache reports an expired entry as absent), so nothing a user could get back
is lost.

No public API lists or expires stored sessions: this reaches into Streamlit's runtime
(``Runtime.instance()._session_mgr``, its ``_storage_lock`` and the storage's TTL cache;
Streamlit pinned in requirements.txt). If they are not there, a warning is logged once and
the looks stop: the app works as before; ``tests/e2e/test_session_expiry_in_browser.py`` fails on
such a Streamlit. No page wording here.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ui import collector, native_heap

log = logging.getLogger(__name__)

CHECK_S = 5.0  # seconds between two looks for sessions whose time is up (a dict lookup)

_lock = threading.Lock()
_started = False  # the looks have begun in this process


class StreamlitChanged(RuntimeError):
    """Streamlit's runtime no longer has the parts this module reaches into."""


def _storage() -> tuple[Any, threading.Lock] | None:
    """Streamlit's TTL cache of closed sessions and the lock that guards moves in and out
    of it; None while no runtime exists (a script run outside ``streamlit run``)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    manager = getattr(Runtime.instance(), "_session_mgr", None)
    storage = getattr(manager, "_session_storage", None)
    cache = getattr(storage, "_cache", None)
    lock = getattr(manager, "_storage_lock", None)
    if cache is None or lock is None or not callable(getattr(cache, "expire", None)):
        raise StreamlitChanged(
            "Streamlit's session manager has no session storage with a TTL cache and a "
            "storage lock (its internals changed)"
        )
    return cache, lock


def expire_closed_sessions() -> int:
    """One look: the closed sessions whose TTL has passed taken out of Streamlit's storage
    and shut down, then their memory collected and given back. How many were taken."""
    found = _storage()
    if found is None:
        return 0
    cache, lock = found
    with lock:
        removed = cache.expire()
    if not removed:
        return 0
    count = len(removed)
    started = time.perf_counter()
    for session_id, info in removed:
        try:
            info.session.shutdown()
        except Exception:  # one session's cleanup failing must not keep the others
            log.exception("closed session %s could not be shut down", session_id)
    del removed, info  # the last references to them: the collection below frees them
    collected = collector.collect_now()
    native_heap.give_back()
    log.info(
        "%d closed session(s) past their TTL shut down; a full collection found %d "
        "unreachable objects (%.3f s)",
        count,
        collected,
        time.perf_counter() - started,
    )
    return count


def _look(check_s: float) -> None:
    """One look, then the next one scheduled ``check_s`` later (a timer: nothing here
    waits); none after Streamlit's parts were found missing."""
    try:
        expire_closed_sessions()
    except StreamlitChanged as error:
        log.warning("closed sessions are left to Streamlit: %s", error)
        return
    except Exception:
        log.exception("looking for closed sessions past their TTL failed; looking again later")
    _schedule(check_s)


def _schedule(check_s: float) -> None:
    timer = threading.Timer(check_s, _look, args=(check_s,))
    timer.name = "stepwise-session-expiry"
    timer.daemon = True
    timer.start()


def start(check_s: float = CHECK_S) -> bool:
    """The looks begin, once per process. Whether this call began them."""
    global _started
    with _lock:
        if _started:
            return False
        _started = True
    _schedule(check_s)
    return True
