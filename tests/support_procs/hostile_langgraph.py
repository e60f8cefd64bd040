"""A "LangGraph Server" that misbehaves on demand, for the Server page's console: every
request, whatever its path, is answered the way ``mode`` says.

- ``json:<text>``: a 200 with that body (a malformed shape: a list where an object
  belongs, missing ids, nulls);
- ``echo``: a 500 whose body quotes the request's headers, the key among them;
- ``drip:<seconds>``: a 200 whose body comes one byte every so many seconds;
- ``huge:<MB>``: a 200 of that many MB, written as it goes.

``sent`` counts the body bytes the client took: a capped client hangs up early.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Shapes a broken or hostile server has answered with, each valid JSON.
SHAPES = {
    "null": "null",
    "a number": "7",
    "a text": '"assistants"',
    "an empty object": "{}",
    "a list of numbers": "[1, 2, 3]",
    "a list of texts": '["a", "b"]',
    "objects without ids": "[{}, {}]",
    "null ids": '[{"assistant_id": null, "thread_id": null, "run_id": null}]',
    "ids that are objects": '[{"assistant_id": {}, "thread_id": [], "run_id": {}}]',
    "fields of the wrong type": (
        '{"values": 5, "next": 7, "tasks": "x", "interrupts": 3, "checkpoint": "c",'
        ' "status": [], "nodes": "n", "edges": 1, "thread_id": 5, "run_id": 6}'
    ),
    "tasks that are texts": '{"values": {}, "next": [], "tasks": ["a", "b"]}',
    "interrupts of the wrong type": (
        '[{"thread_id": "t", "interrupts": [1, 2], "metadata": "m", "status": 5}]'
    ),
}


class _Handler(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        mode: str = self.server.mode  # type: ignore[attr-defined]
        kind, _, arg = mode.partition(":")
        if kind == "echo":
            headers = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
            self._send(500, json.dumps({"detail": f"bad request, you sent {headers}"}).encode())
        elif kind == "json":
            self._send(200, arg.encode())
        elif kind == "drip":
            body = b'[{"assistant_id": "a", "graph_id": "g", "name": "n"}]'
            self._head(200, len(body))
            for i in range(len(body)):
                time.sleep(float(arg))
                if not self._write(body[i : i + 1]):
                    break
        elif kind == "huge":
            size = int(float(arg) * 1_000_000)
            self._head(200, size)
            block = b" " * 65_536
            while size > 0 and self._write(block[: min(size, len(block))]):
                size -= len(block)

    do_GET = do_POST = do_PUT = do_PATCH = _answer

    def _head(self, status: int, length: int) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(length))
        self.end_headers()

    def _send(self, status: int, body: bytes) -> None:
        self._head(status, len(body))
        self._write(body)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            return False
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.sent += len(data)  # type: ignore[attr-defined]
        return True

    def log_message(self, *args) -> None:
        pass


class HostileLangGraph:
    """Serve on loopback in a daemon thread; ``url`` to give the console."""

    def __init__(self, mode: str) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.mode = mode  # type: ignore[attr-defined]
        self.httpd.sent = 0  # type: ignore[attr-defined]
        self.httpd.lock = threading.Lock()  # type: ignore[attr-defined]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def sent(self) -> int:
        return self.httpd.sent  # type: ignore[attr-defined]

    def __enter__(self) -> "HostileLangGraph":
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
