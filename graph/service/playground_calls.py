"""*Try it* in the background: the node playground's calls run on a thread of their own,
as *Test connection* does (``connection_checks``), so a slow model never holds the
Prompts page. A rerun of the page, a click elsewhere or another page never stop it; the
page keeps the ``PlaygroundCall`` in its session, polls it for how many calls are done,
and can cancel it: the call in flight ends at once (``graph.stopping``) and no more are
asked. The thread never touches Streamlit.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Callable, Sequence

from graph.service.model_profiles import ModelProfile
from graph.service.playground import PlaygroundError, PromptTry, Trial, try_node
from graph.stopping import stoppable

if TYPE_CHECKING:
    from graph.service.run_service import RunService

log = logging.getLogger(__name__)


class PlaygroundCall:
    """One *Try it*, started at once on a daemon thread; ``trial`` or ``problem`` once it
    has ended."""

    def __init__(
        self,
        service: RunService,
        run_id: str,
        checkpoint_id: str,
        prompts: Sequence[PromptTry],
        profiles: Sequence[ModelProfile],
        samples: int = 1,
    ) -> None:
        self.total = len(prompts) * len(profiles) * samples
        self.done = 0
        self.started = time.monotonic()
        self.trial: Trial | None = None
        self.problem = ""  # why there is no trial, in words
        self._stop = threading.Event()
        self._ended = threading.Event()
        ask = partial(
            try_node,
            service,
            run_id,
            checkpoint_id,
            list(prompts),
            list(profiles),
            samples,
            on_progress=self._progress,
        )
        self._thread = threading.Thread(
            target=self._run, args=(ask, run_id), name="stepwise-playground-call", daemon=True
        )
        self._thread.start()

    def _run(self, ask: Callable[[], Trial], run_id: str) -> None:
        try:
            with stoppable(self._stop):
                self.trial = ask()
        except PlaygroundError as exc:
            self.problem = str(exc)
        except Exception as exc:  # a bug, not a model's answer: said, logged with its trace
            log.exception("the playground failed on run %s", run_id)
            self.problem = f"The playground could not finish: {exc}"
        finally:
            self._ended.set()

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    @property
    def running(self) -> bool:
        return not self._ended.is_set()

    @property
    def cancelling(self) -> bool:
        return self._stop.is_set() and self.running

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def cancel(self) -> None:
        """End the call in flight and ask no more; the trial keeps what was answered."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> Trial | None:
        """Block until the calls end (for tests and the command line)."""
        self._ended.wait(timeout)
        return self.trial
