"""The pace: each node's result stays on screen a while before the next node starts.

A top-level node is held by the run's stream loop: the stream is lazy, so the next
superstep waits for it. A node inside a subgraph (a team's worker) runs on a thread of
its own that the stream loop cannot hold, so ``InnerPace`` holds it there, as that
subgraph's next node starts, once the loop has handed the previous node's update over.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

log = logging.getLogger(__name__)

# How long an inner node waits for the update before it to be handed over; a node whose
# update never comes (none is streamed) must not stall the run.
UPDATE_WAIT_S = 5.0


def hold_pace(pace_s: float, cancel: threading.Event | None, note: Callable[[dict], None]) -> None:
    """Keep a node's result on screen ``pace_s``; Stop ends the wait at once. The pause
    is logged as it starts (``pacing``: what it will be, so a live page never counts it
    as work) and as it ends (``paced``: what it was) so durations count work only."""
    started = time.time()
    note({"pacing": {"from": started, "seconds": pace_s}})
    if cancel is not None:
        cancel.wait(pace_s)
    else:
        time.sleep(pace_s)
    note({"paced": {"from": started, "seconds": round(time.time() - started, 3)}})


class InnerPace(BaseCallbackHandler):
    """Holds each node of a subgraph one level down (what the drawing shows inside a
    team's box) before it starts, when a node ran before it in the same call of that
    subgraph: the subgraph's last node is held by the top-level hold of the subgraph's own
    node. Only ``subgraphs``, the top-level nodes that are graphs, are held inside: a
    graph a node calls itself (a ReAct sub-agent) is not drawn, and so not held; nor is
    anything deeper."""

    def __init__(
        self,
        pace_s: float,
        subgraphs: frozenset[str],
        cancel: threading.Event | None,
        note: Callable[[str, dict], None],
    ):
        self.pace_s, self.subgraphs, self.cancel, self.note = pace_s, subgraphs, cancel, note
        self._changed = threading.Condition()
        self._started: dict[str, int] = {}  # subgraph call's namespace -> nodes started
        self._shown: dict[str, int] = {}  # -> their updates handed over by the stream loop
        self._tasks: set[str] = set()

    def shown(self, namespace: str) -> None:
        """The stream loop handed over an update of a node inside ``namespace``."""
        with self._changed:
            self._shown[namespace] = self._shown.get(namespace, 0) + 1
            self._changed.notify_all()

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        task = (metadata or {}).get("langgraph_checkpoint_ns") or ""
        outer, _, node = task.partition("|")
        if not node or "|" in node or outer.split(":", 1)[0] not in self.subgraphs:
            return
        with self._changed:
            if task in self._tasks:  # a run inside the node (a model call), not its start
                return
            self._tasks.add(task)
            before = self._started.get(outer, 0)
            self._started[outer] = before + 1
            if not before:
                return
            if not self._changed.wait_for(
                lambda: self._shown.get(outer, 0) >= before, timeout=UPDATE_WAIT_S
            ):
                log.warning("no update of the node before %s was handed over; held anyway", task)
        hold_pace(self.pace_s, self.cancel, lambda data: self.note(outer, data))
