"""Word of runs outside the app, a part of the run service (``run_host.py``): the
callbacks told when a run starts waiting for a human or a timeout answered one
(``graph/service/webhooks.py``), and each ended run's trace sent to an OTLP backend when
one is configured (``otel_export``).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Protocol

from graph.service import otel_export
from graph.service.store import Store
from graph.settings import Settings

log = logging.getLogger(__name__)

ApprovalHook = Callable[[str, str, dict | None], None]


class NoticesHost(Protocol):
    """What ``RunNotices`` uses of the run service (read each time: a test may swap its
    store)."""

    store: Store

    def thread_of(self, run_id: str) -> str: ...


class RunNotices:
    """The approval callbacks and the OTLP export of the runs of one service."""

    def __init__(self, service: NoticesHost, settings: Settings) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._approval_hooks: list[ApprovalHook] = []
        # Each ended run's spans to an OTLP backend, when one is configured (None: off).
        self.otel = otel_export.for_settings(settings)

    def on_approval(self, callback: ApprovalHook) -> None:
        """Have ``callback(kind, run_id, item)`` told when a run of this process starts
        waiting for a human (``"waiting"``, no item) or a timeout answered a question
        (``"timeout"``, the question): word outside the app (graph/service/webhooks.py).
        Called on a run's worker thread: it must return at once."""
        with self._lock:
            self._approval_hooks.append(callback)

    def tell_approval(self, kind: str, run_id: str, item: dict | None = None) -> None:
        """Tell the ``on_approval`` callbacks (a timeout answered ``item``; a run waits)."""
        for hook in list(self._approval_hooks):
            try:
                hook(kind, run_id, item)
            except Exception:  # word outside the app never stops a run
                log.exception("run %s: telling of %s failed", run_id, kind)

    def trace_out(self, run_id: str) -> None:
        """A run that has ended, sent to the OTLP backend when one is configured (once:
        a run waiting for a person is sent when it ends after the answer)."""
        if self.otel is None:
            return
        try:
            record = self.service.store.run(run_id)
            if record is not None and record.status in otel_export.ENDED:
                self.otel.export_run(self.service.store, run_id, self.service.thread_of(run_id))
        except Exception as exc:  # a trace not sent never fails the run
            log.warning("run %s: its trace could not be exported: %s", run_id, exc)
