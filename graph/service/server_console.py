"""A console for any LangGraph Server: its graphs, threads, runs, state and interrupts
(what it answers is read into the records of ``server_records``).

Thin over ``langgraph-sdk``: the server may run graphs Stepwise never defined, so
nothing here assumes Stepwise's plan fields; a thread's state is whatever its graph
keeps. Every call that fails says so in one sentence (``ServerError``): the server is
down, too slow, not a LangGraph Server, or the URL is not a URL. The key, when one is
configured, goes in a header to the server and nowhere else.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, TypeVar

import httpx
from langgraph_sdk.errors import APIStatusError

from graph.errors import StepwiseError
from graph.kernel.render import to_dot
from graph.models.http_bounds import PastBounds, bounded
from graph.redaction import shown_text
from graph.service.server_client import DEV_SERVER_URL, sdk_client, sends_key_to
from graph.service.server_records import (
    RUN_DONE,
    Assistant,
    Checkpoint,
    RunSummary,
    Stop,
    ThreadState,
    ThreadSummary,
    checkpoints_of,
    listed,
    required_text,
    run_summary,
    server_text,
    thread_state,
    thread_summary,
)
from graph.settings import Settings, get_settings

log = logging.getLogger(__name__)

T = TypeVar("T")

# The most one answer of a server may hold: a thread's state or history with long texts
# fits many times over; a hostile server's 100 MB reply is not read.
REPLY_CAP_BYTES = 20_000_000


class ServerError(StepwiseError):
    """A server call that failed, said in one sentence a person can act on."""


def parse_json(text: str, what: str = "The input") -> Any:
    """JSON typed by a person, or a ``ServerError`` saying where it is wrong."""
    if not text.strip():
        raise ServerError(f'{what} is empty: write JSON, e.g. {{"topic": "cats"}}.')
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ServerError(
            f"{what} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        ) from None


def _same(value: Any) -> Any:
    return value


class ServerConsole:
    """One LangGraph Server, by URL. Each method is one question to the server."""

    def __init__(
        self,
        url: str,
        *,
        settings: Settings | None = None,
        timeout_s: float = 10.0,
        send_key: bool | None = None,
    ):
        """``send_key``: whether the server key goes with each request; by default only
        to the configured server (``server_client.sends_key_to``)."""
        settings = settings or get_settings()
        self.url = url.strip().rstrip("/")
        if not self.url:
            raise ServerError("No server URL: write one, e.g. " + DEV_SERVER_URL + ".")
        if not self.url.startswith(("http://", "https://")):
            raise ServerError(
                f"'{self.url}' is not a server URL: it starts with http:// or https://, "
                f"e.g. {DEV_SERVER_URL}."
            )
        self.timeout_s = timeout_s
        try:
            # one retry: a server that is down is said at once, not after five
            self.client = sdk_client(
                self.url,
                httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0)),
                settings,
                send_key=sends_key_to(self.url, settings) if send_key is None else send_key,
            )
        except (httpx.InvalidURL, ValueError) as exc:
            raise ServerError(f"'{self.url}' is not a server URL ({exc}).") from None

    def close(self) -> None:
        self.client.http.client.close()

    def _call(self, what: str, call: Callable[[], Any], shape: Callable[[Any], T] = _same) -> T:
        """``shape(call())``, within the console's timeout in all (a server dripping a
        byte at a time included) and reading at most ``REPLY_CAP_BYTES``, with any
        failure, and any answer ``shape`` cannot read, turned into one sentence naming
        the server."""
        with bounded(self.timeout_s, REPLY_CAP_BYTES) as bounds:
            try:
                return shape(call())
            except Exception as exc:
                if bounds.too_large:
                    raise ServerError(f"The server at {self.url} {bounds.why} ({what}).") from None
                self._say(what, PastBounds() if bounds.expired else exc)
                raise  # not a failure _say knows: a bug of ours, shown as one

    def _say(self, what: str, exc: Exception) -> None:
        """Raise the ``ServerError`` that says ``exc`` in words (returns when it cannot)."""
        if isinstance(exc, (httpx.TimeoutException, PastBounds)):
            raise ServerError(
                f"The server at {self.url} did not answer within {self.timeout_s:g} s "
                f"({what}): it is busy or stuck."
            ) from None
        if isinstance(exc, (httpx.ConnectError, httpx.RemoteProtocolError)):
            raise ServerError(
                f"No server answers at {self.url}: is it running (e.g. `langgraph dev`)?"
            ) from None
        if isinstance(exc, httpx.UnsupportedProtocol):
            raise ServerError(
                f"'{self.url}' is not a server URL: it starts with http:// or https://."
            ) from None
        if isinstance(exc, APIStatusError):
            code = exc.response.status_code if exc.response is not None else "?"
            if code == 404 and what == "listing its graphs":
                raise ServerError(
                    f"{self.url} answered 404 to {what}: is it the URL of a LangGraph Server?"
                ) from None
            if code in (401, 403):
                raise ServerError(
                    f"The server at {self.url} refused the request ({code}) while {what}: "
                    "set STEPWISE_SERVER_API_KEY to its key."
                ) from None
            raise ServerError(
                f"The server at {self.url} answered {code} while {what}: {_detail(exc)}"
            ) from None
        if isinstance(exc, httpx.HTTPError):
            raise ServerError(
                f"Talking to {self.url} failed while {what}: {shown_text(exc)}."
            ) from None
        if isinstance(exc, (ValueError, KeyError, TypeError, AttributeError, RecursionError)):
            raise ServerError(
                f"{self.url} answered, but not like a LangGraph Server ({what})."
            ) from None

    # -- what the server holds ------------------------------------------------------

    def assistants(self) -> list[Assistant]:
        """The graphs the server serves, one assistant each (its own and any created)."""
        return self._call(
            "listing its graphs",
            lambda: self.client.assistants.search(limit=100),
            lambda found: [
                Assistant(
                    server_text(a["assistant_id"]),
                    server_text(a.get("graph_id")),
                    server_text(a.get("name")) or server_text(a.get("graph_id")),
                )
                for a in listed(found)
            ],
        )

    def graph_dot(self, assistant_id: str, *, active: str | None = None) -> str:
        """The assistant's graph as DOT, drawn like Stepwise's own graphs
        (``graph.kernel.render``); ``active`` (a node the thread runs next) is marked."""
        return self._call(
            "drawing its graph",
            lambda: self.client.assistants.get_graph(assistant_id, xray=1),
            lambda drawing: drawing_to_dot(drawing, name=assistant_id, active=active),
        )

    def threads(self, graph_id: str | None = None, limit: int = 50) -> list[ThreadSummary]:
        """The server's threads, newest first; only ``graph_id``'s when given."""
        metadata = {"graph_id": graph_id} if graph_id else None
        return self._call(
            "listing its threads",
            lambda: self.client.threads.search(
                metadata=metadata, limit=limit, sort_by="updated_at", sort_order="desc"
            ),
            lambda found: [thread_summary(t) for t in listed(found)],
        )

    def runs(self, thread_id: str, limit: int = 50) -> list[RunSummary]:
        """The runs of a thread, newest first."""
        return self._call(
            "listing the thread's runs",
            lambda: self.client.runs.list(thread_id, limit=limit),
            lambda found: [run_summary(r) for r in listed(found)],
        )

    def state(self, thread_id: str) -> ThreadState:
        """The thread's current state and what it waits on."""
        status = self._call(
            "reading the thread",
            lambda: self.client.threads.get(thread_id),
            lambda thread: server_text(thread.get("status")),
        )
        return self._call(
            "reading its state",
            lambda: self.client.threads.get_state(thread_id),
            lambda raw: thread_state(thread_id, raw, status),
        )

    def history(self, thread_id: str, limit: int = 100) -> list[Checkpoint]:
        """The thread's checkpoints, oldest first, each with what it changed."""
        return self._call(
            "reading its history",
            lambda: self.client.threads.get_history(thread_id, limit=limit),
            lambda raw: checkpoints_of(list(reversed(listed(raw)))),
        )

    # -- what a person does ---------------------------------------------------------

    def start(self, assistant_id: str, input: Any, *, wait_s: float = 30.0) -> Stop:
        """A new thread running ``assistant_id`` on ``input``, followed to its next stop."""
        thread_id = self._call(
            "creating a thread", lambda: self.client.threads.create(), required_text("thread_id")
        )
        run_id = self._call(
            "starting a run",
            lambda: self.client.runs.create(thread_id, assistant_id, input=input),
            required_text("run_id"),
        )
        return self.follow(thread_id, run_id, wait_s=wait_s)

    def answer(
        self,
        thread_id: str,
        assistant_id: str,
        value: Any,
        *,
        interrupt_id: str | None = None,
        wait_s: float = 30.0,
    ) -> Stop:
        """Resume a thread stopped on an interrupt with ``value`` (``Command(resume=...)``)
        and follow it to its next stop. Refused when the thread waits on nothing, or on
        another question than ``interrupt_id``; with several questions pending (parallel
        nodes), the answer goes to ``interrupt_id``'s alone."""
        pending = [i.interrupt_id for i in self.state(thread_id).interrupts]
        if not pending or (interrupt_id and interrupt_id not in pending):
            raise ServerError(
                "This thread is not waiting on that question any more; refresh to see its state."
            )
        resume = {interrupt_id: value} if interrupt_id and len(pending) > 1 else value
        run_id = self._call(
            "sending the answer",
            lambda: self.client.runs.create(
                thread_id, assistant_id, command={"resume": resume}, multitask_strategy="reject"
            ),
            required_text("run_id"),
        )
        return self.follow(thread_id, run_id, wait_s=wait_s)

    def proceed(self, thread_id: str, assistant_id: str, *, wait_s: float = 30.0) -> Stop:
        """Run on a thread paused at a breakpoint (``interrupt_before``/``after``: it has
        nodes to run next and no question), from where it stopped."""
        now = self.state(thread_id)
        if now.interrupts or not now.next:
            raise ServerError(
                "This thread is not paused at a breakpoint; refresh to see its state."
            )
        run_id = self._call(
            "continuing the thread",
            lambda: self.client.runs.create(
                thread_id, assistant_id, input=None, multitask_strategy="reject"
            ),
            required_text("run_id"),
        )
        return self.follow(thread_id, run_id, wait_s=wait_s)

    def follow(self, thread_id: str, run_id: str, *, wait_s: float = 30.0) -> Stop:
        """Wait up to ``wait_s`` for a run to stop (finish, fail or hit an interrupt)."""
        deadline = time.monotonic() + wait_s
        status = "pending"
        while True:
            status = self._call(
                "following the run",
                lambda: self.client.runs.get(thread_id, run_id),
                lambda run: server_text(run.get("status")),
            )
            if status in RUN_DONE or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        return Stop(run_id, status, self.state(thread_id))


def _detail(exc: APIStatusError) -> str:
    """The server's own reason, in one line."""
    try:
        body = exc.response.json()
        text = body.get("detail") or body.get("message") or json.dumps(body)
    except Exception as unread:  # noqa: BLE001 - any body, even not JSON, still gives a message
        log.debug("a server's error body read as text: %r", unread)
        text = exc.response.text if exc.response is not None else str(exc)
    return shown_text(text, 200).rstrip(".") + "."  # the key it was sent, echoed: redacted


@dataclass
class _Drawing:
    """A LangGraph Server's drawing of a graph, read by ``to_dot`` as a compiled graph."""

    name: str
    drawn: Any

    def get_graph(self, *, xray: int | bool = 1) -> Any:
        return self.drawn


def drawing_to_dot(drawing: dict, *, name: str = "graph", active: str | None = None) -> str:
    """DOT for a graph the server drew as JSON (``nodes``/``edges``): handed to Stepwise's
    own renderer through the shape it reads from ``compiled.get_graph()``, so a foreign
    graph looks like Stepwise's (START/END, dashed conditional edges, subgraph clusters)."""
    if not isinstance(drawing, dict) or not isinstance(drawing.get("nodes"), list):
        raise ServerError("The server's drawing of the graph has no nodes to draw.")
    nodes = {str(n["id"]): None for n in drawing["nodes"] if isinstance(n, dict) and "id" in n}
    edges = [
        SimpleNamespace(
            source=str(e["source"]),
            target=str(e["target"]),
            conditional=bool(e.get("conditional")),
        )
        for e in drawing.get("edges") or []
        if isinstance(e, dict) and "source" in e and "target" in e
    ]
    drawn = SimpleNamespace(nodes=nodes, edges=edges)
    return to_dot(_Drawing(name, drawn), active=active, active_note="waiting" if active else "")
