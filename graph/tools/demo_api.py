"""A small HTTP API on loopback for hierarchical_teams' request_team to call for real.

``GET /health`` answers the service's status; ``POST /sites`` takes ``{"sites": [url,
...]}``, keeps the URLs and answers what it stored; ``GET /sites`` lists them. It runs
in a daemon thread on an ephemeral port of 127.0.0.1, started once per process on first
use, so the offline default has a real endpoint with real side effects (what a human
approves is an actual request) without any network. Every request it receives is
recorded, with its ``Idempotency-Key`` header, so tests can count what reached the
server; a POST whose key was already applied gets the first answer again and stores
nothing (what an API honouring idempotency keys does with a call resent after a crash).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

MAX_BODY = 64 * 1024
MAX_SITES = 100


@dataclass
class DemoApi:
    server: ThreadingHTTPServer
    started_at: float = field(default_factory=time.time)
    requests: list[dict] = field(default_factory=list)  # every request: method, path, body
    sites: list[str] = field(default_factory=list)  # what POST /sites stored, in order
    answered: dict[str, tuple[int, dict]] = field(default_factory=dict)  # key -> first answer
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        if isinstance(host, bytes):
            host = host.decode()
        return f"http://{host}:{port}"

    def count(
        self, method: str | None = None, path: str | None = None, key: str | None = None
    ) -> int:
        """Requests received, by method, path and Idempotency-Key when given."""
        with self.lock:
            return sum(
                1
                for r in self.requests
                if (method is None or r["method"] == method)
                and (path is None or r["path"] == path)
                and (key is None or r["idempotency_key"] == key)
            )


def _handler(api_ref: list) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "StepwiseDemoApi/1"

        def log_message(self, *args: Any) -> None:  # no stderr noise from a daemon thread
            pass

        def _reply(self, status: int, data: dict) -> None:
            body = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _record(self, body: str = "") -> DemoApi:
            api: DemoApi = api_ref[0]
            with api.lock:
                api.requests.append(
                    {
                        "method": self.command,
                        "path": urlsplit(self.path).path,
                        "body": body,
                        "idempotency_key": self.headers.get("Idempotency-Key") or "",
                        "at": time.time(),
                    }
                )
            return api

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            api = self._record()
            path = urlsplit(self.path).path.rstrip("/")
            if path == "/health":
                self._reply(
                    200,
                    {
                        "status": "ok",
                        "service": "stepwise demo API",
                        "uptime_s": round(time.time() - api.started_at, 1),
                        "sites_stored": len(api.sites),
                    },
                )
            elif path == "/sites":
                with api.lock:
                    self._reply(200, {"sites": list(api.sites)})
            else:
                self._reply(404, {"error": f"no such endpoint: GET {path or '/'}"})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._record("(too large)")
                self._reply(413, {"error": f"body over {MAX_BODY} bytes"})
                return
            raw = self.rfile.read(length).decode("utf-8", "replace")
            api = self._record(raw)
            if urlsplit(self.path).path.rstrip("/") != "/sites":
                self._reply(404, {"error": f"no such endpoint: POST {urlsplit(self.path).path}"})
                return
            key = self.headers.get("Idempotency-Key") or ""
            try:
                data = json.loads(raw or "{}")
                sites = data.get("sites") if isinstance(data, dict) else None
                if not isinstance(sites, list) or not all(isinstance(s, str) for s in sites):
                    raise ValueError('expected {"sites": ["https://...", ...]}')
                if len(sites) > MAX_SITES:
                    raise ValueError(f"at most {MAX_SITES} sites per request")
            except ValueError as exc:  # JSONDecodeError included
                self._reply(400, {"error": str(exc)})
                return
            with api.lock:  # a key already applied gets its first answer, nothing stored
                if not (key and (answer := api.answered.get(key))):
                    api.sites.extend(sites)
                    answer = (201, {"stored": sites, "count": len(sites), "total": len(api.sites)})
                    if key:
                        api.answered[key] = answer
            self._reply(*answer)

    return Handler


def start_demo_api() -> DemoApi:
    """A new demo API on an ephemeral loopback port, serving from a daemon thread (tests
    start their own to count exactly the requests their run made)."""
    ref: list = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(ref))
    server.daemon_threads = True
    api = DemoApi(server)
    ref.append(api)
    threading.Thread(target=server.serve_forever, name="stepwise-demo-api", daemon=True).start()
    return api


_lock = threading.Lock()
_api: DemoApi | None = None


def demo_api() -> DemoApi:
    """The process's demo API, started on first use (it ends with the process)."""
    global _api
    with _lock:
        if _api is None:
            _api = start_demo_api()
        return _api
