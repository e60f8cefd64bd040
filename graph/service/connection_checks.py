"""*Test connection* in the background: a check of a model server runs on a thread of its
own, so the page that started it is never blocked (a server that does not answer used to
grey the Model page for a minute), says where it is, can be cancelled, and is bounded.

The page keeps the ``ConnectionCheck`` in its session and polls it; the thread never
touches Streamlit. Cancelled or out of time, the check reports at once what it found so
far; a request still in flight ends by its own timeout (never past the bound).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

from graph.models.modes import ModeBook
from graph.models.probe import ServerReport, check_server, new_report
from graph.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_BOUND_S = 15.0


class ConnectionCheck:
    """One check of the server a profile names, started at once on a daemon thread."""

    def __init__(
        self, profile: str, settings: Settings, modes: ModeBook, bound_s: float = DEFAULT_BOUND_S
    ):
        self.profile = profile
        self.bound_s = bound_s
        self.started = time.monotonic()
        self.step = "starting"
        self._stop = threading.Event()
        self._done = threading.Event()
        self._report = new_report(settings)  # filled in by the thread as it goes
        self._thread = threading.Thread(
            target=self._run, args=(settings, modes), name="stepwise-connection-check", daemon=True
        )
        self._thread.start()

    def _run(self, settings: Settings, modes: ModeBook) -> None:
        try:
            check_server(
                settings,
                modes,
                bound_s=self.bound_s,
                stop=self._stop,
                progress=self._progress,
                report=self._report,
            )
        except Exception as exc:  # a bug, not a server's answer: say it, never a traceback
            log.exception("connection check of %s failed", self.server)
            self._report.error = settings.redact(f"The check itself failed: {exc}")
        finally:
            self._done.set()

    @property
    def server(self) -> str:
        return self._report.server

    def _progress(self, step: str) -> None:
        self.step = step

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    @property
    def running(self) -> bool:
        """Still going: neither finished, cancelled, nor past its bound."""
        return not (self._done.is_set() or self._stop.is_set() or self.elapsed_s > self.bound_s)

    def cancel(self) -> None:
        """Stop before the next request; the report says it was cancelled."""
        self._stop.set()

    def progress_line(self) -> str:
        """Where the check is, in words, for the page to show while it runs."""
        return (
            f"Testing {self.server}: {self.step}… "
            f"({self.elapsed_s:.0f} s, gives up after {self.bound_s:g} s)"
        )

    def report(self) -> ServerReport | None:
        """The report once the check has ended, been cancelled or run out of time; None
        while it runs. Cancelled or out of time, it says so and holds what was found."""
        if self._done.is_set():
            return self._report
        if self.running:
            return None
        found = dataclasses.replace(self._report, models=list(self._report.models))
        if not found.stopped:
            found.stopped = (
                f"Cancelled while {self.step}."
                if self._stop.is_set()
                else f"Gave up after {self.bound_s:g} s, while {self.step}."
            )
        return found

    def wait(self, timeout: float | None = None) -> ServerReport | None:
        """Block until the thread ends (for tests and the command line)."""
        self._done.wait(timeout)
        return self.report()
