"""Every reply bounded on every server: the limit in the field the server reads, each call
kind's budget, and a reply cut at its limit repaired by asking for a shorter one.

The servers here are the project's test server over real HTTP with the real
``langchain-openai`` client: one that reads only ``max_tokens`` (as llama-cpp-python's),
one that refuses ``max_tokens`` by name (as OpenAI's API for its reasoning models), one
that refuses ``max_completion_tokens``. The real llama.cpp server is in
``tests/realmodel/test_reply_limits.py``.
"""

from __future__ import annotations

import httpx
import openai
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.kernel.design import Design
from graph.kernel.guardrail import Verdict
from graph.models.chat import make_chat_model
from graph.models.modes import PROCESS_MODES, ModeBook
from graph.models.reply_limits import REPLY_TOKENS, refused_field, reply_budget
from graph.models.scripted import ScriptedChatModel
from graph.models.structured import ModelReplyError, ask_json
from graph.settings import Settings
from tests.support_procs.fake_server import LocalOpenAIServer
from tests.unit.conftest import wait_status

QUESTION = "What happened to Apple when it launched the iPhone, and how did its stock price change in 2007?"
SHORTER = "answer shorter"


def settings_for(server_url: str, **extra) -> Settings:
    return Settings(
        **{
            "openai_base_url": server_url,
            "openai_api_key": "test-key",
            "planner_model": "local-planner",
            "worker_model": "local-worker",
            "max_retries": 0,
            "request_timeout_s": 10,
            **extra,
        }
    )


@pytest.fixture(autouse=True)
def forget_learnt_modes():
    PROCESS_MODES.forget()
    yield
    PROCESS_MODES.forget()


def _reply(text: str) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


LONG = " ".join(["It is a harmless question."] * 80)


class Brief(BaseChatModel):
    """Answers a verdict in a few tokens."""

    @property
    def _llm_type(self) -> str:
        return "brief"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return _reply('{"verdict": "pass", "reason": "It is fine."}')


class Rambler(Brief):
    """Answers a verdict with a reason far longer than any limit, until it is told its
    reply was cut."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        if SHORTER in str(messages[-1].content):
            return super()._generate(messages)
        return _reply(f'{{"verdict": "pass", "reason": "{LONG}"}}')


class AlwaysRambles(Brief):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return _reply(f'{{"verdict": "pass", "reason": "{LONG}"}}')


def ask_verdict(model, kind: str | None = "verdict"):
    return ask_json(
        model,
        "Is this message safe? Reply with JSON.",
        Verdict,
        label="The classifier",
        repair_prompt=lambda error, _reply: f"Your reply could not be used: {error}.",
        kind=kind,
    )


def test_a_run_sends_each_call_its_kinds_budget_in_both_fields_and_records_which(
    service, store, settings
):
    with LocalOpenAIServer(ScriptedChatModel, reads_token_fields=["max_tokens"]) as server:
        service.settings = settings.model_copy(
            update={
                "provider": "openai",
                "openai_base_url": server.base_url,
                "planner_model": "local-planner",
                "worker_model": "local-worker",
                "max_retries": 0,
                "max_tokens": 600,
            }
        )
        run_id = service.start(QUESTION, Design())
        wait_status(service, run_id, "done")
        sent = list(server.requests)
    for request in sent:  # the server that reads only max_tokens gets it on every call
        assert request["max_tokens"] == request["max_completion_tokens"], request
    planner, executor = sent[0], sent[1]
    assert planner["max_tokens"] == 600  # a plan's 768, capped by STEPWISE_MAX_TOKENS
    assert executor["max_tokens"] == REPLY_TOKENS["decision"]
    agents = [r for r in sent if r.get("tools")]
    assert agents and {r["max_tokens"] for r in agents} == {600}  # no kind: the cap
    calls = [
        e["data"]["llm_call"]
        for e in store.events(run_id)
        if isinstance(e.get("data"), dict) and "llm_call" in e["data"]
    ]
    assert calls[0]["call_kind"] == "plan" and calls[0]["max_tokens"] == 600
    assert calls[1]["call_kind"] == "decision"
    assert {c["token_field"] for c in calls} == {"max_tokens and max_completion_tokens"}


def test_a_server_that_refuses_max_tokens_by_name_gets_max_completion_tokens_and_it_is_learnt():
    book = ModeBook()
    with LocalOpenAIServer(
        Brief,
        reads_token_fields=["max_completion_tokens"],
        refuses_token_field="max_tokens",
    ) as server:
        url = server.base_url
        model = make_chat_model("planner", settings_for(url), modes=book)
        first = ask_verdict(model)
        sent_first = [dict(r) for r in server.requests]
        server.requests.clear()
        again = ask_verdict(model)
        sent_again = list(server.requests)
    assert first.value.verdict == "pass"
    assert [("max_tokens" in r, r.get("max_completion_tokens")) for r in sent_first] == [
        (True, 160),
        (False, 160),
    ]
    assert (
        "The server refused max_tokens (HTTP 400); the reply limit went in max_completion_tokens."
    ) in first.notices
    assert first.replies[-1].response_metadata["stepwise"]["token_field"] == (
        "max_completion_tokens"
    )
    assert book.get(url.rstrip("/"), "local-planner").token_field == ("max_completion_tokens")
    # Learnt: the next call sends only the field the server takes, and says nothing more.
    assert [("max_tokens" in r, r.get("max_completion_tokens")) for r in sent_again] == [
        (False, 160)
    ]
    assert not [n for n in again.notices if "refused" in n]


def test_a_server_that_refuses_max_completion_tokens_gets_max_tokens_alone():
    with LocalOpenAIServer(
        Brief,
        reads_token_fields=["max_tokens"],
        refuses_token_field="max_completion_tokens",
    ) as server:
        model = make_chat_model("planner", settings_for(server.base_url), modes=ModeBook())
        reply = ask_verdict(model)
        sent = list(server.requests)
    assert [(r.get("max_tokens"), "max_completion_tokens" in r) for r in sent] == [
        (160, True),
        (160, False),
    ]
    assert reply.replies[-1].response_metadata["stepwise"]["token_field"] == "max_tokens"


def _status_error(status: int, message: str) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"message": message}})
    return openai.APIStatusError(message, response=response, body={"error": {"message": message}})


@pytest.mark.parametrize(
    "status, message, refused",
    [
        (
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model.",
            "max_tokens",
        ),
        (422, "max_completion_tokens: Extra inputs are not permitted", "max_completion_tokens"),
        (
            400,
            "Unsupported parameter: 'max_completion_tokens'. Use 'max_tokens' instead.",
            "max_completion_tokens",
        ),
        # About the value, not the field: the other field would not help.
        (400, "max_tokens must be at most 4096 for this model", None),
        (400, "This model's maximum context length is 8192 tokens", None),
        (401, "Unknown max_tokens for this key", None),
    ],
)
def test_only_a_refusal_of_the_field_by_name_counts_as_one(status, message, refused):
    assert refused_field(_status_error(status, message)) == refused


def test_a_kinds_budget_is_capped_by_stepwise_max_tokens():
    assert reply_budget("route", 1024) == REPLY_TOKENS["route"]
    assert reply_budget("plan", 100) == 100
    assert reply_budget(None, 1024) == 1024
    assert reply_budget("no such kind", 700) == 700


def test_a_reply_cut_at_its_limit_is_repaired_by_asking_for_a_shorter_one():
    with LocalOpenAIServer(Rambler, reads_token_fields=["max_tokens"]) as server:
        model = make_chat_model("planner", settings_for(server.base_url), modes=ModeBook())
        reply = ask_verdict(model)
        sent = list(server.requests)
    assert reply.repaired and reply.value.reason == "It is fine."
    assert "The classifier reply unusable: the reply was cut at 160 tokens, its limit." in (
        reply.notices
    )
    assert reply.replies[0].response_metadata["stepwise"]["cut_at"] == 160
    repair = sent[1]["messages"][-1]["content"]
    assert (
        repair == "Your reply could not be used: your reply was cut at 160 tokens: answer shorter."
    )


def test_a_reply_cut_twice_fails_saying_it_was_cut_not_that_it_timed_out():
    with LocalOpenAIServer(AlwaysRambles, reads_token_fields=["max_tokens"]) as server:
        model = make_chat_model("planner", settings_for(server.base_url), modes=ModeBook())
        with pytest.raises(ModelReplyError) as failed:
            ask_verdict(model, kind="route")
    assert str(failed.value) == (
        "The classifier gave unusable output twice; last problem: the reply was cut at "
        f"{REPLY_TOKENS['route']} tokens, its limit."
    )
