"""A model call's reply read as it is written: token by token, over server-sent events.

Why: a reply sent whole looks the same while it is being written slowly and after the
server has died (nothing comes either way), and a server keeps writing a reply whose
client left it, since it learns of the leaving only when it next sends. Streamed, each
token is news: the call knows it is alive (the stall clock of ``graph.models.calls``
counts from the last token, never cutting a reply still arriving), the page shows the
tokens so far (``graph.models.call_progress``), and closing the connection on Stop, a
stall or the call's cap reaches the server at its next token, so it stops writing
(llama-cpp-python checks for a gone client after each chunk).

The request is the one ``ChatOpenAI`` builds, with ``stream`` on: structured output
(``response_format`` json_schema, json_object with or without a schema) and native tool
calls stream as they do on OpenAI; the chunks are joined into one reply with
``ChatOpenAI``'s own chunk reader, so the rest of the adapter sees what it saw before.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import httpx2 as httpx  # the openai client's HTTP library
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult

from graph.errors import StepwiseError
from graph.models.call_progress import CALLS, CallProgress
from graph.models.calls import ModelCallError, what_body_is


class StreamEndedEarly(StepwiseError):
    """The stream closed before the server said the reply was complete (no finish
    reason): the caller says it in words."""


def _counts(chunk: ChatGenerationChunk) -> int:
    """Tokens in one chunk: servers send about one token per chunk."""
    message = chunk.message
    if getattr(message, "content", None):
        return 1
    return 1 if getattr(message, "tool_call_chunks", None) else 0


def stream_reply(
    model: Any,
    messages: list,
    stop: list[str] | None,
    run_manager: Any,
    on_tokens: Callable[[int], None],
    **kwargs: Any,
) -> ChatResult:
    """One streamed request of ``model`` (a ``ChatOpenAI``), joined into its reply;
    ``on_tokens(n)`` is told of each chunk that carries text or a tool call's part."""
    kwargs["stream"] = True
    kwargs["stream_options"] = {"include_usage": True}  # the exact count, at the end
    payload = model._get_request_payload(messages, stop=stop, **kwargs)
    with model.client.create(**payload) as response:
        try:
            return _read(model, response, run_manager, on_tokens)
        except httpx.TransportError:
            raise ModelCallError(
                f"The model server at {model.server} stopped sending mid-answer: the "
                "connection closed before the reply was complete."
            ) from None


def _read(
    model: Any, response: Any, run_manager: Any, on_tokens: Callable[[int], None]
) -> ChatResult:
    kind = response.response.headers.get("content-type", "")
    if "text/event-stream" not in kind:  # a whole reply, or not a reply at all
        return _whole_body(model, response.response.read())
    chunks: list[ChatGenerationChunk] = []
    finished = False
    chunk_class: type = AIMessageChunk
    for raw in response:
        data = raw if isinstance(raw, dict) else raw.model_dump()
        chunk = model._convert_chunk_to_generation_chunk(data, chunk_class, {})
        if chunk is None:
            continue
        chunk_class = chunk.message.__class__
        finished = finished or bool((chunk.generation_info or {}).get("finish_reason"))
        if count := _counts(chunk):
            on_tokens(count)
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
        chunks.append(chunk)
    if not finished:
        raise StreamEndedEarly(f"after {len(chunks)} chunk(s)")
    return generate_from_stream(iter(chunks))


def _whole_body(model: Any, body: bytes) -> ChatResult:
    """A server (or a proxy before it) that answered a streamed request with one body:
    a chat completion is read as one; anything else is said in words."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("choices"), list) and data["choices"]:
        return model._create_chat_result(data)
    raise ModelCallError(f"The model server at {model.server} {what_body_is(body)}.")


def streamed_result(
    model: Any,
    messages: list,
    stop: list[str] | None,
    run_manager: Any,
    progress: CallProgress | None,
    kwargs: dict,
) -> ChatResult:
    """``stream_reply`` told to ``progress``; a server that sends no usage with a stream
    (llama-cpp-python) gets the tokens counted from the stream as the reply's usage."""
    counted = [0]

    def on_tokens(count: int) -> None:
        counted[0] += count
        if progress is not None:
            CALLS.token(progress, count)

    result = stream_reply(model, messages, stop, run_manager, on_tokens, **kwargs)
    message = result.generations[0].message
    if isinstance(message, AIMessage) and not message.usage_metadata and counted[0]:
        message.usage_metadata = {
            "input_tokens": 0,
            "output_tokens": counted[0],
            "total_tokens": counted[0],
        }
        meta = dict(message.response_metadata or {})
        meta["stepwise"] = {**(meta.get("stepwise") or {}), "usage": "counted from the stream"}
        message.response_metadata = meta
    return result
