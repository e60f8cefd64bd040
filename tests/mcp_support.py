"""MCP servers for the tests: a small one written here with the ``mcp`` SDK (FastMCP) over
streamable HTTP on loopback, counting its calls, and the command of ``mcp-server-time``
(from PyPI) over stdio."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import uvicorn
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations
from starlette.responses import RedirectResponse
from starlette.routing import Route

TIME_COMMAND = (sys.executable, ("-m", "mcp_server_time", "--local-timezone", "UTC"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class CountingServer:
    """The FastMCP server and how often each of its tools was called."""

    port: int
    calls: Counter = field(default_factory=Counter)
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def app(self):
        mcp = FastMCP("counting", host="127.0.0.1", port=self.port)
        calls = self.calls

        @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False))
        def count_words(text: str) -> int:
            """Count the words of a text (reads nothing, changes nothing)."""
            calls["count_words"] += 1
            return len(text.split())

        @mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
        def send_note(to: str, body: str) -> str:
            """Send a note to someone (a side effect: it cannot be taken back)."""
            calls["send_note"] += 1
            return f"note {calls['send_note']} sent to {to}"

        @mcp.tool()
        def unannotated(value: str) -> str:
            """A tool whose server says nothing about its effects."""
            calls["unannotated"] += 1
            return value

        @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
        async def slow(seconds: float) -> str:
            """Answer after ``seconds``."""
            calls["slow"] += 1
            await asyncio.sleep(seconds)
            return "finally"

        @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
        def fail(why: str) -> str:
            """Always fail, saying why."""
            calls["fail"] += 1
            raise ValueError(why)

        app = mcp.streamable_http_app()
        # an old address of the endpoint, moved on the same host
        app.router.routes.append(
            Route(
                "/moved",
                lambda request: RedirectResponse("/mcp", 307),
                methods=["GET", "POST", "DELETE"],
            )
        )
        return app

    def start(self) -> CountingServer:
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.time() + 20
        while not self._server.started:
            if time.time() > deadline:
                raise RuntimeError("the test MCP server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def counting_server() -> CountingServer:
    return CountingServer(port=free_port()).start()
