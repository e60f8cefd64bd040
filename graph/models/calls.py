"""One model call, bounded: a total deadline, the user's Stop, and its failures in words.

Why: the HTTP client's read timeout starts again with every byte, so a server dripping
one byte every few seconds held a call (its run, and the Stop button) for minutes, and a
server that never answers held it for the timeout times the retries. Here the call runs
in a worker thread while the caller watches Stop and the deadline; when either comes,
the caller gives up at once and the call's socket is shut, so the worker ends too.

The socket is found through httpcore's ``trace`` extension (public API) on a client
without keep-alive: each request opens its own connection, so the connection a call
waits on is the one it opened. One TCP connect per model call is nothing next to a
model's answer.

A read timeout is never retried: it comes after the whole request was written, and a
single-slot server (llama-cpp-python) keeps generating a request its client left, so a
copy sent again would queue behind it, and every later call behind both.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import threading
import time
from functools import lru_cache
from typing import Any, Callable, Iterator, TypeVar

import httpx2 as httpx  # the HTTP library of the openai client (its fork of httpx)

from graph.errors import StepwiseError
from graph.models.call_progress import CallProgress
from graph.models.http_bounds import OpenedSockets
from graph.redaction import redact, redact_data
from graph.stopping import Stopped, stop_requested

T = TypeVar("T")

log = logging.getLogger(__name__)

_POLL_S = 0.05  # how often the waiting side looks at Stop and the deadline
# The most one reply may send on the wire: a streamed reply at the reply cap
# (STEPWISE_MAX_REPLY_CHARS) in one-token events takes a few MB; a server sending 100 MB
# is cut instead of read into memory.
REPLY_BYTES = 32_000_000


class ModelCallError(StepwiseError, RuntimeError):
    """A model call that failed, its message already a sentence saying what the server
    did; the run's reason as it stands."""


class _Call:
    """What one model call has opened, and whether it was given up."""

    def __init__(self) -> None:
        self.sockets = OpenedSockets()
        self.answer_started = False  # the current attempt's response headers came in
        self.too_large = False  # a reply passed REPLY_BYTES

    @property
    def abandoned(self) -> bool:
        return self.sockets.closed

    def trace(self, event: str, info: dict) -> None:
        """httpcore's trace hook: remember the socket, and when the answer began."""
        self.sockets.trace(event, info)
        if event == "http11.receive_response_headers.complete":
            self.answer_started = True

    def abandon(self) -> None:
        """Give the call up: no further attempt starts, and open sockets are shut (which
        wakes a worker blocked reading them)."""
        self.sockets.shut()


_current_call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar(
    "stepwise_model_call", default=None
)


class TimedOutAfterSending(StepwiseError, RuntimeError):
    """A read timeout on a request the server has whole: not an error the openai client
    knows, so it is not retried (it retries its own timeouts). Sending the request again
    would queue a second copy behind the first on a single-slot server that is still
    generating the abandoned one (it does not stop when the client leaves)."""

    def __init__(self, timeout_s: float | None, answer_started: bool) -> None:
        super().__init__(f"no answer within {timeout_s} s after the request was sent")
        self.timeout_s = timeout_s
        self.answer_started = answer_started


def _read_timeout(request: httpx.Request) -> float | None:
    timeout = request.extensions.get("timeout")
    return timeout.get("read") if isinstance(timeout, dict) else None


class _NoResendStream(httpx.SyncByteStream):
    """A reply's body whose read timeout is ``TimedOutAfterSending``."""

    def __init__(self, inner: httpx.SyncByteStream, request: httpx.Request) -> None:
        self._inner = inner
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        try:
            for chunk in self._inner:
                received += len(chunk)
                if received > REPLY_BYTES:
                    self._too_large()
                yield chunk
        except httpx.ReadTimeout:
            raise TimedOutAfterSending(_read_timeout(self._request), True) from None

    def _too_large(self) -> None:
        call = _current_call.get()
        if call is not None:
            call.too_large = True
            call.abandon()  # no retry of it either
        raise httpx.ReadError(f"a reply over {REPLY_BYTES:,} bytes", request=self._request)

    def close(self) -> None:
        self._inner.close()


class _TracedTransport(httpx.HTTPTransport):
    """Attaches the current call's trace hook to each request it sends, and lets no read
    timeout be retried: a read timeout comes after the whole request was written (a
    connection refused or a connect timeout comes before, and is retried as before)."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        call = _current_call.get()
        if call is not None:
            if call.abandoned:  # the client's own retry after the call was given up
                raise httpx.ConnectError("the model call was abandoned", request=request)
            call.answer_started = False
            request.extensions = {**request.extensions, "trace": call.trace}
        try:
            response = super().handle_request(request)
        except httpx.ReadTimeout:
            raise TimedOutAfterSending(_read_timeout(request), False) from None
        assert isinstance(response.stream, httpx.SyncByteStream)  # a sync transport's
        response.stream = _NoResendStream(response.stream, request)
        return response


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@lru_cache(maxsize=1)
def traced_http_client() -> httpx.Client:
    """The HTTP client of every server model: the OpenAI client's defaults, no keep-alive.
    With a proxy in the environment, the client's own (which honours it): Stop and the
    deadline still end the call at once, only its socket is left to the read timeout, and
    a read timeout is retried as the openai client does (``STEPWISE_MAX_RETRIES=0`` there
    for a single-slot server)."""
    import openai  # only a server model gets here (graph.models.lazy)

    if any(os.environ.get(v) or os.environ.get(v.lower()) for v in _PROXY_VARIABLES):
        return openai.DefaultHttpxClient()
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=0)
    return openai.DefaultHttpxClient(transport=_TracedTransport(limits=limits))


def bounded_call(
    fn: Callable[[], T],
    *,
    deadline_s: float,
    server: str,
    stall_s: float | None = None,
    progress: CallProgress | None = None,
    what: str = "",
) -> T:
    """``fn()`` (one model call), given up when the user presses Stop (``Stopped``),
    after ``deadline_s`` seconds (``ModelCallError``; ``what``: the call's kind, said),
    or, once tokens come (``progress``, a streamed reply), when none has come for
    ``stall_s`` seconds: a reply still arriving is never cut by that clock. An answer cut
    off after it began becomes a ``ModelCallError`` saying so. Giving up shuts the call's
    socket, which a streaming server notices at its next token and stops writing."""
    call = _Call()
    context = contextvars.copy_context()  # the run's config, callbacks and Stop signal
    context.run(_current_call.set, call)
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = context.run(fn)
        except BaseException as exc:  # handed to the waiting side, raised there
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="stepwise-model-call", daemon=True).start()
    deadline = time.monotonic() + deadline_s
    while not done.wait(_POLL_S):
        if stop_requested():
            call.abandon()
            raise Stopped("a model call")
        now = time.monotonic()
        if now >= deadline:
            call.abandon()
            log.warning("model call to %s given up at its cap of %g s", server, deadline_s)
            raise ModelCallError(
                f"The model call{f' ({what})' if what else ''} to {server} took longer than "
                f"{deadline_s:g} s, so it was given up (STEPWISE_MODEL_CALL_DEADLINE)."
            )
        last = progress.last_token_at if progress is not None else None
        if stall_s and last is not None and now - last >= stall_s:
            call.abandon()
            log.warning("model call to %s stalled: no token for %g s", server, stall_s)
            raise ModelCallError(
                f"The model server at {server} stopped writing: no new token for "
                f"{stall_s:g} s after {progress.tokens if progress else 0} token(s), so the "
                "call was given up "
                "and not sent again (STEPWISE_STALL_TIMEOUT)."
            )
    error = outcome.get("error")
    if error is None:
        return outcome["value"]
    import openai  # only a server model's calls are bounded (graph.models.lazy)

    if call.too_large:
        raise ModelCallError(
            f"The model server at {server} sent more than {REPLY_BYTES // 1_000_000} MB for "
            "one reply, so it was given up and not read."
        ) from None
    if isinstance(error, TimedOutAfterSending) and not error.answer_started:
        within = f" within {error.timeout_s:g} s" if error.timeout_s else ""
        raise ModelCallError(
            f"The model server at {server} did not answer{within} (STEPWISE_REQUEST_TIMEOUT); "
            "the request was not sent again, since the server may still be working on it."
        ) from None
    if isinstance(error, TimedOutAfterSending) or (
        isinstance(error, openai.APIConnectionError) and call.answer_started
    ):
        how = (
            "nothing more came before the read timeout"
            if isinstance(error, (openai.APITimeoutError, TimedOutAfterSending))
            else "the connection closed before the reply was complete"
        )
        raise ModelCallError(
            f"The model server at {server} stopped sending mid-answer: {how}."
        ) from None
    raise error


def scrub_error(exc: BaseException, secrets: list[str]) -> None:
    """Take secrets out of an exception's text, in place: a server's error may echo the
    request's Authorization header, and a failed node's exception is stored in its
    checkpoint (by its ``repr``) and may be shown."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in current.args)
        loose: Any = current  # any exception class may carry these (openai's do)
        if isinstance(getattr(loose, "message", None), str):
            loose.message = redact(loose.message, secrets)
        if getattr(loose, "body", None) is not None:
            loose.body = (
                redact_data(loose.body) if not isinstance(loose.body, str) else redact(loose.body)
            )
        current = current.__cause__ or current.__context__


def unreadable_reply(exc: BaseException) -> str | None:
    """What was wrong with a reply the client could not read, in words (completing "The
    model server at ... "), or None when ``exc`` is not about the reply. The body itself
    says it best when the client kept it (``exc.response``); else the error's kind."""
    body = getattr(getattr(exc, "response", None), "content", None)
    if isinstance(body, bytes):
        return what_body_is(body)
    if isinstance(exc, RecursionError):
        return "sent a reply nested too deeply to read"
    if isinstance(exc, UnicodeDecodeError):
        return "sent a reply that is not valid UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return what_body_is(exc.doc.encode())
    text = str(exc)
    if isinstance(exc, (KeyError, TypeError)) and "choices" in text:
        return _NO_CHOICES
    inner = exc.args[0] if isinstance(exc, ValueError) and exc.args else None
    if isinstance(inner, dict):  # an "error" object inside an HTTP 200 reply
        message = inner.get("message") if isinstance(inner.get("message"), str) else ""
        return "answered with an error instead of a chat completion" + (
            f": {message}" if message else ""
        )
    return None


_NO_CHOICES = "sent a chat completion without any choices (no answer in it)"


def what_body_is(body: bytes) -> str:
    if not body.strip():
        return "sent an empty reply where a chat completion was expected"
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        return "sent a reply that is not valid UTF-8 text"
    except RecursionError:
        return "sent a reply nested too deeply to read"
    except ValueError:
        return "sent a reply that is not JSON where a chat completion was expected"
    if not isinstance(data, dict):
        return "sent JSON that is not a chat completion"
    if isinstance(data.get("error"), dict):
        message = data["error"].get("message")
        return "answered with an error instead of a chat completion" + (
            f": {message}" if isinstance(message, str) and message else ""
        )
    choices = data.get("choices")
    if choices == []:
        return "sent a chat completion with an empty list of choices (no answer in it)"
    if not isinstance(choices, list):
        return _NO_CHOICES
    return "sent a chat completion whose parts are not where they belong"
