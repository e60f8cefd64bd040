"""Every call the Model page and the Server page make to an outside server has a total
deadline and a size cap, and any shape of answer is read or said in a sentence.

Before: an HTTP read timeout starts again with each byte, so a server dripping one byte
a second held the Server page's console and the Model page's *Test connection* for
minutes; replies were read whole into memory (a 100 MB model list added 426 MB to the
app); a malformed answer raised KeyError or TypeError out of the Server page's console.
Real HTTP servers on loopback (the fake OpenAI server, a hostile "LangGraph Server"),
the real clients.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from graph.models import server_slots
from graph.models.calls import ModelCallError
from graph.models.modes import ModeBook
from graph.models.probe import check_server
from graph.models.server import ServerChatModel
from graph.models.server_slots import learn_slots
from graph.service.server_console import ServerConsole, ServerError
from graph.settings import Settings
from tests.support_procs.fake_server import EchoChatModel, LocalOpenAIServer
from tests.support_procs.hostile_langgraph import SHAPES, HostileLangGraph

RAW = re.compile(r"Traceback|\b[A-Z]\w*(Error|Exception)\b|has no attribute|object at 0x|NoneType")


def is_raw(text: str) -> bool:
    return bool(RAW.search(text))


# The caps, as the messages say them (graph.models.probe.MODEL_LIST_BYTES,
# graph.models.calls.REPLY_BYTES, graph.service.server_console.REPLY_CAP_BYTES).
MODEL_LIST_MB, MODEL_REPLY_MB, SERVER_REPLY_MB = 5, 32, 20
CONSOLE_CALLS = {
    "assistants": lambda c: c.assistants(),
    "graph_dot": lambda c: c.graph_dot("a"),
    "threads": lambda c: c.threads(),
    "runs": lambda c: c.runs("t"),
    "state": lambda c: c.state("t"),
    "history": lambda c: c.history("t"),
    "start": lambda c: c.start("a", {"q": 1}, wait_s=0),
    "answer": lambda c: c.answer("t", "a", "yes", wait_s=0),
    "proceed": lambda c: c.proceed("t", "a", wait_s=0),
    "follow": lambda c: c.follow("t", "r", wait_s=0),
}


def _settings(server: LocalOpenAIServer, timeout_s: float = 2) -> Settings:
    return Settings(
        provider="openai",
        openai_base_url=server.base_url,
        openai_api_key="sk-test-bounds-0000",
        request_timeout_s=timeout_s,
        max_retries=0,
    )


# -- the Model page ---------------------------------------------------------------


def test_test_connection_gives_up_on_a_model_list_that_drips_at_its_deadline():
    with LocalOpenAIServer(EchoChatModel) as server:
        server.list_fault = "drip:0.2"  # a 250-byte list at 5 bytes a second: 50 s
        report = check_server(_settings(server), ModeBook())
    assert not report.reachable
    assert report.error == (
        f"The server at {report.server} did not send its whole reply within 2 s (the model list)."
    )


def test_test_connection_does_not_read_a_huge_model_list():
    with LocalOpenAIServer(EchoChatModel) as server:
        server.list_fault = "huge:60"
        report = check_server(_settings(server, timeout_s=30), ModeBook())
    assert not report.reachable
    assert report.error == (
        f"The server at {report.server} sent more than {MODEL_LIST_MB} MB, "
        "so the reply was not read (the model list)."
    )


def test_a_model_call_does_not_read_a_reply_past_its_byte_cap():
    with LocalOpenAIServer(EchoChatModel) as server:
        server.inject(f"huge:{MODEL_REPLY_MB + 8}")
        model = ServerChatModel(
            model="m",
            base_url=server.base_url,
            api_key="sk-test-bounds-0000",
            max_retries=0,
            timeout=60,
            stream_replies=False,
        )
        with pytest.raises(ModelCallError) as said:
            model.invoke("hello")
        assert len(server.requests) == 1  # given up, not sent again
    assert f"sent more than {MODEL_REPLY_MB} MB for one reply" in str(said.value)


class _Pages(BaseHTTPRequestHandler):
    """/props and /openapi.json as a hostile server sends them: 60 MB, or dripping."""

    def do_GET(self):
        drip = self.server.drip  # type: ignore[attr-defined]
        size = 50 if drip else 60_000_000
        self.send_response(200)
        self.send_header("content-length", str(size))
        self.end_headers()
        sent = 0
        try:
            while sent < size:
                if drip:
                    threading.Event().wait(0.2)
                part = min(65_536 if not drip else 1, size - sent)
                self.wfile.write(b" " * part)
                sent += part
        except OSError:
            pass
        self.server.sent += sent  # type: ignore[attr-defined]

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("drip", [False, True], ids=["60 MB", "dripping"])
def test_asking_a_server_its_slots_is_bounded_in_time_and_size(drip, monkeypatch):
    # a 1 s read timeout (2 s in all) instead of 3 s (6 s in all): the bound is what is
    # checked, not its length, and the drip still offers more than the deadline lets in
    monkeypatch.setattr(server_slots, "_PROBE_TIMEOUT_S", 1.0)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    httpd.drip, httpd.sent = drip, 0  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        limit, why = learn_slots(f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert (limit, why) == (None, "not learnt (the server did not say)")
    # the client hung up: far fewer bytes taken than offered (50 a page when dripping)
    assert httpd.sent < (30 if drip else 10_000_000), httpd.sent  # type: ignore[attr-defined]


# -- the Server page ---------------------------------------------------------------


@pytest.mark.parametrize("call", list(CONSOLE_CALLS))
def test_the_server_console_gives_up_on_a_dripping_server_at_its_deadline(call):
    with HostileLangGraph("drip:0.3") as server:
        console = ServerConsole(server.url, settings=Settings(), timeout_s=1.5)
        try:
            with pytest.raises(ServerError) as said:
                CONSOLE_CALLS[call](console)
        finally:
            console.close()
    assert f"The server at {server.url} did not answer within 1.5 s" in str(said.value)


def test_the_server_console_does_not_read_a_huge_answer():
    with HostileLangGraph("huge:60") as server:
        console = ServerConsole(server.url, settings=Settings(), timeout_s=30)
        try:
            with pytest.raises(ServerError) as said:
                console.assistants()
        finally:
            console.close()
        taken = server.sent
    assert str(said.value) == (
        f"The server at {server.url} sent more than {SERVER_REPLY_MB} MB, so the "
        "reply was not read (listing its graphs)."
    )
    assert taken < 40_000_000, taken


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_malformed_answer_of_a_server_is_a_sentence(shape):
    with HostileLangGraph("json:" + SHAPES[shape]) as server:
        console = ServerConsole(server.url, settings=Settings(), timeout_s=5)
        failures = {}
        try:
            for name, call in CONSOLE_CALLS.items():
                try:
                    call(console)
                except ServerError as exc:  # a sentence: words, and a stop at the end
                    assert str(exc)[-1] in ".?" and "Error" not in str(exc), str(exc)
                except Exception as exc:  # noqa: BLE001 - what the test looks for
                    failures[name] = f"{type(exc).__name__}: {exc}"
        finally:
            console.close()
    assert not failures, failures


@pytest.mark.parametrize("fault", ["body_html", "body_not_json", "body_deep_nesting", "echo_auth"])
def test_test_connection_says_a_model_list_it_cannot_read_in_words(fault):
    with LocalOpenAIServer(EchoChatModel) as server:
        server.list_fault = fault
        report = check_server(_settings(server), ModeBook())
    assert not report.reachable
    assert report.error and not is_raw(report.error), report.error
