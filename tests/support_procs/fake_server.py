"""A small OpenAI-compatible chat-completions server on loopback.

Why: tests, benchmarks and offline demos need the *real* ``ChatOpenAI`` client
to speak real HTTP (retries, timeouts, SSE, error mapping) to something
deterministic. This server answers ``/v1/chat/completions`` with any LangChain
``BaseChatModel`` and can imitate the quirks of real servers: missing
structured-output support, slowness and injected faults.

Only the standard library does the HTTP (``ThreadingHTTPServer`` in a daemon
thread, one thread per connection, so concurrent requests run in parallel).

Run in the foreground, from the repository's root::

    python -m tests.support_procs.fake_server --port 8011 --model echo [--structured json_object] [--delay 0.2]

Lives with the tests, not in ``graph/``: the product never imports it (an import-linter
contract says so). Over 400 lines: the HTTP handling, the quirks it imitates and the
faults it injects are one server.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import select
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Literal, Sequence

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

log = logging.getLogger(__name__)

StructuredMode = Literal["json_schema", "json_object", "none"]
# How it takes ``tools``: bound to the model, refused with an error naming them, or
# dropped so the model answers in prose (a server or model without tool calling).
ToolSupport = Literal["native", "refuse", "ignore"]

MALFORMED_JSON = '{"1": {"agent": '
PROSE = "Sure! Here is the plan you asked for."
# A reply whose JSON is nested far deeper than any parser recurses.
DEEP_JSON = "[" * 100_000 + "]" * 100_000
# Misbehaviours of the HTTP answer itself (see ``_misbehave``), as real servers and proxies
# show them: a body that is not a chat completion, an answer cut off or never sent, an
# error that echoes the request's Authorization header.
_BODY_FAULTS = {
    "body_invalid_utf8": (
        b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, '
        b'"message": {"role": "assistant", "content": "caf\xe9"}, "finish_reason": "stop"}]}'
    ),
    "body_not_json": b"upstream connect error or disconnect/reset before headers",
    "body_html": b"<html><body><h1>502 Bad Gateway</h1></body></html>",
    "body_empty": b"",
    "body_no_choices": b'{"id": "chatcmpl-1", "object": "chat.completion", "model": "m"}',
    "body_null_choices": b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": null}',
    "body_empty_choices": b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": []}',
    "body_deep_nesting": ('{"choices": ' + DEEP_JSON + "}").encode(),
}
_WIRE_FAULTS = frozenset({*_BODY_FAULTS, "half_body", "never_answer", "echo_auth"})
_SIMPLE_FAULTS = frozenset(
    {"http_500", "http_429", "malformed_json", "prose", "deep_json", "disconnect", *_WIRE_FAULTS}
)
_CONTENT_FAULTS = {"malformed_json": MALFORMED_JSON, "prose": PROSE, "deep_json": DEEP_JSON}
# response_format types each structured mode accepts (real servers differ here).
_ACCEPTED_FORMATS: dict[str, frozenset[str]] = {
    "json_schema": frozenset({"text", "json_object", "json_schema"}),
    "json_object": frozenset({"text", "json_object"}),
    "none": frozenset({"text"}),
}
LLAMA_CPP_PYTHON_TITLE = "🦙 llama.cpp Python API"
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
TOKEN_FIELDS = ("max_tokens", "max_completion_tokens")


def count_tokens(text: str) -> int:
    """Rough token count (words and punctuation) for models that report no usage."""
    return len(_TOKEN_RE.findall(text or ""))


def cut_to_tokens(text: str, limit: int) -> str | None:
    """``text`` up to its ``limit``-th token (as ``count_tokens`` counts them), or None
    when it is no longer than that."""
    ends = [m.end() for m in _TOKEN_RE.finditer(text or "")]
    return text[: ends[limit - 1]] if len(ends) > limit else None


def _text_of(content: Any) -> str:
    """Flatten string-or-content-blocks message content into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _parse_fault(fault: str) -> str:
    """Validate one fault name early, so a typo fails in the test, not in the server."""
    if fault in _SIMPLE_FAULTS:
        return fault
    if fault.startswith(("slow:", "drip:", "steady:", "stall_after:", "huge:")):
        try:
            seconds = float(fault.split(":", 1)[1])
        except ValueError:
            pass
        else:
            if seconds >= 0:
                return fault
    raise ValueError(
        f"unknown fault {fault!r}; expected one of {sorted(_SIMPLE_FAULTS)}, 'slow:<seconds>', "
        "'drip:<seconds>', 'steady:<seconds>', 'stall_after:<tokens>' or 'huge:<MB>'"
    )


class _APIError(Exception):
    """An error answered as an OpenAI-style JSON error body with an HTTP status."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": type_, "param": param, "code": code}}


class _ClientGone(Exception):
    """The client hung up (e.g. after its own timeout); nothing left to answer."""


# --------------------------------------------------------------------------- #
# A tiny deterministic model
# --------------------------------------------------------------------------- #


class EchoChatModel(BaseChatModel):
    """Answers with the last user message; with tools bound, calls the first tool.

    Why: tests can assert exact round trips without writing a script. After a
    tool result it answers with the last user message again, so a tool loop ends.
    """

    @property
    def _llm_type(self) -> str:
        return "stepwise-echo"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _reply(
        self, messages: list[BaseMessage], tools: list[dict] | None, tool_choice: Any
    ) -> AIMessage:
        user_text = next(
            (str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage)), ""
        )
        last_is_tool = bool(messages) and isinstance(messages[-1], ToolMessage)
        if not tools or last_is_tool or tool_choice == "none":
            return AIMessage(content=user_text)
        name = tools[0]["function"]["name"]
        if isinstance(tool_choice, dict):  # {"type": "function", "function": {"name": ...}}
            name = tool_choice.get("function", {}).get("name", name)
        call = {"name": name, "args": {"query": user_text}, "id": f"call_echo_{len(messages)}"}
        return AIMessage(content="", tool_calls=[call])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        tools: list[dict] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._reply(messages, tools, tool_choice)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        tools: list[dict] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Stream word by word, so clients see several chunks."""
        message = self._reply(messages, tools, tool_choice)
        if message.tool_calls:
            chunks = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                for i, c in enumerate(message.tool_calls)
            ]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))
            return
        for piece in re.findall(r"\s*\S+\s*|\s+", str(message.content)) or [""]:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))


# --------------------------------------------------------------------------- #
# Conversions between OpenAI wire format and LangChain messages
# --------------------------------------------------------------------------- #


def _to_langchain(messages: Any) -> list[BaseMessage]:
    """OpenAI ``messages`` -> LangChain messages (tool_calls and tool results included)."""
    if not isinstance(messages, list) or not messages:
        raise _APIError(400, "'messages' must be a non-empty array", param="messages")
    try:
        return convert_to_messages([_keep_broken_tool_args(m) for m in messages])
    except Exception as exc:  # unknown role, bad shape, ...
        raise _APIError(400, f"invalid 'messages': {exc}", param="messages") from exc


def _keep_broken_tool_args(message: Any) -> Any:
    """Assistant turns whose tool-call arguments are not JSON -> AIMessage with invalid_tool_calls.

    Why: OpenAI accepts any arguments string in the history, but
    ``convert_to_messages`` raises on it, which would turn a model's earlier
    mistake into a spurious HTTP 400.
    """
    if not (
        isinstance(message, dict)
        and message.get("role") == "assistant"
        and message.get("tool_calls")
    ):
        return message
    valid, invalid = [], []
    for call in message["tool_calls"]:
        function = call.get("function") or {}
        raw = function.get("arguments") or "{}"
        try:
            args = json.loads(raw)
        except ValueError:
            args = None
        if isinstance(args, dict):
            valid.append(tool_call(name=function.get("name", ""), args=args, id=call.get("id")))
        else:
            invalid.append(
                invalid_tool_call(
                    name=function.get("name"), args=raw, id=call.get("id"), error=None
                )
            )
    if not invalid:
        return message
    return AIMessage(
        content=_text_of(message.get("content")), tool_calls=valid, invalid_tool_calls=invalid
    )


def _tool_calls_to_openai(message: AIMessage) -> list[dict]:
    """AIMessage tool calls -> OpenAI ``tool_calls`` with JSON-string arguments."""
    calls = [(c.get("id"), c["name"], json.dumps(c.get("args") or {})) for c in message.tool_calls]
    # Keep broken arguments as the model gave them: real servers do that too.
    calls += [
        (c.get("id"), c.get("name") or "", c.get("args") or "")
        for c in getattr(message, "invalid_tool_calls", [])
    ]
    return [
        {
            "id": cid or f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": name, "arguments": args},
        }
        for cid, name, args in calls
    ]


def _prompt_tokens(messages: list[BaseMessage]) -> int:
    total = 0
    for m in messages:
        total += count_tokens(_text_of(m.content))
        for call in getattr(m, "tool_calls", None) or []:
            total += count_tokens(call["name"]) + count_tokens(json.dumps(call["args"]))
    return total


def _usage(
    message: AIMessage | None,
    prompt_messages: list[BaseMessage],
    content: str,
    tool_calls: list[dict],
) -> dict:
    """The model's own usage when it reports one, else a rough count."""
    meta = getattr(message, "usage_metadata", None) if message is not None else None
    if meta:
        prompt, completion = meta.get("input_tokens", 0), meta.get("output_tokens", 0)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": meta.get("total_tokens", prompt + completion),
        }
    prompt = _prompt_tokens(prompt_messages)
    completion = count_tokens(content) + sum(
        count_tokens(c["function"]["name"]) + count_tokens(c["function"]["arguments"])
        for c in tool_calls
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


# --------------------------------------------------------------------------- #
# HTTP plumbing
# --------------------------------------------------------------------------- #


class _HTTPServer(ThreadingHTTPServer):
    """Threading server that tracks live connections so ``stop`` can cut them."""

    daemon_threads = True
    request_queue_size = 128  # many concurrent clients in benchmarks

    def __init__(self, address: tuple[str, int], owner: "LocalOpenAIServer") -> None:
        self.owner = owner
        self._live: set[socket.socket] = set()
        self._live_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls socket.getfqdn(), a DNS lookup that can
        # stall for seconds without network; loopback needs none of that.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request, client_address) -> None:
        with self._live_lock:
            self._live.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self._live_lock:
            self._live.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        """Close keep-alive connections, so a stopped server really stops answering."""
        with self._live_lock:
            live = list(self._live)
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address) -> None:
        """Clients hanging up (timeouts, resets) are normal here; real bugs get logged."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("local_server: %s from %s", type(exc).__name__, client_address)
        else:
            log.exception("local_server: unhandled error serving %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    """Routes the few endpoints ChatOpenAI needs."""

    protocol_version = "HTTP/1.1"  # keep-alive, like real servers
    disable_nagle_algorithm = True  # small SSE writes must not wait for ACKs
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("local_server: " + format, *args)

    # -- endpoints ---------------------------------------------------------- #

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        model = {"id": owner.model_name, "object": "model", "created": 0, "owned_by": "stepwise"}
        if path == "/v1/models" and owner.list_fault:
            try:
                owner._misbehave(self, owner.list_fault)
            except _APIError as err:
                self._send_json(err.status, err.body)
        elif path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [model]})
        elif path == f"/v1/models/{owner.model_name}":
            self._send_json(200, model)
        elif path == "/openapi.json" and owner.one_at_a_time:  # as llama-cpp-python names itself
            self._send_json(200, {"openapi": "3.1.0", "info": {"title": LLAMA_CPP_PYTHON_TITLE}})
        else:
            self._send_json(404, _APIError(404, f"no route GET {path}").body)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            if path != "/v1/chat/completions":
                raise _APIError(404, f"no route POST {path}")
            try:
                body = json.loads(raw or b"null")
            except ValueError as exc:
                raise _APIError(400, f"request body is not valid JSON: {exc}") from exc
            if not isinstance(body, dict):
                raise _APIError(400, "request body must be a JSON object")
            self.server.owner._chat_completion(self, body)
        except _APIError as err:
            self._send_json(err.status, err.body, retry_after=err.status in (429, 500))
        except _ClientGone:
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # never let a model error kill the handler thread
            log.exception("local_server: error while answering")
            self._send_json(
                500, _APIError(500, f"{type(exc).__name__}: {exc}", type_="server_error").body
            )

    # -- writing ------------------------------------------------------------ #

    def _send_json(self, status: int, payload: dict, *, retry_after: bool = False) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if retry_after:
                # Like real servers; keeps the client's retry short in tests.
                self.send_header("retry-after-ms", "20")
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # client already gone (timed out, disconnected)
            self.close_connection = True

    def start_sse(self) -> None:
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
        except OSError as exc:
            raise _ClientGone from exc

    def send_sse(self, data: dict | str) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        payload = f"data: {text}\n\n".encode()
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        except OSError as exc:
            raise _ClientGone from exc

    def end_sse(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError as exc:
            raise _ClientGone from exc

    def send_raw(self, body: bytes, length: int, kind: str = "application/json") -> None:
        """A 200 answer of ``body`` announcing ``length`` bytes (a lie when shorter)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def send_huge(self, megabytes: float) -> None:
        """A 200 answer of ``megabytes`` MB of one JSON string, written as it goes (never
        held whole), until the client hangs up."""
        size = int(megabytes * 1_000_000)
        head, tail = b'{"data": "', b'"}'
        self.send_raw(head, size)
        block = b"x" * 65_536
        left = size - len(head) - len(tail)
        try:
            while left > 0:
                self.wfile.write(block[: min(left, len(block))])
                left -= len(block)
            self.wfile.write(tail)
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def drip(self, body: bytes, every_s: float, stopping: threading.Event) -> None:
        """Headers at once, then the body one byte every ``every_s`` seconds."""
        self.send_raw(b"", len(body))
        for i in range(len(body)):
            if stopping.wait(every_s):
                break
            try:
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            except OSError:
                break
        self.close_connection = True

    def wait_for_hangup(self, stopping: threading.Event) -> None:
        """Send nothing, until the client hangs up or the server stops."""
        # poll, not select: a long test session holds more than select's 1,024 descriptors
        watch = select.poll()
        watch.register(self.connection, select.POLLIN | select.POLLHUP)
        while not stopping.wait(0.05):
            if watch.poll(0):
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        break  # the client closed its end
                except OSError:
                    break
        self.close_connection = True

    def drop(self) -> None:
        """Close the socket without answering (the ``disconnect`` fault)."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


# --------------------------------------------------------------------------- #
# The server
# --------------------------------------------------------------------------- #


class LocalOpenAIServer:
    """OpenAI-compatible ``/v1/chat/completions`` on loopback, answered by a LangChain model.

    ``model_factory`` is called once per ``start()``; the model is shared by all
    requests (so a stateful scripted model keeps its place across calls).
    """

    def __init__(
        self,
        model_factory: Callable[[], BaseChatModel],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        structured: StructuredMode = "json_schema",
        delay_s: float = 0.0,
        model_name: str = "stepwise-local",
        refusal_status: int = 400,
        tools: ToolSupport = "native",
        reads_token_fields: Sequence[str] = TOKEN_FIELDS,
        refuses_token_field: str | None = None,
        one_at_a_time: bool = False,
    ) -> None:
        if structured not in _ACCEPTED_FORMATS:
            raise ValueError(f"structured must be one of {sorted(_ACCEPTED_FORMATS)}")
        if tools not in ("native", "refuse", "ignore"):
            raise ValueError("tools must be one of native, refuse, ignore")
        self.model_factory = model_factory
        self.host = host
        self.port = port
        self.structured: StructuredMode = structured
        self.delay_s = delay_s
        self.model_name = model_name
        # The HTTP status of a refusal (real servers differ: 400, 422, and llama.cpp's
        # Python server answers an unknown response_format with 500).
        self.refusal_status = refusal_status
        self.tools: ToolSupport = tools
        # Which reply-limit fields it reads (llama-cpp-python: max_tokens only), and one it
        # refuses by name (OpenAI's API refuses max_tokens for its reasoning models).
        self.reads_token_fields = tuple(reads_token_fields)
        self.refuses_token_field = refuses_token_field
        # Serves one request at a time, the others waiting inside, and says it is
        # llama-cpp-python's server (which does both) at /openapi.json.
        self.one_at_a_time = one_at_a_time
        # A wire fault (as ``inject`` takes) the model list answers with, every time: the
        # Model page's Test connection asks it first.
        self.list_fault: str | None = None
        self._serving = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests it held at once
        self.hangups = 0  # streamed answers whose client left before the end
        self.requests: list[dict] = []
        self.model: BaseChatModel | None = None
        self._faults: deque[str] = deque()
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # ends the answers that never end

    # -- lifecycle ---------------------------------------------------------- #

    def start(self) -> "LocalOpenAIServer":
        """Bind (port 0 picks a free port) and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self.model = self.model_factory()
        self._stopping.clear()
        self._httpd = _HTTPServer((self.host, self.port), self)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"local-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, cut open connections and free the port. Idempotent."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.cut_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def serve_forever(self) -> None:
        """Foreground mode for the CLI: block until Ctrl-C."""
        self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def __enter__(self) -> "LocalOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server is not running; call start() first")
        return f"http://{self.host}:{self.port}/v1"

    # -- faults ------------------------------------------------------------- #

    def inject(self, *faults: str) -> None:
        """Queue faults; each is consumed by ONE following chat-completion request, in order.

        ``http_500``, ``http_429``, ``malformed_json``, ``prose``, ``deep_json``,
        ``slow:<seconds>``, ``disconnect``. Content faults replace the whole answer (tool
        calls dropped); the model still runs, as it would on a real server. Wire faults
        answer without the model: ``body_*`` (a 200 whose body is not a chat completion:
        invalid UTF-8, not JSON, HTML, empty, no/null/empty choices, nested too deeply),
        ``half_body`` (half the promised bytes, then the connection closes),
        ``drip:<seconds>`` (one byte of the answer every so many seconds),
        ``never_answer`` (headers never come), ``huge:<MB>`` (a 200 of that many MB) and
        ``echo_auth`` (an HTTP 400 whose message repeats the request's Authorization
        header, as some gateways do).
        """
        parsed = [_parse_fault(f) for f in faults]
        with self._lock:
            self._faults.extend(parsed)

    def _next_fault(self) -> str | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    # -- the endpoint ------------------------------------------------------- #

    def _chat_completion(self, handler: _Handler, body: dict) -> None:
        with self._lock:
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.one_at_a_time:
                with self._serving:
                    self._answer(handler, body)
            else:
                self._answer(handler, body)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, handler: _Handler, body: dict) -> None:
        fault = self._next_fault()
        if fault == "disconnect":
            handler.drop()
            return
        if fault in _WIRE_FAULTS or (fault or "").startswith(("drip:", "huge:")):
            self._misbehave(handler, fault or "")
            return
        delay = self.delay_s + (float(fault[5:]) if fault and fault.startswith("slow:") else 0.0)
        if delay:
            time.sleep(delay)
        if fault == "http_500":
            raise _APIError(
                500, "The server had an error while processing your request.", type_="server_error"
            )
        if fault == "http_429":
            raise _APIError(
                429,
                "Rate limit reached for requests.",
                type_="requests",
                code="rate_limit_exceeded",
            )

        self._check_response_format(body.get("response_format"))
        limit = self._token_limit(body)
        messages = _to_langchain(body.get("messages"))
        runnable = self._bind(body)
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else stop
        replacement = _CONTENT_FAULTS.get(fault or "")
        request_model = body.get("model") or self.model_name
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._answer_stream(
                handler,
                runnable,
                messages,
                stop,
                replacement,
                request_model,
                include_usage,
                limit=limit,
                pace=fault if fault and fault.startswith(("steady:", "stall_after:")) else None,
            )
        else:
            message = runnable.invoke(messages, stop=stop)
            handler._send_json(
                200, self._completion(message, messages, replacement, request_model, limit)
            )

    def _token_limit(self, body: dict) -> int | None:
        """The reply's token limit as this server reads it; a refused field is an error
        naming it, worded as OpenAI's."""
        refused = self.refuses_token_field
        if refused and body.get(refused) is not None:
            other = next(f for f in TOKEN_FIELDS if f != refused)
            raise _APIError(
                400,
                f"Unsupported parameter: '{refused}' is not supported with this model. "
                f"Use '{other}' instead.",
                param=refused,
                code="unsupported_parameter",
            )
        found = [body.get(f) for f in self.reads_token_fields if body.get(f) is not None]
        return int(found[0]) if found else None

    def _misbehave(self, handler: _Handler, fault: str) -> None:
        """Answer with one of the wire faults instead of the model."""
        if fault == "echo_auth":
            echoed = handler.headers.get("Authorization", "")
            raise _APIError(400, f"Malformed request. Headers received: Authorization: {echoed}")
        if fault == "never_answer":
            handler.wait_for_hangup(self._stopping)
            return
        if fault.startswith("huge:"):
            handler.send_huge(float(fault.split(":", 1)[1]))
            return
        body = _BODY_FAULTS.get(fault)
        if body is not None:
            kind = "text/html" if fault == "body_html" else "application/json"
            handler.send_raw(body, len(body), kind)
            return
        whole = json.dumps(
            self._completion(AIMessage(content=PROSE), [], None, self.model_name)
        ).encode()
        if fault == "half_body":
            handler.send_raw(whole[: len(whole) // 2], len(whole))
            handler.drop()
            return
        handler.drip(whole, float(fault.split(":", 1)[1]), self._stopping)

    def _check_response_format(self, response_format: Any) -> None:
        """Imitate servers with partial structured-output support."""
        if response_format is None:
            return
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in _ACCEPTED_FORMATS["json_schema"]:
            raise _APIError(
                self.refusal_status,
                f"invalid response_format type: {kind!r}",
                param="response_format",
            )
        if kind not in _ACCEPTED_FORMATS[self.structured]:
            raise _APIError(
                self.refusal_status,
                f"response_format {kind} is not supported",
                param="response_format",
            )

    def _bind(self, body: dict) -> Any:
        """Bind the request's tools when the model can take them; else ignore them."""
        assert self.model is not None
        tools = body.get("tools")
        if not tools or self.tools == "ignore":
            return self.model
        if self.tools == "refuse":
            raise _APIError(
                self.refusal_status, "this server does not support tools", param="tools"
            )
        kwargs = {}
        if body.get("tool_choice") is not None:
            kwargs["tool_choice"] = body["tool_choice"]
        try:
            return self.model.bind_tools(tools, **kwargs)
        except NotImplementedError:
            return self.model

    @staticmethod
    def _envelope(kind: str, completion_id: str, model: str, **fields: Any) -> dict:
        return {
            "id": completion_id,
            "object": kind,
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
            **fields,
        }

    def _completion(
        self,
        message: AIMessage,
        prompt: list[BaseMessage],
        replacement: str | None,
        model: str,
        limit: int | None = None,
    ) -> dict:
        """AIMessage -> ``chat.completion`` object; the model's text past ``limit`` tokens
        is cut, and the reply says so (``finish_reason: length``), as a real server's
        would. An injected content fault is delivered whole."""
        if replacement is not None:
            content, tool_calls, source = replacement, [], None
        else:
            content, tool_calls, source = (
                _text_of(message.content),
                _tool_calls_to_openai(message),
                message,
            )
        finish = "tool_calls" if tool_calls else "stop"
        whole = limit is None or source is None or bool(tool_calls)
        cut = None if whole else cut_to_tokens(content, limit)
        if cut is not None:
            content, source, finish = cut, None, "length"
        out: dict[str, Any] = {
            "role": "assistant",
            "content": None if (tool_calls and not content) else content,
        }
        if tool_calls:
            out["tool_calls"] = tool_calls
        return self._envelope(
            "chat.completion",
            f"chatcmpl-{uuid.uuid4().hex}",
            model,
            choices=[
                {
                    "index": 0,
                    "message": out,
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            usage=_usage(source, prompt, content, tool_calls),
        )

    def _answer_stream(
        self,
        handler: _Handler,
        runnable: Any,
        prompt: list[BaseMessage],
        stop: list[str] | None,
        replacement: str | None,
        model: str,
        include_usage: bool,
        *,
        limit: int | None = None,
        pace: str | None = None,
    ) -> None:
        """SSE ``chat.completion.chunk`` events, then an optional usage chunk and ``[DONE]``;
        the text cut at ``limit`` tokens (``finish_reason: length``). ``pace``: a token every
        so many seconds (``steady:<s>``), or silence after so many (``stall_after:<n>``)
        until the client hangs up."""
        if replacement is not None:
            runnable.invoke(prompt, stop=stop)  # the model runs; its answer is lost
            parts: Iterator[Any] = iter([AIMessageChunk(content=replacement)])
        else:
            parts = iter(runnable.stream(prompt, stop=stop))
        # Pull the first part before sending headers: early model errors stay HTTP 500.
        first = next(parts, None)
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return self._envelope(
                "chat.completion.chunk",
                completion_id,
                model,
                choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            )

        handler.start_sse()
        handler.send_sse(chunk({"role": "assistant", "content": ""}))
        content, calls = "", {}  # calls: index -> OpenAI tool call being assembled
        usage_source: AIMessage | None = None
        finish = None
        pieces = 0
        try:
            part = first
            while part is not None:
                text = _text_of(part.content)
                cut = limit is not None and replacement is None  # a fault comes whole
                if cut and text and count_tokens(content + text) > limit:
                    text = (cut_to_tokens(content + text, limit) or "")[len(content) :]
                    finish = "length"
                if text:
                    self._pace(handler, pace, pieces)
                    pieces += 1
                    content += text
                    handler.send_sse(chunk({"content": text}))
                if finish:
                    usage_source = None
                    break
                deltas = self._tool_call_deltas(part, calls)
                if deltas:
                    handler.send_sse(chunk({"tool_calls": deltas}))
                if getattr(part, "usage_metadata", None):
                    usage_source = part if usage_source is None else usage_source + part
                part = next(parts, None)
        except _ClientGone:
            with self._lock:
                self.hangups += 1
            raise
        except Exception as exc:  # headers are out: report in-band, as OpenAI does
            log.exception("local_server: model failed mid-stream")
            handler.send_sse(
                {
                    "error": {
                        "message": f"{type(exc).__name__}: {exc}",
                        "type": "server_error",
                        "param": None,
                        "code": None,
                    }
                }
            )
            handler.end_sse()
            return
        handler.send_sse(chunk({}, finish or ("tool_calls" if calls else "stop")))
        if include_usage:
            usage = _usage(
                usage_source if replacement is None else None, prompt, content, list(calls.values())
            )
            handler.send_sse(
                self._envelope(
                    "chat.completion.chunk", completion_id, model, choices=[], usage=usage
                )
            )
        handler.send_sse("[DONE]")
        handler.end_sse()

    def _pace(self, handler: _Handler, pace: str | None, sent: int) -> None:
        if pace is None:
            return
        kind, value = pace.split(":", 1)
        if kind == "steady" and sent:
            self._stopping.wait(float(value))
        elif kind == "stall_after" and sent >= int(value):
            handler.wait_for_hangup(self._stopping)
            raise _ClientGone

    @staticmethod
    def _tool_call_deltas(part: Any, calls: dict[int, dict]) -> list[dict]:
        """Streamed tool-call pieces -> OpenAI ``delta.tool_calls`` entries.

        Native streams give ``tool_call_chunks``; models without ``_stream`` yield
        one full AIMessage with ``tool_calls`` instead.
        """
        if isinstance(part, AIMessageChunk):
            pieces = [
                (c.get("index"), c.get("id"), c.get("name"), c.get("args") or "")
                for c in part.tool_call_chunks
            ]
        else:
            pieces = [
                (None, c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in _tool_calls_to_openai(part)
            ]
        deltas = []
        for index, cid, name, args in pieces:
            if index is None:
                index = len(calls)
            delta: dict[str, Any] = {"index": index}
            function: dict[str, str] = {}
            if index not in calls:  # first piece of this call: announce id and name
                cid = cid or f"call_{uuid.uuid4().hex[:24]}"
                calls[index] = {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name or "", "arguments": ""},
                }
                delta.update(id=cid, type="function")
                function["name"] = name or ""
            function["arguments"] = args
            calls[index]["function"]["arguments"] += args
            delta["function"] = function
            deltas.append(delta)
        return deltas


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #


def _model_factory(name: str) -> Callable[[], BaseChatModel]:
    if name == "echo":
        return EchoChatModel
    if name == "scripted":
        # lazy: optional, heavier. The scripted model plays the rules of the systems
        # registered in its process; a server process has run no app code that registers
        # them, so it registers them here (else every Planner call is answered "I follow
        # fixed rules and have none for this request", not JSON).
        import graph.registry  # noqa: F401
        from graph.models.scripted import ScriptedChatModel

        return ScriptedChatModel
    raise ValueError(f"unknown model {name!r}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support_procs.fake_server",
        description="Serve an OpenAI-compatible chat-completions API on loopback.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--model", choices=["scripted", "echo"], default="scripted")
    parser.add_argument("--structured", choices=sorted(_ACCEPTED_FORMATS), default="json_schema")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait per completion")
    parser.add_argument("--model-name", default="stepwise-local")
    parser.add_argument(
        "--tools",
        choices=["native", "refuse", "ignore"],
        default="native",
        help="take tools natively, refuse them, or drop them (prose answers)",
    )
    parser.add_argument(
        "--refusal-status",
        type=int,
        default=400,
        help="HTTP status of a refused response_format or tools",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    server = LocalOpenAIServer(
        _model_factory(args.model),
        host=args.host,
        port=args.port,
        structured=args.structured,
        delay_s=args.delay,
        model_name=args.model_name,
        refusal_status=args.refusal_status,
        tools=args.tools,
    ).start()
    print(server.base_url, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
