"""A total deadline and a size cap on a request to an outside server, whatever it sends.

Why: an HTTP client's read timeout starts again with every byte, so a server dripping a
byte a second held the Server page's console for minutes, and a client reads a reply of
any size into memory (a 100 MB model list added 426 MB to the app on the Model page).
Inside ``bounded(...)``, each request sent through a ``BoundedTransport`` (one for
``httpx``, which ``langgraph-sdk`` uses, one for the openai client's ``httpx2``) is cut
when the deadline comes (its socket shut, found through httpcore's ``trace`` extension:
a client without keep-alive opens its own connection per request) or when its body
passes the cap; the caller says which in words (``Bounds.why``). Outside ``bounded``,
the transports pass requests through unchanged (the run streams of LangGraph Server).
"""

from __future__ import annotations

import contextvars
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import httpx
import httpx2

from graph.errors import StepwiseError


class PastBounds(StepwiseError, RuntimeError):
    """A reply cut by its bounds: ``Bounds.why`` says how, in words."""


class OpenedSockets:
    """The sockets a call opened (httpcore's ``trace`` hook), to shut when it is given
    up: shutting wakes a thread blocked reading one. One opened after that is shut at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.closed = False

    def trace(self, event: str, info: dict) -> None:
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with self._lock:
                    self._sockets.append(sock)
                    if self.closed:
                        _shut(sock)

    def shut(self) -> None:
        with self._lock:
            self.closed = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)


class Bounds:
    """One call's deadline (seconds from its start) and cap (bytes of one reply body)."""

    def __init__(self, deadline_s: float, cap_bytes: int) -> None:
        self.deadline_s = deadline_s
        self.cap_bytes = cap_bytes
        self.ends_at = time.monotonic() + deadline_s
        self.expired = False
        self.too_large = False
        self.sockets = OpenedSockets()
        self.trace = self.sockets.trace

    def expire(self) -> None:
        """The deadline came: shut what the call opened, which wakes a blocked read."""
        self.expired = True
        self.sockets.shut()

    def left_s(self) -> float:
        return self.ends_at - time.monotonic()

    def check(self, received: int) -> None:
        if received > self.cap_bytes:
            self.too_large = True
            raise PastBounds(f"a reply over {self.cap_bytes:,} bytes")
        if self.expired or self.left_s() <= 0:
            self.expired = True
            raise PastBounds(f"no whole reply within {self.deadline_s:g} s")

    @property
    def why(self) -> str | None:
        """What cut the call, completing "The server ...", or None when nothing did."""
        if self.too_large:
            return f"sent more than {megabytes(self.cap_bytes)}, so the reply was not read"
        if self.expired:
            return f"did not send its whole reply within {self.deadline_s:g} s"
        return None


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:g} MB" if size >= 1_000_000 else f"{size // 1000:,} KB"


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


_bounds: contextvars.ContextVar[Bounds | None] = contextvars.ContextVar(
    "stepwise_http_bounds", default=None
)


@contextmanager
def bounded(deadline_s: float, cap_bytes: int) -> Iterator[Bounds]:
    """Requests sent inside through a ``BoundedTransport`` end by ``deadline_s`` and
    read at most ``cap_bytes`` a reply."""
    bounds = Bounds(deadline_s, cap_bytes)
    token = _bounds.set(bounds)
    timer = threading.Timer(max(deadline_s, 0.0), bounds.expire)
    timer.daemon = True
    timer.start()
    try:
        yield bounds
    finally:
        timer.cancel()
        _bounds.reset(token)


def _chunks(inner: Any, bounds: Bounds) -> Iterator[bytes]:
    received = 0
    for chunk in inner:
        received += len(chunk)
        bounds.check(received)
        yield chunk


def _read_timeout(request: Any, bounds: Bounds) -> None:
    """No single wait of the request longer than the time left."""
    timeout = request.extensions.get("timeout")
    left = max(bounds.left_s(), 0.01)
    if isinstance(timeout, dict):
        request.extensions["timeout"] = {
            k: (left if v is None else min(v, left)) for k, v in timeout.items()
        }


class _Stream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, bounds: Bounds) -> None:
        self._inner, self._bounds = inner, bounds

    def __iter__(self) -> Iterator[bytes]:
        yield from _chunks(self._inner, self._bounds)

    def close(self) -> None:
        self._inner.close()


class _Stream2(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, bounds: Bounds) -> None:
        self._inner, self._bounds = inner, bounds

    def __iter__(self) -> Iterator[bytes]:
        yield from _chunks(self._inner, self._bounds)

    def close(self) -> None:
        self._inner.close()


def _send(send: Callable[[Any], Any], request: Any, stream: Callable[[Any, Bounds], Any]) -> Any:
    """``send(request)``, bounded when inside ``bounded``: the deadline and the cap."""
    bounds = _bounds.get()
    if bounds is None:
        return send(request)
    bounds.check(0)
    request.extensions = {**request.extensions, "trace": bounds.trace}
    _read_timeout(request, bounds)
    response = send(request)
    response.stream = stream(response.stream, bounds)
    return response


class BoundedTransport(httpx.HTTPTransport):
    """``httpx``'s transport, bounded inside ``bounded``. No keep-alive: see the module."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(limits=httpx.Limits(max_keepalive_connections=0), **kwargs)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _send(super().handle_request, request, _Stream)


class BoundedTransport2(httpx2.HTTPTransport):
    """The same for ``httpx2``, the openai client's HTTP library."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(limits=httpx2.Limits(max_keepalive_connections=0), **kwargs)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return _send(super().handle_request, request, _Stream2)
