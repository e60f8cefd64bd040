"""What a compiled graph builds once and then reuses in every run: sub-agents, tools.

Building a ReAct sub-agent (``create_agent``: its tools' argument schemas, a
``StateGraph`` and its compile) costs several milliseconds; done at every step, it was
most of the engine's own cost per step. A system's ``Deps`` is made by ``build_graph``
from one design (its enabled agents and prompt texts) and one pair of models, so what it
holds already belongs to exactly that design and model; a different design, prompt
version or model is a different graph with its own ``Deps`` and its own builds.

Only what holds no run data may be kept here: a compiled agent without a checkpointer
(each invoke gets its own messages and config, so runs and threads never share a
conversation), a tool over the shared knowledge base or database. A tool bound to one
run's data (its datasets, its chart, a side effect's ledger key) is built per call.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


class BuiltOnce:
    """Things built on first use, by name, once per owner, safely across threads."""

    def __init__(self) -> None:
        self._built: dict[str, object] = {}
        self._lock = threading.Lock()

    def get(self, name: str, build: Callable[[], T]) -> T:
        """The thing built under ``name``, built now by ``build`` if it is not yet."""
        found = self._built.get(name)
        if found is None:
            with self._lock:  # two runs starting at once build it once
                found = self._built.get(name)
                if found is None:
                    found = self._built[name] = build()
        return found  # type: ignore[return-value]

    def names(self) -> list[str]:
        """What has been built so far (for tests and diagnostics)."""
        return sorted(self._built)
