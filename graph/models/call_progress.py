"""Model calls in progress, per run, as data: waiting for a server slot, or writing.

Why: on a slow server a call may take minutes, and a page that shows nothing until it
ends makes a slow reply look like a hung run. Each call of a ``ServerChatModel`` puts a
``CallProgress`` here while it lasts (how many calls are ahead of it at the server, the
tokens so far, when they came), and the Run page's refresh reads the run's. In memory,
per process: the calls of runs executing in this process (worker threads, the default);
the words are the page's.
"""

from __future__ import annotations

import contextvars
import itertools
import threading
import time
from dataclasses import dataclass, field, replace

WAITING, SENT, WRITING = "waiting", "sent", "writing"


@dataclass
class CallProgress:
    """One model call: ``state`` is ``waiting`` (for a slot at the server, ``ahead``
    calls before it), ``sent`` (the server has it, no token yet) or ``writing``."""

    call_id: int
    run_id: str
    server: str
    model: str
    kind: str | None
    state: str = WAITING
    ahead: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    sent_at: float | None = None
    first_token_at: float | None = None
    last_token_at: float | None = None

    @property
    def tokens_per_s(self) -> float | None:
        """Tokens a second since the first one (None before a second token)."""
        if self.first_token_at is None or self.last_token_at is None or self.tokens < 2:
            return None
        span = self.last_token_at - self.first_token_at
        return (self.tokens - 1) / span if span > 0 else None

    def seconds(self, now: float | None = None) -> float:
        return (now or time.monotonic()) - self.started


class CallRegistry:
    """The process's calls in progress; each entry is changed only by its own call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, CallProgress] = {}
        self._ids = itertools.count(1)

    def begin(self, run_id: str, server: str, model: str, kind: str | None) -> CallProgress:
        progress = CallProgress(next(self._ids), run_id, server, model, kind)
        with self._lock:
            self._calls[progress.call_id] = progress
        return progress

    def end(self, progress: CallProgress) -> None:
        with self._lock:
            self._calls.pop(progress.call_id, None)

    def waiting(self, progress: CallProgress, ahead: int) -> None:
        with self._lock:
            progress.state, progress.ahead = WAITING, ahead

    def sent(self, progress: CallProgress) -> None:
        with self._lock:
            progress.state, progress.ahead = SENT, 0
            progress.sent_at = time.monotonic()
            progress.tokens, progress.first_token_at, progress.last_token_at = 0, None, None

    def token(self, progress: CallProgress, count: int = 1) -> None:
        """``count`` more tokens came in (a streamed chunk)."""
        now = time.monotonic()
        with self._lock:
            progress.state = WRITING
            progress.tokens += count
            if progress.first_token_at is None:
                progress.first_token_at = now
            progress.last_token_at = now

    def for_run(self, run_id: str) -> list[CallProgress]:
        """Copies of the run's calls in progress, oldest first."""
        with self._lock:
            return [replace(c) for c in self._calls.values() if c.run_id == run_id]

    def all(self) -> list[CallProgress]:
        with self._lock:
            return [replace(c) for c in self._calls.values()]


CALLS = CallRegistry()

# The call the current thread works for (set by the model adapter, copied into the
# call's worker thread), so the request it sends can say what it receives.
CURRENT_CALL: contextvars.ContextVar[CallProgress | None] = contextvars.ContextVar(
    "stepwise_call_progress", default=None
)
