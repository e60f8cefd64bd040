"""The engine's and service's log: the standard ``logging`` module, a run id on each record.

Modules log through ``logging.getLogger(__name__)`` and never configure anything; the
entry points (the app, the CLI, a worker process) call ``configure_logging`` once with
``Settings.log_level`` (``STEPWISE_LOG_LEVEL``: DEBUG, INFO, WARNING, ERROR; WARNING by
default). Each record carries the run it belongs to, from a context variable set while a
run is driven (``run_context``): LangGraph copies the context into the threads that run
nodes, so a record made inside a node names its run too. Secrets never reach the log:
the handler's filter takes every remembered secret out of the formatted message. The
loggers still propagate, so a host's own handlers (and pytest's ``caplog``) see them.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from contextlib import contextmanager
from typing import Any, Iterator, TextIO

from graph.redaction import redact

LOGGER_NAMES = ("graph", "ui", "app_pages")
FORMAT = "%(asctime)s %(levelname)s %(name)s [run %(run_id)s] %(message)s"

_run_id: contextvars.ContextVar[str] = contextvars.ContextVar("stepwise_run_id", default="-")


@contextmanager
def run_context(run_id: str) -> Iterator[None]:
    """Records made inside the block (and in the threads it starts) name ``run_id``."""
    token = _run_id.set(run_id)
    try:
        yield
    finally:
        _run_id.reset(token)


def current_run_id() -> str:
    return _run_id.get()


_base_factory = logging.getLogRecordFactory()


def _record_with_run(*args: Any, **kwargs: Any) -> logging.LogRecord:
    record = _base_factory(*args, **kwargs)
    record.run_id = _run_id.get()
    return record


# Every record gets the run id when it is made (a logger's own filters would miss the
# records of its child loggers), so pytest's caplog and any handler see it too.
logging.setLogRecordFactory(_record_with_run)


class RedactingFilter(logging.Filter):
    """Takes every remembered secret out of a record's message, and its traceback, before
    it is written."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:  # a traceback's messages too (an MCP
            # server's error may echo the environment it was given)
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


_configured: logging.Handler | None = None


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is when a record comes, not the stream it was at
    the first configure (a test's capture, a stream redirected later)."""

    @property
    def stream(self) -> TextIO:  # noqa: D102
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:  # StreamHandler.__init__ assigns it; sys.stderr wins
        pass


def configure_logging(level: str = "WARNING") -> None:
    """One handler on stderr for Stepwise's loggers, at ``level``; called again, it only
    changes the level (a Streamlit rerun calls it on every page)."""
    global _configured
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.WARNING
    if _configured is None:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        handler.addFilter(RedactingFilter())
        for name in LOGGER_NAMES:
            logging.getLogger(name).addHandler(handler)
        _configured = handler
    for name in LOGGER_NAMES:
        logging.getLogger(name).setLevel(numeric)
