"""Text a hostile server writes never shows a key and is shown bounded: the model ids
*Test connection* lists (graph/models/probe.py) and the Server page's errors
(graph/service/server_console.py), from servers that echo the key they were sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from graph.models.modes import ModeBook
from graph.models.probe import check_server
from graph.service.server_console import ServerConsole, ServerError
from graph.settings import Settings
from tests.support_procs.fake_server import EchoChatModel, LocalOpenAIServer

MODEL_KEY = "local-model-key-987654"  # not key-shaped: redacted because it is configured
SERVER_KEY = "server-console-key-4242"


def test_test_connection_lists_model_ids_without_keys_and_bounded():
    hostile_id = f"model-of {MODEL_KEY} Bearer abcdefghijklmnopqrstuvwxyz012345 " + "x" * 5000
    with LocalOpenAIServer(EchoChatModel, model_name=hostile_id) as server:
        settings = Settings(
            openai_base_url=server.base_url,
            openai_api_key=MODEL_KEY,
            provider="openai",
            request_timeout_s=10,
        )
        report = check_server(settings, ModeBook())
    said = report.summary()
    assert report.reachable and len(report.models) == 1
    assert MODEL_KEY not in said and "abcdefghijklmnopqrstuvwxyz012345" not in said
    assert report.models[0].startswith("model-of [redacted] Bearer [redacted] xxx")
    assert len(report.models[0]) == 100 and report.models[0].endswith("…")


class _Echoing(BaseHTTPRequestHandler):
    """A "LangGraph Server" whose every answer is an error quoting the request's headers,
    the key among them, in a long body (JSON, or plain text when the path says so)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
        text = f"bad request, you sent {headers} " + "y" * 20_000
        plain = self.server.plain  # type: ignore[attr-defined]
        body = text.encode() if plain else json.dumps({"detail": text}).encode()
        self.send_response(500)
        self.send_header("content-type", "text/plain" if plain else "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("plain", [False, True], ids=["JSON body", "text body"])
def test_a_server_page_error_quotes_the_server_without_the_key_and_bounded(plain):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echoing)
    httpd.plain = plain  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    # the user sends the key to this server (ticked on the page), and it echoes it back
    settings = Settings(server_api_key=SERVER_KEY)
    console = ServerConsole(url, settings=settings, timeout_s=5, send_key=True)
    try:
        with pytest.raises(ServerError) as refused:
            console.assistants()
    finally:
        console.close()
        httpd.shutdown()
        httpd.server_close()
    message = str(refused.value)
    assert message.startswith(f"The server at {url} answered 500 while listing its graphs: ")
    assert "bad request, you sent" in message and "x-api-key: [redacted]" in message
    assert SERVER_KEY not in message and len(message) < 300


class _Recording(BaseHTTPRequestHandler):
    """A server that keeps the ``x-api-key`` of each request and lists no graph."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.keys.append(self.headers.get("x-api-key"))  # type: ignore[attr-defined]
        body = b"[]"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_server_key_goes_only_to_the_configured_server_unless_the_user_says_so():
    """Issue #34: the Server page sent STEPWISE_SERVER_API_KEY to whatever URL was typed
    (20 of 20 hostile servers received it)."""
    servers = []
    for _ in range(2):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
        httpd.keys = []  # type: ignore[attr-defined]
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
    ours, other = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    settings = Settings(server_api_key=SERVER_KEY, server_url=ours)
    try:
        for url, send_key in ((ours + "/", None), (other, None), (other, True)):
            console = ServerConsole(url, settings=settings, timeout_s=5, send_key=send_key)
            try:
                assert console.assistants() == []
            finally:
                console.close()
    finally:
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()
    assert servers[0].keys == [SERVER_KEY]  # type: ignore[attr-defined]
    assert servers[1].keys == [None, SERVER_KEY]  # type: ignore[attr-defined]
