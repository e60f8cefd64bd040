"""The Stop button, as seen from inside work in progress.

A user's Stop drains the graph at the next superstep boundary (``StopSignal``),
which is enough between nodes but not while a node waits on a model server that drips
bytes or a SQL query that never ends. Such waits poll ``stop_requested()`` (or wait on
``stop_event()``) and raise ``Stopped``; the run then ends ``cancelled`` and resumes
from the node's last checkpoint.

The signal travels in a context variable set by whoever drives the run: LangGraph
copies the context into every node and tool it runs, so models and tools (the lowest
layers) read it without any parameter passed through the systems. A redirect (a
follow-up message) stops at the boundary too but lets work in progress finish: it is
not a Stop.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from graph.errors import StepwiseError

_current: ContextVar[threading.Event | None] = ContextVar("stepwise_stop", default=None)


class Stopped(StepwiseError):
    """The user pressed Stop while this work was in progress."""

    def __init__(self, what: str = "the work in progress"):
        super().__init__(f"Stopped by the user during {what}.")


@contextmanager
def stoppable(event: threading.Event | None) -> Iterator[None]:
    """Within this block, ``event`` being set means the user asked to stop."""
    token = _current.set(event)
    try:
        yield
    finally:
        _current.reset(token)


def stop_event() -> threading.Event | None:
    """The stop signal of the run this code works for, if any."""
    return _current.get()


def stop_requested() -> bool:
    """True when the user pressed Stop (not when the run is only being redirected)."""
    event = _current.get()
    return bool(event is not None and event.is_set() and not getattr(event, "redirecting", False))


def check_stop(what: str = "the work in progress") -> None:
    """Raise ``Stopped`` if the user asked to stop."""
    if stop_requested():
        raise Stopped(what)
