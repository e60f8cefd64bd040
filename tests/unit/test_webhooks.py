"""Word of approvals outside the app (issue 29, point 6): a real HTTP receiver on loopback
gets exactly one POST per new waiting question and one per timeout; a receiver that is
down or hangs holds no run; the URL's token appears in no log line and no message."""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import ValidationError

from graph.kernel.design import Design
from graph.service.run_service import RunService
from graph.service.server_runs import open_run_service
from graph.service.webhooks import Webhooks, shown_url
from graph.settings import Settings
from tests.inbox_support import IBM, REPORT, wait_waiting
from tests.unit.conftest import wait_for

TOKEN = "T0K3N-b1a2c3d4e5f6"
SIGNATURE = "sig=9f8e7d6c5b4a"


class Receiver:
    """A webhook receiver on a free loopback port: it keeps each POST's JSON, answers
    ``fail_first`` of them with 500, and (``hold``) keeps requests waiting until released."""

    def __init__(self, fail_first: int = 0, hold: bool = False):
        self.posts: list[dict] = []
        self.fail_first = fail_first
        self.attempts = 0
        self.release = threading.Event()
        self.arrived = threading.Event()
        if not hold:
            self.release.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.attempts += 1
                receiver.arrived.set()
                receiver.release.wait(30)
                if receiver.attempts <= receiver.fail_first:
                    self.send_response(500)
                else:
                    receiver.posts.append(json.loads(body))
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args):  # the test's output stays readable
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/{TOKEN}?{SIGNATURE}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made: list[Receiver] = []

    def make(**kwargs) -> Receiver:
        made.append(Receiver(**kwargs))
        return made[-1]

    yield make
    for one in made:
        one.close()


def _service(store, tmp_path, url: str, **more) -> tuple[RunService, Webhooks]:
    settings = Settings(
        home=tmp_path, provider="scripted", webhook_url=url, app_url="http://ops:8501", **more
    )
    service = RunService(store, settings, timeout_tick_s=0)
    hooks = Webhooks.attach(service)
    hooks.backoff_s = 0.01  # retries at once: the test waits for them, never for time
    return service, hooks


def _one_waiting_run(store, tmp_path, url: str, **more) -> str:
    """A run that reaches its approval with the webhook at ``url``, once every note is
    sent or given up."""
    service, hooks = _service(store, tmp_path, url, **more)
    try:
        run_id = service.start(REPORT, Design())
        wait_waiting(store, run_id)
        # The store says waiting before the run's worker tells the webhooks (it then ends
        # its leg): waiting for the leg makes the note queued before drain looks.
        assert service.wait(run_id, timeout=60).status == "waiting"
        assert hooks.drain()
    finally:
        service.shutdown()
    return run_id


def _leaks(text: str) -> bool:
    return TOKEN in text or "9f8e7d6c5b4a" in text


def test_one_post_per_new_waiting_question_and_one_per_timeout(store, tmp_path, receiver, caplog):
    caplog.set_level(logging.DEBUG)
    hook = receiver()
    service, hooks = _service(store, tmp_path, hook.url)
    try:
        design = Design(approval_timeout_s=30, timeout_action="skip")
        first = service.start(REPORT, design)
        wait_waiting(store, first)
        second = service.start(IBM, design)
        wait_waiting(store, second)
        (item,) = store.pending_interrupts(first)
        assert service.apply_timeouts(now=item["asked_at"] + 31) == 2  # both past their time
        assert service.wait(first, timeout=60).status == "done"
        assert service.wait(second, timeout=60).status == "done"
        assert hooks.drain()
    finally:
        service.shutdown()
    events = [(p["event"], p["run_id"]) for p in hook.posts]
    assert sorted(events) == sorted(
        [
            ("approval.waiting", first),
            ("approval.waiting", second),
            ("approval.timed_out", first),
            ("approval.timed_out", second),
        ]
    )
    waiting = next(p for p in hook.posts if p["event"] == "approval.waiting")
    assert waiting["system"] == "plan_execute" and waiting["agent"] == "report_writer"
    assert waiting["question"] == REPORT and waiting["step"] == 2
    assert waiting["asks"].startswith("Save the findings so far as a report")
    assert waiting["deadline"] and waiting["deadline"] > waiting["asked_at"]
    assert waiting["link"] == f"http://ops:8501/approvals?card={item['id']}"
    timed_out = next(p for p in hook.posts if p["event"] == "approval.timed_out")
    assert timed_out["decided"] == {"decision": "skip", "by": "timeout"}
    assert not any(_leaks(r.getMessage()) for r in caplog.records)


def test_a_slack_payload_is_one_text_with_the_link(store, tmp_path, receiver):
    hook = receiver()
    run_id = _one_waiting_run(store, tmp_path, hook.url, webhook_format="slack")
    ((key, text),) = [(k, v) for post in hook.posts for k, v in post.items()]
    (item,) = store.pending_interrupts(run_id)
    assert key == "text"
    assert text.startswith(f"Stepwise: step 2 (report_writer) of “{REPORT}” waits for a decision.")
    assert f"<http://ops:8501/approvals?card={item['id']}|Open the card>" in text


def test_failed_posts_are_retried_a_bounded_number_of_times_and_never_show_the_token(
    store, tmp_path, receiver, caplog
):
    caplog.set_level(logging.WARNING)
    hook = receiver(fail_first=100)
    _one_waiting_run(store, tmp_path, hook.url, webhook_retries=2)
    assert hook.attempts == 3 and hook.posts == []  # the first and two retries
    lines = [r.getMessage() for r in caplog.records if r.name == "graph.service.webhooks"]
    assert len([line for line in lines if "failed (attempt" in line]) == 3
    assert any("given up after 3 attempts" in line for line in lines)
    assert all(
        f"http://127.0.0.1:{hook.server.server_address[1]}/[redacted]" in line
        for line in lines
        if "failed" in line
    )
    assert not any(_leaks(line) for line in lines)


def test_a_receiver_that_hangs_or_is_down_holds_no_run(store, tmp_path, receiver):
    hanging = receiver(hold=True)
    service, hooks = _service(store, tmp_path, hanging.url)
    try:
        first = service.start(REPORT, Design())
        wait_waiting(store, first)
        assert hanging.arrived.wait(30)  # the POST is held by the receiver...
        second = service.start(IBM, Design())
        wait_waiting(store, second)  # ...and another run reaches its approval meanwhile
        assert store.run(first).status == "waiting" and hanging.posts == []
    finally:
        hanging.release.set()
        service.shutdown()

    with socket.socket() as spare:  # a port nothing listens on
        spare.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{spare.getsockname()[1]}/hooks/{TOKEN}"
    run_id = _one_waiting_run(store, tmp_path, down, webhook_retries=1)  # tried, given up
    assert store.run(run_id).status == "waiting"  # and the run waits for its human


def test_the_app_and_the_command_line_get_the_webhook_from_the_settings(store, tmp_path, receiver):
    hook = receiver()
    settings = Settings(home=tmp_path, provider="scripted", webhook_url=hook.url)
    service = open_run_service(store, settings, timeout_tick_s=0)
    try:
        run_id = service.start(REPORT, Design())
        wait_waiting(store, run_id)
        wait_for(lambda: hook.posts, what="the webhook's POST")
    finally:
        service.shutdown()
    assert [p["run_id"] for p in hook.posts] == [run_id]


def test_a_webhook_url_that_is_not_http_is_refused_without_quoting_it():
    with pytest.raises(ValidationError) as refused:
        Settings(webhook_url=f"ftp://files.example.com/{TOKEN}")
    assert "must be an http:// or https:// address" in str(refused.value)
    assert not _leaks(str(refused.value))
    assert Settings(webhook_url="").webhook_url is None
    assert Settings(webhook_url="https://h.example/x").public_dict()["webhook_url"] == "set"


def test_the_shown_url_keeps_the_host_only():
    assert shown_url(f"https://hooks.slack.com/services/{TOKEN}") == (
        "https://hooks.slack.com/[redacted]"
    )
    assert shown_url("http://127.0.0.1:9000") == "http://127.0.0.1:9000"
    settings = Settings(webhook_url=f"https://hooks.example.com/services/{TOKEN}?{SIGNATURE}")
    whole = settings.redact(f"POST https://hooks.example.com/services/{TOKEN}?{SIGNATURE} no")
    assert whole == "POST [redacted] no"
    # a server's error quoting the path or the token alone
    said = settings.redact(f"POST /services/{TOKEN} refused; token {TOKEN}, query {SIGNATURE}")
    assert said == "POST /[redacted] refused; token [redacted], query [redacted]"
    assert settings.redact("the services are up") == "the services are up"
