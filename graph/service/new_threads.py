"""Checkpoint threads known to hold nothing yet: a run this process just started (a new
id, recorded and leased here) while its first leg is driven here.

LangGraph reads a thread's latest checkpoint as a stream starts, and each subgraph's
(its namespace named by its task) as it starts: on PostgreSQL each a round trip, which on
a new run always finds nothing. While such a run is driven, nothing but its own stream
writes its checkpoints (another process writes them only once it has taken the lease
over, and this one then fails its next node or write: ``leases.py``), so a namespace
this process has not begun writing to is still empty: the read is answered here with
nothing. Once a checkpoint or a write of that namespace has been begun, and after the
leg, reads go to the checkpointer.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

from langchain_core.runnables import RunnableConfig


class NewThreads:
    """The threads being driven here that held no checkpoint when their leg began, and
    the namespaces of each written to since."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._written: dict[str, set[str]] = {}

    @contextmanager
    def driving(self, thread_id: str, new: bool = True) -> Iterator[None]:
        """While the block runs, ``thread_id`` (``new``: started here, held by this
        process, its first leg) is driven here; a thread not new is not kept."""
        if not new:
            yield
            return
        with self._lock:
            self._written[thread_id] = set()
        try:
            yield
        finally:
            with self._lock:
                self._written.pop(thread_id, None)

    def writing(self, config: RunnableConfig) -> None:
        """A checkpoint or writes of ``config``'s namespace are about to be written."""
        thread, ns = _where(config)
        with self._lock:
            written = self._written.get(thread or "")
            if written is not None:
                written.add(ns)

    def empty(self, config: RunnableConfig) -> bool:
        """Whether ``config``'s namespace is known to hold no checkpoint."""
        thread, ns = _where(config)
        with self._lock:
            written = self._written.get(thread or "")
            return written is not None and ns not in written


def _where(config: RunnableConfig) -> tuple[str | None, str]:
    configurable = config.get("configurable") or {}
    return configurable.get("thread_id"), str(configurable.get("checkpoint_ns") or "")
