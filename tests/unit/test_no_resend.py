"""A request that timed out after it was sent is never sent again.

A single-slot server (llama-cpp-python) keeps generating a request its client gave up on;
the openai client's own retries would queue a copy of it behind the first, and the next
calls behind both. Counted at the project's test server, over real HTTP with the real
client and its retries on: a slow answer, and one that stalls mid-body, each reach the
server once. A connection refused before anything was sent is still retried.
"""

from __future__ import annotations

import logging
import socket

import pytest
from langchain_core.messages import HumanMessage

from graph.models.calls import ModelCallError
from graph.models.chat import describe_error, make_chat_model
from graph.models.modes import ModeBook
from graph.models.scripted import ScriptedChatModel
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer


def settings_for(server_url: str, **extra) -> Settings:
    return Settings(
        **{
            "openai_base_url": server_url,
            "openai_api_key": "test-key",
            "planner_model": "local-planner",
            "worker_model": "local-worker",
            "max_retries": 2,
            "request_timeout_s": 0.5,
            "model_call_deadline_s": 30,
            **extra,
        }
    )


def call(settings: Settings):
    model = make_chat_model("planner", settings, modes=ModeBook())
    return model.invoke([HumanMessage("Say hello.")])


@pytest.mark.timeout(60)
def test_a_request_with_no_answer_before_the_read_timeout_is_sent_once():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("slow:3", "slow:3", "slow:3")  # as slow on every attempt
        url = server.base_url
        with pytest.raises(ModelCallError) as failed:
            call(settings_for(url))
        sent = len(server.requests)
    assert sent == 1
    assert str(failed.value) == (
        f"The model server at {url} did not answer within 0.5 s (STEPWISE_REQUEST_TIMEOUT); "
        "the request was not sent again, since the server may still be working on it."
    )


@pytest.mark.timeout(60)
def test_an_answer_that_stalls_mid_body_is_not_asked_again():
    with LocalOpenAIServer(ScriptedChatModel) as server:
        server.inject("drip:100", "drip:100", "drip:100")  # headers, then nothing
        url = server.base_url
        with pytest.raises(ModelCallError) as failed:
            call(settings_for(url))
        sent = len(server.requests)
    assert sent == 1
    assert str(failed.value) == (
        f"The model server at {url} stopped sending mid-answer: nothing more came before "
        "the read timeout."
    )


@pytest.mark.timeout(60)
def test_a_refused_connection_is_still_retried(caplog):
    """Nothing reached a server: trying again cannot pile up work (a guard: this held
    before the change too, and must still)."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = settings_for(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with caplog.at_level(logging.INFO, logger="openai"):
        with pytest.raises(Exception) as failed:
            call(settings)
    assert [r for r in caplog.records if r.getMessage().startswith("Retrying request")]
    assert describe_error(failed.value, settings) == (
        f"Could not reach the model server at http://127.0.0.1:{port}/v1 after 2 attempt(s): "
        "is it running?"
    )
