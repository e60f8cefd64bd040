"""A model server that misbehaves ends a run quickly and says what it did.

Real parts only: the project's own test server (``tests.support_procs.fake_server``) misbehaves
on demand over real HTTP, the real langchain-openai client calls it, and the runs go
through ``run_question`` like the command line's. Covered: a server dripping one byte at
a time (Stop ends the run within 2 s; the call's deadline ends it otherwise), a server
that never answers, an answer cut off mid-body, and replies that are not chat
completions at all, for each of the three systems.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from graph.kernel.design import Design
from graph.kernel.system import get_system
from graph.models.modes import PROCESS_MODES
from graph.models.scripted import ScriptedChatModel
from graph.service.run_controls import StopSignal
from graph.service.run_service import RunService
from graph.service.runs import run_question
from graph.service.store import Store
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer

QUESTION = "What happened to Apple when it launched the iPhone, and how did its stock price change in 2007?"
SYSTEMS = ["plan_execute", "supervisor_bus", "hierarchical_teams"]

# What a reason in words never holds: a Python exception's class name, a traceback, or a
# dict dumped as Python text.
RAW_TEXT = re.compile(r"\b[A-Z]\w*(Error|Exception)\b|Traceback|\{'|\bNoneType\b")


@pytest.fixture(autouse=True)
def forget_learnt_modes():
    PROCESS_MODES.forget()
    yield
    PROCESS_MODES.forget()


def settings_for(server_url: str, tmp_path, **extra) -> Settings:
    values = {
        "home": tmp_path,
        "openai_base_url": server_url,
        "openai_api_key": "test-key",
        "planner_model": "local-planner",
        "worker_model": "local-worker",
        "max_retries": 0,
        "request_timeout_s": 30,
        **extra,
    }
    return Settings(**values)


def run_in_thread(settings: Settings, system: str = "plan_execute", cancel=None):
    """Start a run on a thread; returns (thread, result box): a hung run fails the test
    where it waits, instead of hanging the suite."""
    design = Design(system=system)
    graph = get_system(system).build_graph(design, settings=settings)
    box: dict = {}

    def work():
        box["outcome"] = run_question(
            QUESTION, design, settings=settings, graph=graph, cancel=cancel
        )
        box["ended"] = time.monotonic()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, box


def model_call_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "stepwise-model-call" and t.is_alive()]


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


@pytest.mark.timeout(60)
def test_stop_ends_a_run_on_a_dripping_server_within_2_s(tmp_path):
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("drip:2")  # the Planner's call: one byte every 2 s
        cancel = StopSignal()
        thread, box = run_in_thread(settings_for(server.base_url, tmp_path), cancel=cancel)
        assert wait_until(lambda: server.requests, 10), "the run never called the server"
        time.sleep(0.5)  # the answer has begun dripping
        stopped_at = time.monotonic()
        cancel.set()
        thread.join(timeout=10)
        assert not thread.is_alive(), "the run was still running 10 s after Stop"
        outcome = box["outcome"]
        assert outcome.status == "cancelled", outcome.reason
        assert box["ended"] - stopped_at < 2.0
        # The abandoned request's socket was shut: its worker ends too, not at the drip's end.
        assert wait_until(lambda: not model_call_threads(), 2.0)


@pytest.mark.timeout(60)
def test_the_apps_stop_button_ends_a_run_on_a_dripping_server_within_2_s(tmp_path):
    """The same through the app's run service, whose cancel is the Stop button."""
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("drip:2")
        settings = settings_for(server.base_url, tmp_path)
        store = Store.open(settings)
        service = RunService(store, settings, timeout_tick_s=0)
        try:
            run_id = service.start(QUESTION, Design())
            assert wait_until(lambda: server.requests, 10), "the run never called the server"
            time.sleep(0.5)
            stopped_at = time.monotonic()
            assert service.cancel(run_id)
            ended = wait_until(lambda: store.run(run_id).status == "cancelled", 2.0)
            took = time.monotonic() - stopped_at
            record = store.run(run_id)
        finally:
            service.shutdown(wait=False)
            store.close()
    assert ended, f"the run was {record.status} {took:.1f} s after Stop: {record.reason}"


@pytest.mark.timeout(60)
def test_a_dripping_server_fails_the_run_at_the_call_deadline(tmp_path):
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("drip:1")
        settings = settings_for(server.base_url, tmp_path, model_call_deadline_s=1.5)
        started = time.monotonic()
        thread, box = run_in_thread(settings)
        thread.join(timeout=15)
        assert not thread.is_alive(), "the run was still running 15 s after it started"
    outcome = box["outcome"]
    assert outcome.status == "failed"
    assert "took longer than 1.5 s" in outcome.reason, outcome.reason
    assert box["ended"] - started < 10


@pytest.mark.timeout(60)
def test_a_server_that_never_answers_fails_the_run_at_the_call_deadline(tmp_path):
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject(*["never_answer"] * 3)  # every attempt of the client's retries
        url = server.base_url
        settings = settings_for(
            url, tmp_path, model_call_deadline_s=1, request_timeout_s=30, max_retries=2
        )
        thread, box = run_in_thread(settings)
        thread.join(timeout=15)
        assert not thread.is_alive(), "the run was still running 15 s after it started"
    outcome = box["outcome"]
    assert outcome.status == "failed"
    assert outcome.reason == (
        f"The model call (a plan call) to {url} took longer than 1 s, so it was given up "
        "(STEPWISE_MODEL_CALL_DEADLINE)."
    )


@pytest.mark.timeout(60)
def test_an_answer_that_stalls_after_it_began_says_the_server_stopped_sending(tmp_path):
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("drip:100")  # headers, then nothing before the read timeout
        thread, box = run_in_thread(settings_for(server.base_url, tmp_path, request_timeout_s=0.5))
        thread.join(timeout=30)
    outcome = box["outcome"]
    assert outcome.status == "failed"
    assert "stopped sending mid-answer: nothing more came" in outcome.reason, outcome.reason


def test_an_answer_cut_off_mid_body_says_the_server_stopped_sending(tmp_path):
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("half_body")
        thread, box = run_in_thread(settings_for(server.base_url, tmp_path))
        thread.join(timeout=30)
    outcome = box["outcome"]
    assert outcome.status == "failed"
    assert "stopped sending mid-answer" in outcome.reason, outcome.reason
    assert "Could not reach" not in outcome.reason


UNREADABLE = {
    "body_invalid_utf8": "not valid UTF-8",
    "body_not_json": "not JSON",
    "body_html": "not JSON",
    "body_empty": "an empty reply",
    "body_no_choices": "without any choices",
    "body_null_choices": "without any choices",
    "body_empty_choices": "empty list of choices",
    "body_deep_nesting": "nested too deeply",
}


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("fault", sorted(UNREADABLE))
def test_a_reply_that_is_not_a_chat_completion_fails_the_run_in_words(fault, system, tmp_path):
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject(fault)  # the first model call of the run
        url = server.base_url
        thread, box = run_in_thread(settings_for(url, tmp_path), system)
        thread.join(timeout=60)
    outcome = box["outcome"]
    assert outcome.status == "failed"
    assert outcome.reason.startswith(f"The model server at {url} "), outcome.reason
    assert UNREADABLE[fault] in outcome.reason
    assert not RAW_TEXT.search(outcome.reason), outcome.reason


def test_a_reply_nested_too_deeply_gets_the_repair_round(tmp_path):
    """Deep nesting in the model's text is bad JSON like any other, not a crash."""
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("deep_json")  # the Planner's first reply
        thread, box = run_in_thread(settings_for(server.base_url, tmp_path))
        thread.join(timeout=60)
    outcome = box["outcome"]
    assert outcome.status == "done", outcome.reason
    assert any("nested too deeply" in n for n in outcome.state["notices"])
