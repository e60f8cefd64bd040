"""Model calls recorded so they can be answered again: the basis of replays and forks.

Every model call of a run is recorded with its ``llm_call`` event (``graph.kernel.accounting``):
the request (the messages sent and the parameters that shape the answer: the JSON schema
asked for, the tools offered, the token limit) and the reply the run received (after
Stepwise's cap on a reply), as LangChain message dicts. ``RecordedChatModel`` answers a
new run's calls from such a recording, so a finished run can be played again with no model
server, and a fork can replay the calls before its checkpoint and make only the later ones.

A call is answered by its request: the same messages with the same schema and tools get the
reply recorded for them, each recorded reply used once, in order. A request the recording
does not hold means the new run went another way; the call then fails with a sentence
saying so, unless the model was given a ``fallback`` (a fork's live model), which answers
it instead. Which calls were replayed and which were live is said on each reply
(``response_metadata["stepwise"]["replayed"]``), so the run's accounting records it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import defaultdict, deque
from typing import Any, Callable, Iterable, Sequence

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict, messages_to_dict
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from graph.models.calls import ModelCallError

# The invocation parameters that change what a model answers (the rest, e.g. timeouts and
# the HTTP client, do not), kept with each recorded request.
ANSWER_PARAMS = (
    "model",
    "model_name",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "json_request",
    "tool_choice",
)


def tool_names(tools: Any) -> list[str]:
    """The names of the tools a call offered, whatever form they were bound in."""
    names = []
    for tool in tools or ():
        if isinstance(tool, dict):
            inner = tool.get("function")
            function = inner if isinstance(inner, dict) else tool
            names.append(str(function.get("name", "")))
        else:
            names.append(str(getattr(tool, "name", "") or getattr(tool, "__name__", "")))
    return names


def request_record(messages: Sequence[BaseMessage], params: dict | None) -> dict:
    """What is kept of one request: its messages as dicts and the parameters that shape
    the answer (the tools by name)."""
    params = params or {}
    kept: dict[str, Any] = {k: params[k] for k in ANSWER_PARAMS if params.get(k) is not None}
    if params.get("tools"):
        kept["tools"] = tool_names(params["tools"])
    return {"messages": messages_to_dict(list(messages)), "params": kept}


def reply_record(message: BaseMessage) -> dict:
    return messages_to_dict([message])[0]


def _message_key(message: dict) -> dict:
    data = message.get("data") or {}
    return {
        "type": message.get("type"),
        "content": data.get("content"),
        "name": data.get("name"),
        "tool_call_id": data.get("tool_call_id"),
        "tool_calls": [
            [c.get("name"), c.get("args")]
            for c in data.get("tool_calls") or ()
            if isinstance(c, dict)
        ],
    }


def request_key(request: dict) -> str:
    """The same request gets the same key: message kinds and texts, tool calls, and the
    schema and tools asked for. Message ids, models and limits do not count: a replay on
    another model profile still finds its answers."""
    params = request.get("params") or {}
    shape = {
        "messages": [_message_key(m) for m in request.get("messages") or ()],
        "json": params.get("json_request"),
        "tools": params.get("tools") or [],
    }
    text = json.dumps(shape, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def recorded_calls(events: Iterable[dict]) -> list[dict]:
    """The run's recorded model calls, in the order they ended (events without a request
    and reply, from runs made before calls were recorded, are left out)."""
    calls = []
    for event in events:
        data = event.get("data")
        call = data.get("llm_call") if isinstance(data, dict) else None
        if isinstance(call, dict) and call.get("request") and call.get("reply"):
            calls.append({**call, "seq": event.get("seq")})
    return calls


class Recording:
    """Recorded replies by request, each handed out once, in the order recorded."""

    def __init__(self, calls: Iterable[dict], source: str = ""):
        self.source = source  # e.g. "run 1f3a…": said on every replayed reply
        self._replies: dict[str, deque[dict]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.size = 0
        for call in calls:
            self._replies[request_key(call["request"])].append(call["reply"])
            self.size += 1
        self.used = 0

    def take(self, request: dict) -> AIMessage | None:
        with self._lock:
            replies = self._replies.get(request_key(request))
            if not replies:
                return None
            reply = replies.popleft()
            self.used += 1
        message = messages_from_dict([reply])[0]
        if not isinstance(message, AIMessage):
            return None
        return message


def _mark(message: AIMessage, replayed: bool, source: str) -> AIMessage:
    meta = dict(message.response_metadata or {})
    stepwise = dict(meta.get("stepwise") or {})
    stepwise["replayed"] = replayed
    if replayed and source:
        stepwise["replayed_from"] = source
    meta["stepwise"] = stepwise
    message.response_metadata = meta
    return message


class RecordedChatModel(BaseChatModel):
    """Answers each call from a ``Recording``; a call it does not hold goes to
    ``fallback`` (a fork's live model) or fails saying the run went another way."""

    recording: Any = Field(exclude=True)  # a Recording
    fallback: BaseChatModel | None = Field(default=None, exclude=True)
    model_name: str = "recorded replies"

    @property
    def _llm_type(self) -> str:
        return "stepwise-recorded"

    @property
    def is_scripted(self) -> bool:  # how the UI names it (graph.models.chat.model_label)
        return bool(getattr(self.fallback, "is_scripted", False))

    @property
    def openai_api_base(self) -> str | None:
        return getattr(self.fallback, "openai_api_base", None)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        if self.fallback is not None:
            # the fallback's own way of offering tools, so a live call is made as usual
            bound = self.fallback.bind_tools(tools, tool_choice=tool_choice, **kwargs)
            assert isinstance(bound, RunnableBinding)  # what BaseChatModel.bind_tools returns
            return self.bind(**{**bound.kwargs, "stepwise_tools": formatted})
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _request(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict) -> dict:
        params = {k: v for k, v in kwargs.items() if k != "stepwise_tools"}
        if "stepwise_tools" in kwargs:
            params["tools"] = kwargs["stepwise_tools"]
        if stop:
            params["stop"] = stop
        return request_record(messages, params)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        found = self.recording.take(self._request(messages, stop, kwargs))
        if found is not None:
            return ChatResult(
                generations=[ChatGeneration(message=_mark(found, True, self.recording.source))]
            )
        if self.fallback is None:
            raise ModelCallError(
                "The recording has no answer for this model call: the replay went another "
                f"way than the recorded run ({self.recording.used} of "
                f"{self.recording.size} recorded calls used)."
            )
        live = {k: v for k, v in kwargs.items() if k != "stepwise_tools"}
        result = self.fallback._generate(messages, stop=stop, run_manager=run_manager, **live)
        for generation in result.generations:
            if isinstance(generation.message, AIMessage):
                _mark(generation.message, False, "")
        return result


def live_model(model: BaseChatModel) -> RecordedChatModel:
    """A fork's model: ``model`` answers every call, each reply marked live (the calls
    before the fork's checkpoint were answered from its parent's recording, and are in
    the fork's log as replayed: ``graph.service.prompt_forks``)."""
    name = getattr(model, "model_name", None) or type(model).__name__
    return RecordedChatModel(recording=Recording([]), fallback=model, model_name=str(name))
