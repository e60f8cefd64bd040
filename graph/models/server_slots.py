"""How many calls a model server is given at once, and a queue in the client for the rest.

Why: llama-cpp-python's server serves one request at a time. A second request sent while
it writes does not run beside the first: it waits inside the server, where its clock is
already running, and (with the server's ``interrupt_requests``, on by default) cuts the
stream being written short. Runs, experiments and the judge all call the same server, so
the calls queue here instead, per server URL, in the order they came, and a call waiting
says how many calls are ahead of it (``graph.models.call_progress``).

The number is set (``STEPWISE_MODEL_SERVER_SLOTS``) or learnt once per process from the
server: llama.cpp's own server says its ``total_slots`` at ``/props``; llama-cpp-python's
names itself in ``/openapi.json`` (one at a time). Any other server is not limited: the
setting says it for one that should be.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Callable

import httpx2 as httpx  # the openai client's HTTP library

from graph.models.http_bounds import BoundedTransport2, PastBounds, bounded
from graph.models.modes import OPENAI_API

log = logging.getLogger(__name__)

_POLL_S = 0.05
_PROBE_TIMEOUT_S = 3.0
_PAGE_BYTES = 1_000_000  # /props or /openapi.json: a few KB on the servers that have them


class ServerSlots:
    """A first-come-first-served gate of ``limit`` calls at once (None: no limit)."""

    def __init__(self, server: str, limit: int | None, why: str) -> None:
        self.server = server
        self.limit = limit
        self.why = why
        self._cond = threading.Condition()
        self._running = 0
        self._queue: deque[object] = deque()

    def acquire(self, on_wait: Callable[[int], None], check_stop: Callable[[], None]) -> None:
        """Wait for a slot. ``on_wait(ahead)`` is told the calls before this one (those
        running and those queued first) while it waits; ``check_stop`` raises to give up."""
        if self.limit is None:
            return
        ticket = object()
        told = None
        with self._cond:
            self._queue.append(ticket)
            try:
                while True:
                    if self._queue[0] is ticket and self._running < self.limit:
                        self._queue.popleft()
                        self._running += 1
                        return
                    ahead = self._running + self._queue.index(ticket)
                    if ahead != told:
                        if told is None:
                            log.info("waiting for %s: %d call(s) ahead", self.server, ahead)
                        on_wait(ahead)
                        told = ahead
                    check_stop()
                    self._cond.wait(_POLL_S)
            except BaseException:
                self._queue.remove(ticket)
                self._cond.notify_all()
                raise

    def release(self) -> None:
        if self.limit is None:
            return
        with self._cond:
            self._running -= 1
            self._cond.notify_all()


_lock = threading.Lock()
_learnt: dict[str, tuple[int | None, str]] = {}
_gates: dict[tuple[str, int | None], ServerSlots] = {}


def slots_for(server: str, configured: int = 0) -> ServerSlots:
    """The process's gate for ``server``: ``configured`` calls at once, or (0) what the
    server was found to take."""
    server = server.rstrip("/")
    with _lock:
        limit: int | None
        if configured > 0:
            limit, why = configured, "set (STEPWISE_MODEL_SERVER_SLOTS)"
        else:
            if server not in _learnt:
                _learnt[server] = learn_slots(server)
            limit, why = _learnt[server]
        gate = _gates.get((server, limit))
        if gate is None:
            gate = _gates[(server, limit)] = ServerSlots(server, limit, why)
        return gate


def learn_slots(server: str) -> tuple[int | None, str]:
    """How many calls ``server`` serves at once, and how that was found (no key is sent:
    these pages are public on the servers that have them)."""
    if server == OPENAI_API:
        return None, "OpenAI's API: not limited"
    root = server[: -len("/v1")] if server.endswith("/v1") else server
    try:  # a total deadline and a size cap: a server dripping or sending gigabytes
        with (
            bounded(2 * _PROBE_TIMEOUT_S, _PAGE_BYTES),
            httpx.Client(
                timeout=_PROBE_TIMEOUT_S, trust_env=False, transport=BoundedTransport2()
            ) as client,
        ):
            props = _json(client, f"{root}/props")
            slots = props.get("total_slots") if isinstance(props, dict) else None
            if isinstance(slots, int) and slots > 0:
                return slots, f"the server's /props says {slots} slot(s)"
            spec = _json(client, f"{root}/openapi.json")
    except (httpx.HTTPError, PastBounds) as exc:
        log.info("could not ask %s how many calls it serves at once: %s", server, exc)
        return None, "not learnt (the server did not say)"
    info = spec.get("info") if isinstance(spec, dict) else None
    title = info.get("title") if isinstance(info, dict) else None
    if isinstance(title, str) and "llama.cpp python" in title.lower():
        return 1, "llama-cpp-python's server serves one call at a time"
    return None, "not limited (the server did not say; STEPWISE_MODEL_SERVER_SLOTS sets it)"


def _json(client: httpx.Client, url: str) -> object:
    response = client.get(url)
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def forget_slots() -> None:
    """Learn again (tests; a server replaced by another on the same address)."""
    with _lock:
        _learnt.clear()
        _gates.clear()
