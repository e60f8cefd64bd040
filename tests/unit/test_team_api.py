"""request_team's HTTP surface (issue #14, items 9 and 10): a model-proposed URL the
allowlist check and the HTTP client could read differently is refused, an unusable URL
fails only its own call with a reason in words, and what is sent is built from the
checked parts.

Real parts: real HTTP servers on loopback that record what reaches them, and the
hierarchical_teams system run with the offline scripted model (one rule changed: the
URL its health_checker proposes).
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from graph.hierarchical_teams import SYSTEM as TEAMS
from graph.kernel.design import Design
from graph.models.scripted import ScriptedChatModel
from graph.service.run_storage import checkpointer_for
from graph.service.runs import run_question
from graph.tools.demo_api import start_demo_api
from graph.tools.team_api import OUTCOME_UNKNOWN, ApiCall, RefusedCall, check_allowed, send

BASE = "http://127.0.0.1:8765/api"


@pytest.fixture
def recorder():
    """A server that answers 200 to anything and records the request line and Host."""
    hits: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append((self.path, self.headers.get("Host") or ""))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, hits
    server.shutdown()


# --------------------------------------------------------------------------- the check


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://evil.example@127.0.0.1:8765/api/health", "user name or password"),
        ("http://user:pw@127.0.0.1:8765/api/health", "user name or password"),
        ("http://127.0.0.1:8765/api/%2e%2e/admin", "percent-encoded"),
        ("http://127.0.0.1:8765/api/%2E%2E/admin", "percent-encoded"),
        ("http://127.0.0.1:8765/api/..%2fadmin", "percent-encoded"),
        ("http://127.0.0.1:8765/api/..%5Cadmin", "percent-encoded"),
        ("http://127.0.0.1:8765/api/health%00", "percent-encoded"),
        ("http://127.0.0.1:8765/api\\..\\admin", "backslash"),
        ("http://127.0.0.1:8765/api/health check", "space or a control character"),
        ("http://127.0.0.1:8765/api/health\tx", "space or a control character"),
        ("http://127.0.0.1:8765/api/health\r\nX-Injected: 1", "space or a control character"),
        ("http://127.0.0.1:8765/api/./health", "outside the allowlisted API base"),
        ("http://127.0.0.1:8765/api/h\u00e9alth", "outside ASCII"),
        ("http://127.0.0.1:8765/api/health\u2028", "space or a control character"),
        ("http://127.0.0.1:99999/api/health", "not a valid URL"),
        ("http://127.0.0.1:port/api/health", "not a valid URL"),
        ("http://[127.0.0.1:8765/api/health", "not a valid URL"),
    ],
)
def test_a_url_the_client_could_read_differently_is_refused_with_a_reason(url, said):
    with pytest.raises(RefusedCall) as refused:
        check_allowed(ApiCall("GET", url), BASE)
    message = str(refused.value)
    assert message.startswith("Refused: the URL ") and said in message
    assert BASE in message and "\n" not in message and "\r" not in message


def test_the_url_to_send_is_built_from_the_checked_parts():
    assert (
        check_allowed(ApiCall("GET", "HTTP://127.0.0.1:8765/api/health?verbose=1#top"), BASE)
        == "http://127.0.0.1:8765/api/health?verbose=1"
    )
    assert check_allowed(ApiCall("GET", "http://127.0.0.1/x"), "http://127.0.0.1:80") == (
        "http://127.0.0.1:80/x"
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.example@127.0.0.1:{port}/api/health",
        "http://127.0.0.1:{port}/api/%2e%2e/admin",
        "http://127.0.0.1:{port}/api/health check",
    ],
)
def test_a_bypass_never_reaches_the_server(recorder, url):
    port, hits = recorder
    base = f"http://127.0.0.1:{port}/api"
    with pytest.raises(RefusedCall):
        send(ApiCall("GET", url.format(port=port)), base, timeout_s=5)
    assert hits == []


def test_what_reaches_the_server_is_the_checked_url(recorder):
    port, hits = recorder
    base = f"http://127.0.0.1:{port}/api"
    reply = send(ApiCall("GET", f"HTTP://127.0.0.1:{port}/api/health?x=1#frag"), base, 5)
    assert reply == "HTTP 200: ok"
    assert hits == [("/api/health?x=1", f"127.0.0.1:{port}")]


def test_a_reply_that_is_not_http_fails_the_call_in_words():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def garbage():
        conn, _ = listener.accept()
        conn.recv(4096)
        conn.sendall(b"this is not HTTP at all\r\n\r\n")
        conn.close()

    threading.Thread(target=garbage, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{port}"
        reply = send(ApiCall("GET", f"{base}/health"), base, timeout_s=5)
    finally:
        listener.close()
    assert reply.startswith("ERROR: the request to ") and "was not valid HTTP" in reply
    assert OUTCOME_UNKNOWN in reply


# --------------------------------------------------------------------------- through a run


class ProposesUrl(ScriptedChatModel):
    """The scripted model, except that health_checker proposes ``url`` (``{hostport}``
    stands for the API's host and port)."""

    url: str

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop, run_manager, **kwargs)
        for call in result.generations[0].message.tool_calls:
            if call["name"] == "http_get":
                hostport = call["args"]["url"].split("//", 1)[1].split("/", 1)[0]
                call["args"]["url"] = self.url.format(hostport=hostport)
        return result


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:99999/health", "not a valid URL"),
        ("http://{hostport}/health check", "space or a control character"),
        ("http://evil.example@{hostport}/health", "user name or password"),
    ],
)
def test_a_bad_proposed_url_fails_only_its_call_and_the_other_subtask_runs(settings, url, said):
    api = start_demo_api()
    try:
        settings = settings.model_copy(update={"teams_api_base": api.base_url})
        design = Design(system=TEAMS.name, approvals={"health_checker": "never"})
        graph = TEAMS.build_graph(
            design,
            settings=settings,
            checkpointer=checkpointer_for(settings),
            worker_model=ProposesUrl(url=url),
        )
        outcome = run_question(
            "Check that the API is healthy and find reliable news sites about semiconductor "
            "tariffs",
            design,
            settings=settings,
            graph=graph,
        )
    finally:
        api.server.shutdown()
    assert api.count() == 0
    health, search = outcome.rows
    assert (health.team, health.status) == ("request_team", "failed")
    assert health.reason.startswith("health_checker: Refused: the URL ") and said in health.reason
    assert (search.team, search.status) == ("search_team", "done")
    for text in (health.reason, outcome.reason or ""):
        assert "Traceback" not in text and "ValueError" not in text and "InvalidURL" not in text


def test_a_post_sent_twice_under_one_idempotency_key_is_applied_once():
    api = start_demo_api()
    try:
        call = ApiCall("POST", f"{api.base_url}/sites", {"sites": ["https://apnews.com"]})
        first = send(call, api.base_url, 5, idempotency_key="k-0123456789abcdef")
        again = send(call, api.base_url, 5, idempotency_key="k-0123456789abcdef")
        other = send(call, api.base_url, 5, idempotency_key="k-another-key-000")
    finally:
        api.server.shutdown()
    assert first == again and first.startswith("HTTP 201") and '"total": 1' in first
    assert '"total": 2' in other
    assert api.count("POST", "/sites", key="k-0123456789abcdef") == 2
    assert api.sites == ["https://apnews.com", "https://apnews.com"]
