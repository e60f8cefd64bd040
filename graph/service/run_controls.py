"""What stops a run from outside while it is driven: a user's Stop or a redirect
(``StopSignal``, through LangGraph's drain at the next superstep boundary), and a check
called as each node and model call starts (``NodeGuard``: a worker that lost its lease).
"""

from __future__ import annotations

import threading
from typing import Any, Callable
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.runtime import RunControl


class StopSignal(threading.Event):
    """Asks a run to stop at the next superstep boundary, through LangGraph's own drain
    (``RunControl``): the node in progress finishes and its checkpoint is saved, so the
    run can be resumed or sent elsewhere from exactly there. ``redirecting`` says it
    stops to be sent elsewhere (an edited request, a follow-up message), not because a
    user cancelled: the run then ends without an "end" event, since it goes on at once."""

    redirecting = False
    control: RunControl | None = None  # the stream running now, set by continue_run
    # Passes the request on to a stream running in a worker process (``RunProcesses``).
    forward: Callable[[bool], None] | None = None

    def set(self) -> None:
        super().set()
        if self.control is not None:
            self.control.request_drain("redirect" if self.redirecting else "cancel")
        if self.forward is not None:
            self.forward(self.redirecting)


class NodeGuard(BaseCallbackHandler):
    """Calls ``check`` as each graph node starts, and as each model call inside a node
    starts; what it raises stops the node or the call there (``raise_error``: LangChain
    would otherwise log it and go on). A worker frozen between two calls of one node (a
    ReAct worker asks its model, runs a tool, asks again) learns it lost its lease before
    its next call, not only before its next node."""

    raise_error = True

    def __init__(self, check: Callable[[], None]):
        self.check = check

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if metadata and "langgraph_node" in metadata:
            self.check()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.check()

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.check()
