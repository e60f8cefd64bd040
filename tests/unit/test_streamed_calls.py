"""Streamed model calls on the fake server: the stall clock, the cap, and the queue.

A server that stops writing mid-reply is given up after the stall timeout, saying so, and
its request is not sent again; a slow but steady reply is never cut by that clock; a call
past its cap is given up; and two calls to a server that serves one at a time queue in
the client, the second saying how many calls are ahead of it.
"""

from __future__ import annotations

import threading
import time

import pytest
from langchain_core.messages import HumanMessage

from graph.models.call_progress import CALLS, WAITING
from graph.models.calls import ModelCallError
from graph.models.modes import ModeBook
from graph.models.server import ServerChatModel
from graph.models.server_slots import forget_slots, slots_for
from tests.support_procs.fake_server import EchoChatModel, LocalOpenAIServer

pytestmark = pytest.mark.timeout(60)

WORDS = "one two three four five six seven eight nine ten eleven twelve"


@pytest.fixture(autouse=True)
def _fresh_slots():
    forget_slots()
    yield
    forget_slots()


def model_for(server: LocalOpenAIServer, **fields) -> ServerChatModel:
    values = dict(
        model="echo",
        api_key="not-needed",
        base_url=server.base_url,
        max_retries=2,
        timeout=30,
        call_deadline_s=30,
        stall_timeout_s=5,
        modes=ModeBook(),
    )
    return ServerChatModel(**{**values, **fields})


def wait_until(check, within_s: float = 10.0) -> bool:
    """Poll ``check`` (the server's side of a closed connection comes a moment later)."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_a_server_that_stops_writing_mid_reply_is_given_up_after_the_stall_timeout_and_not_asked_again():
    with LocalOpenAIServer(EchoChatModel) as server:
        server.inject("stall_after:3")
        model = model_for(server, stall_timeout_s=0.5)
        with pytest.raises(ModelCallError) as caught:
            model.invoke([HumanMessage(WORDS)])
        said = str(caught.value)
        assert "stopped writing: no new token for 0.5 s after 3 token(s)" in said, said
        assert "not sent again (STEPWISE_STALL_TIMEOUT)" in said, said
        # the stream was closed, so the server stopped; and nothing was sent twice
        assert wait_until(lambda: server.hangups == 1), server.hangups
        assert len(server.requests) == 1
        assert server.requests[0]["stream"] is True


def test_a_slow_but_steady_reply_is_not_cut_by_the_stall_clock():
    with LocalOpenAIServer(EchoChatModel) as server:
        # a word every 0.2 s: 12 words take 2.2 s, far past the 0.6 s stall timeout
        server.inject("steady:0.2")
        model = model_for(server, stall_timeout_s=0.6)
        reply = model.invoke([HumanMessage(WORDS)])
        assert reply.content == WORDS
        assert reply.response_metadata["finish_reason"] == "stop"
        assert len(server.requests) == 1


def test_a_call_past_its_cap_is_given_up_though_tokens_still_come():
    with LocalOpenAIServer(EchoChatModel) as server:
        server.inject("steady:0.3")  # 12 words: 3.3 s, past the 1 s cap
        model = model_for(server, call_deadline_s=1, stall_timeout_s=5)
        with pytest.raises(ModelCallError) as caught:
            model.invoke([HumanMessage(WORDS)])
        assert "took longer than 1 s, so it was given up" in str(caught.value)
        assert wait_until(lambda: server.hangups == 1), server.hangups
        assert len(server.requests) == 1


def test_the_reply_limit_cuts_a_streamed_reply_and_says_so():
    with LocalOpenAIServer(EchoChatModel) as server:
        model = model_for(server, max_tokens=16)
        reply = model.invoke([HumanMessage(" ".join([WORDS] * 3))])
        assert reply.content.split() == (WORDS.split() * 2)[:16]
        assert reply.response_metadata["stepwise"]["cut_at"] == 16
        assert reply.usage_metadata["output_tokens"] == 16
        assert server.requests[0]["stream"] is True


def test_a_one_at_a_time_server_is_learnt_as_such_and_another_is_not_limited():
    with LocalOpenAIServer(EchoChatModel, one_at_a_time=True) as single:
        gate = slots_for(single.base_url)
        assert gate.limit == 1
        assert "one call at a time" in gate.why
    with LocalOpenAIServer(EchoChatModel) as other:
        assert slots_for(other.base_url).limit is None


def test_two_calls_to_a_one_at_a_time_server_queue_in_the_client_and_the_second_says_so():
    with LocalOpenAIServer(EchoChatModel, one_at_a_time=True) as server:
        server.inject("slow:1.5")  # the first call holds the server for a while
        model = model_for(server)
        replies: dict[str, str] = {}
        errors: list[BaseException] = []

        def call(name: str) -> None:
            try:
                replies[name] = model.invoke([HumanMessage(f"{name} says hello")]).content
            except BaseException as exc:  # handed to the test below
                errors.append(exc)

        first = threading.Thread(target=call, args=("first",))
        first.start()
        assert wait_until(lambda: server.in_flight == 1)
        second = threading.Thread(target=call, args=("second",))
        second.start()
        seen: list[tuple[str, int]] = []

        def second_waits() -> bool:
            seen.extend((c.state, c.ahead) for c in CALLS.all())
            return (WAITING, 1) in seen

        assert wait_until(second_waits), seen
        first.join(30)
        second.join(30)
        assert not errors, errors
        assert replies == {"first": "first says hello", "second": "second says hello"}
        assert server.max_in_flight == 1  # never two at once at the server
        assert CALLS.all() == []  # both calls ended and left the registry
