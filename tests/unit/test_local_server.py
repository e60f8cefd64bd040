"""LocalOpenAIServer, driven by the real ChatOpenAI / openai clients over loopback HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from tests.support_procs.fake_server import MALFORMED_JSON, PROSE, EchoChatModel, LocalOpenAIServer

REPO = Path(__file__).resolve().parents[2]
JSON_SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "plan", "schema": {"type": "object"}},
}


@tool
def search(query: str) -> str:
    """Look something up."""
    return f"results for {query}"


class Plan(BaseModel):
    goal: str
    steps: list[str]


class ExplodingModel(EchoChatModel):
    """Echo, except the word 'explode' raises inside the model."""

    def _reply(self, messages, tools, tool_choice):
        if messages and "explode" in str(messages[-1].content):
            raise RuntimeError("model exploded")
        return super()._reply(messages, tools, tool_choice)


def chat(server: LocalOpenAIServer, **overrides) -> ChatOpenAI:
    options = dict(
        base_url=server.base_url,
        api_key="test-key",
        model="stepwise-local",
        max_retries=0,
        timeout=5,
    )
    options.update(overrides)
    return ChatOpenAI(**options)


@pytest.fixture
def server():
    with LocalOpenAIServer(EchoChatModel) as srv:
        yield srv


# -- plain calls ------------------------------------------------------------- #


def test_models_endpoint_lists_model_name():
    with LocalOpenAIServer(EchoChatModel, model_name="tiny") as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0)
        assert [m.id for m in client.models.list()] == ["tiny"]


def test_base_url_is_loopback_with_real_port(server):
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.base_url.endswith("/v1")
    assert server.port > 0


def test_plain_invoke_echoes_and_records_request(server):
    reply = chat(server).invoke("hello there, world")
    assert reply.content == "hello there, world"
    assert reply.response_metadata["finish_reason"] == "stop"
    usage = reply.usage_metadata
    assert usage["input_tokens"] == 4 and usage["output_tokens"] == 4
    assert usage["total_tokens"] == 8
    [body] = server.requests
    assert body["model"] == "stepwise-local"
    assert body["messages"] == [{"role": "user", "content": "hello there, world"}]


def test_system_and_multi_turn_messages(server):
    reply = chat(server).invoke(
        [("system", "be terse"), ("human", "first"), ("ai", "ok"), ("human", "second")]
    )
    assert reply.content == "second"
    assert [m["role"] for m in server.requests[0]["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]


def test_tool_call_round_trip(server):
    llm = chat(server).bind_tools([search])
    first = llm.invoke("find cats")
    assert first.response_metadata["finish_reason"] == "tool_calls"
    [call] = first.tool_calls
    assert call["name"] == "search" and call["args"] == {"query": "find cats"}
    assert server.requests[0]["tools"][0]["function"]["name"] == "search"

    result = search.invoke(call)  # a ToolMessage
    assert isinstance(result, ToolMessage)
    final = llm.invoke([HumanMessage("find cats"), first, result])
    assert final.content == "find cats" and not final.tool_calls
    sent = server.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == call["id"]
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"query": "find cats"}
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": "results for find cats",
    }


def test_raw_completion_shape_and_broken_tool_args_in_history(server):
    client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    broken = {
        "id": "call_x",
        "type": "function",
        "function": {"name": "search", "arguments": '{"query": '},
    }
    completion = client.chat.completions.create(
        model="stepwise-local",
        tools=[{"type": "function", "function": {"name": "search", "parameters": {}}}],
        messages=[
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": None, "tool_calls": [broken]},
            {"role": "tool", "tool_call_id": "call_x", "content": "bad arguments"},
            {"role": "user", "content": "try again"},
        ],
    )
    assert completion.object == "chat.completion"
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"query": "try again"}
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


def test_tool_choice_none_is_respected(server):
    reply = chat(server).bind_tools([search], tool_choice="none").invoke("just talk")
    assert reply.content == "just talk" and not reply.tool_calls


# -- streaming ----------------------------------------------------------------- #


def test_streaming_chunks_add_up(server):
    chunks = list(chat(server, stream_usage=True).stream("one two three four"))
    assert len([c for c in chunks if c.content]) > 1
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.content == "one two three four"
    assert total.usage_metadata["output_tokens"] == 4
    body = server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streaming_tool_call(server):
    chunks = list(chat(server).bind_tools([search]).stream("find dogs"))
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    [call] = total.tool_calls
    assert call["name"] == "search" and call["args"] == {"query": "find dogs"}
    assert total.response_metadata["finish_reason"] == "tool_calls"


# -- structured output capability ---------------------------------------------- #


def test_json_schema_accepted_by_json_schema_server(server):
    reply = chat(server).invoke("not json", response_format=JSON_SCHEMA_FORMAT)
    assert reply.content == "not json"  # the model decides the content, not the server
    assert server.requests[0]["response_format"] == JSON_SCHEMA_FORMAT

    structured = chat(server).with_structured_output(Plan, method="json_schema")
    plan = structured.invoke('{"goal": "g", "steps": ["a", "b"]}')
    assert plan == Plan(goal="g", steps=["a", "b"])
    assert server.requests[1]["response_format"]["type"] == "json_schema"


def test_json_schema_rejected_by_json_object_server():
    with LocalOpenAIServer(EchoChatModel, structured="json_object") as srv:
        with pytest.raises(openai.BadRequestError) as info:
            chat(srv).invoke("x", response_format=JSON_SCHEMA_FORMAT)
        assert info.value.status_code == 400
        assert info.value.body == {
            "message": "response_format json_schema is not supported",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
        # ...but json mode works there
        structured = chat(srv).with_structured_output(Plan, method="json_mode")
        assert structured.invoke('{"goal": "g", "steps": []}') == Plan(goal="g", steps=[])
        assert srv.requests[-1]["response_format"] == {"type": "json_object"}


def test_none_server_only_accepts_text():
    with LocalOpenAIServer(EchoChatModel, structured="none") as srv:
        with pytest.raises(openai.BadRequestError, match="json_object is not supported"):
            chat(srv).invoke("x", response_format={"type": "json_object"})
        assert chat(srv).invoke("x", response_format={"type": "text"}).content == "x"


# -- faults ---------------------------------------------------------------------- #


def test_http_500_fault_raises_without_retries(server):
    server.inject("http_500")
    with pytest.raises(openai.InternalServerError):
        chat(server).invoke("hi")
    assert chat(server).invoke("hi").content == "hi"  # consumed by one request only


def test_http_500_fault_is_retried_by_client(server):
    server.inject("http_500")
    assert chat(server, max_retries=2).invoke("hi").content == "hi"
    assert len(server.requests) == 2  # the failed attempt and the retry


def test_http_429_fault(server):
    server.inject("http_429")
    with pytest.raises(openai.RateLimitError):
        chat(server).invoke("hi")


def test_content_faults_in_order(server):
    server.inject("malformed_json", "prose")
    llm = chat(server)
    assert llm.invoke("hi").content == MALFORMED_JSON
    assert llm.invoke("hi").content == PROSE
    assert llm.invoke("hi").content == "hi"


def test_content_fault_replaces_tool_calls_and_streams(server):
    server.inject("prose", "malformed_json")
    reply = chat(server).bind_tools([search]).invoke("find cats")
    assert reply.content == PROSE and not reply.tool_calls
    streamed = "".join(c.content for c in chat(server).stream("hi"))
    assert streamed == MALFORMED_JSON


def test_slow_fault_times_out_client(server):
    server.inject("slow:2")
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        chat(server, timeout=0.5).invoke("hi")
    assert time.monotonic() - started < 1.5
    assert chat(server).invoke("hi").content == "hi"  # the server survived


def test_disconnect_fault(server):
    server.inject("disconnect")
    with pytest.raises(openai.APIConnectionError):
        chat(server).invoke("hi")
    assert chat(server).invoke("hi").content == "hi"


def test_unknown_fault_is_rejected(server):
    with pytest.raises(ValueError):
        server.inject("http_418")
    with pytest.raises(ValueError):
        server.inject("slow:soon")


def test_model_error_becomes_http_500():
    with LocalOpenAIServer(ExplodingModel) as srv:
        llm = chat(srv)
        with pytest.raises(openai.InternalServerError, match="model exploded"):
            llm.invoke("explode")
        with pytest.raises(openai.InternalServerError, match="model exploded"):
            list(llm.stream("explode"))
        assert llm.invoke("still alive").content == "still alive"


# -- concurrency and lifecycle ------------------------------------------------ #


def test_delay_is_served_in_parallel():
    with LocalOpenAIServer(EchoChatModel, delay_s=0.3) as srv:
        llm = chat(srv)
        answers: dict[int, str] = {}

        def ask(i: int) -> None:
            answers[i] = llm.invoke(f"request {i}").content

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        elapsed = time.monotonic() - started
    assert answers == {i: f"request {i}" for i in range(8)}
    assert 0.3 <= elapsed < 1.5
    assert len(srv.requests) == 8


def test_stopped_server_refuses_connections():
    srv = LocalOpenAIServer(EchoChatModel).start()
    llm = chat(srv)
    assert llm.invoke("hi").content == "hi"  # leaves a keep-alive connection in the pool
    srv.stop()
    srv.stop()  # idempotent
    with pytest.raises(openai.APIConnectionError):
        llm.invoke("hi")
    with pytest.raises(openai.APIConnectionError):
        ChatOpenAI(
            base_url=f"http://127.0.0.1:{srv.port}/v1",
            api_key="test-key",
            model="stepwise-local",
            max_retries=0,
            timeout=5,
        ).invoke("hi")


def test_cli_serves_echo_model():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support_procs.fake_server",
            "--model",
            "echo",
            "--port",
            "0",
            "--structured",
            "json_object",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        llm = ChatOpenAI(
            base_url=base_url, api_key="test-key", model="stepwise-local", max_retries=0, timeout=5
        )
        assert llm.invoke("from the cli").content == "from the cli"
        with pytest.raises(openai.BadRequestError):
            llm.invoke("x", response_format=JSON_SCHEMA_FORMAT)
    finally:
        proc.terminate()
        proc.wait(5)
        proc.stdout.close()


def test_cli_scripted_model_plays_the_systems_rules(tmp_path):
    """The README's "no model at all" path: `python -m graph run` against the CLI server's
    scripted model completes a run. The server process registered no system, so the
    scripted model had no Planner rules and every run failed "not valid JSON"."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support_procs.fake_server",
            "--model",
            "scripted",
            "--port",
            "0",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        base_url = server.stdout.readline().strip()
        env = {
            **os.environ,
            "STEPWISE_HOME": str(tmp_path),
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "test-key",
        }
        run = subprocess.run(
            [sys.executable, "-m", "graph", "run", "How did Tesla's stock do in 2008?"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "not valid JSON" not in run.stdout + run.stderr
        assert run.returncode == 0, run.stdout + run.stderr
        assert any(line.startswith("done: ") for line in run.stdout.splitlines()), run.stdout
    finally:
        server.terminate()
        server.wait(5)
        server.stdout.close()
