"""``ServerChatModel``: ``ChatOpenAI`` taught what real OpenAI-compatible servers refuse.

Three things differ between servers, and all are handled here, per call, so the agents
never know which server they talk to:

- **Structured output** (a call bound with ``json_request`` by ``ask_json``): the
  strongest mode the server takes is used (``json_schema``; ``json_object`` with
  llama.cpp's ``schema`` field; ``json_object`` alone; nothing), the last three with the
  shape stated in the prompt. On ``auto`` a refusal naming the feature, whatever its HTTP
  status, moves one mode down.
- **Tool calling** (a call bound with ``tools``): native tool calls where the server and
  model make them; otherwise tool calling written in the reply (``tool_prompting``),
  grammar-constrained by the same structured modes. On ``auto`` a server that refuses
  ``tools``, or a model that answers in prose on an agent's first turn where it must
  call a tool, switches to prompted.
- **The reply limit** (``reply_limits``): each call kind's token budget, sent in both
  fields servers read, or the one left when a server refuses the other by name.

Every call is bounded (``graph.models.calls``): a total deadline, the user's Stop, and a
reply that is cut off or not a chat completion said in words.

What worked is learnt in a ``ModeBook`` (per server and model, persisted by the run
service's store) and every reply says which modes it used and why, in
``response_metadata["stepwise"]``: the run's accounting records it on each model call,
and ``ask_json`` turns its notes into the run's notices.
"""

from __future__ import annotations

from typing import Any

import openai
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import Field

from graph.logs import current_run_id
from graph.models import tool_prompting
from graph.models.call_progress import CALLS, CURRENT_CALL
from graph.models.calls import (
    ModelCallError,
    bounded_call,
    scrub_error,
    traced_http_client,
    unreadable_reply,
)
from graph.models.modes import (
    OPENAI_API,
    STRUCTURED_FALLBACK,
    STRUCTURED_WORDS,
    TOOL_WORDS,
    ModeBook,
    describe_structured,
    describe_tools,
    is_refusal,
)
from graph.models.reply_limits import (
    call_cap_s,
    describe_field,
    field_fallback,
    first_field_mode,
    limit_fields,
    refused_field,
    reply_budget,
)
from graph.models.server_slots import slots_for
from graph.models.streaming import StreamEndedEarly, streamed_result
from graph.models.structured import format_kwargs, shape_text, with_text
from graph.stopping import Stopped, stop_requested


def _check_stop() -> None:
    if stop_requested():
        raise Stopped("the wait for the model server")


def _tool_calls(result: ChatResult) -> bool:
    """Whether the reply calls a tool."""
    message = result.generations[0].message
    return isinstance(message, AIMessage) and bool(message.tool_calls)


def _annotate(result: ChatResult, **modes: Any) -> ChatResult:
    message = result.generations[0].message
    meta = dict(message.response_metadata or {})
    stepwise = dict(meta.get("stepwise") or {})
    notes = [*stepwise.get("notes", []), *modes.pop("notes", [])]
    stepwise.update({k: v for k, v in modes.items() if v is not None})
    if notes:
        stepwise["notes"] = notes
    meta["stepwise"] = stepwise
    message.response_metadata = meta
    return result


class ServerChatModel(ChatOpenAI):
    """``ChatOpenAI`` that adapts structured output and tool calling to the server."""

    structured_setting: str = "auto"  # auto / json_schema / json_object / json_object_bare / none
    tools_setting: str = "auto"  # auto / native / prompted
    modes: Any = Field(default=None, exclude=True)  # the ModeBook where modes are learnt
    prompts: Any = Field(default=None, exclude=True)  # the run's PromptSet (None: shipped texts)
    # LangChain's own streaming (``.stream()``) is not offered: a prompted tool call is
    # only known once the whole reply is in. Replies are streamed inside each call instead.
    disable_streaming: Any = True
    call_deadline_s: float = 600.0  # one call, retries included (STEPWISE_MODEL_CALL_DEADLINE)
    stream_replies: bool = True  # read replies as written (STEPWISE_STREAM_REPLIES)
    stall_timeout_s: float = 30.0  # no new token this long: given up (STEPWISE_STALL_TIMEOUT)
    server_slots: int = 0  # calls at once at the server; 0: learnt (STEPWISE_MODEL_SERVER_SLOTS)
    # The client whose requests a Stop or the deadline can cut (graph.models.calls).
    http_client: Any = Field(default_factory=traced_http_client, exclude=True)

    @property
    def server(self) -> str:
        return (self.openai_api_base or OPENAI_API).rstrip("/")

    def _book(self) -> ModeBook:
        if self.modes is None:
            from graph.models.modes import PROCESS_MODES

            return PROCESS_MODES
        return self.modes

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """One call: queued behind the server's slots (the wait shown), then bounded by
        its kind's cap, the stall clock and Stop (``graph.models.calls``)."""
        kind = kwargs.get("call_kind")
        progress = CALLS.begin(current_run_id(), self.server, self.model_name, kind)
        token = CURRENT_CALL.set(progress)  # copied into the call's thread
        try:
            gate = slots_for(self.server, self.server_slots)
            gate.acquire(lambda ahead: CALLS.waiting(progress, ahead), _check_stop)
            try:
                return bounded_call(
                    lambda: self._generate_adapted(messages, stop, run_manager, **kwargs),
                    deadline_s=call_cap_s(kind, self.call_deadline_s),
                    server=self.server,
                    stall_s=self.stall_timeout_s if self.stream_replies else None,
                    progress=progress,
                    what=f"a {kind} call" if kind else "",
                )
            finally:
                gate.release()
        except Exception as exc:
            # Before the error reaches a checkpoint or a page: it may echo the key.
            reveal = getattr(self.openai_api_key, "get_secret_value", None)
            scrub_error(exc, [reveal() if reveal else ""])
            raise
        finally:
            CURRENT_CALL.reset(token)
            CALLS.end(progress)

    def _generate_adapted(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        **kwargs: Any,
    ) -> ChatResult:
        request = kwargs.pop("json_request", None)
        kind = kwargs.pop("call_kind", None)
        budget = reply_budget(kind, kwargs.pop("max_tokens", None) or self.max_tokens)
        if budget is not None:
            kwargs["max_tokens"] = budget
        if kind:
            kwargs["call_kind"] = kind  # only said in the reply's metadata (see _post)
        if kwargs.get("tools"):
            return self._generate_with_tools(messages, stop, run_manager, kwargs)
        if request is not None:
            return self._generate_json(messages, request, stop, run_manager, kwargs)
        return self._post(messages, stop, run_manager, **kwargs)

    def _post(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        **kwargs: Any,
    ) -> ChatResult:
        """One request, its reply limit in the field the server reads (learnt: a refusal
        naming the field moves to the other, see ``reply_limits``); the reply says which
        field it used, and that it was cut when it was."""
        kind = kwargs.pop("call_kind", None)
        limit = kwargs.get("max_tokens")
        if limit is None:
            return self._post_once(messages, stop, run_manager, **kwargs)
        book = self._book()
        learnt = book.get(self.server, self.model_name)
        mode = learnt.token_field or first_field_mode(self.server)
        tried = {mode}
        notes: list[str] = []
        while True:
            try:
                result = self._post_once(messages, stop, run_manager, **kwargs, token_field=mode)
            except openai.APIStatusError as exc:
                refused = refused_field(exc)
                lower = field_fallback(mode, refused, tried) if refused else None
                if lower is None:
                    raise
                notes.append(
                    f"The server refused {refused} (HTTP {exc.status_code}); the reply "
                    f"limit went in {describe_field(lower)}."
                )
                mode = lower
                tried.add(mode)
                continue
            break
        if mode != learnt.token_field:
            book.learn(self.server, self.model_name, token_field=mode, note=" ".join(notes) or None)
        first = result.generations[0]
        finish = (first.generation_info or {}).get("finish_reason") or (
            first.message.response_metadata or {}
        ).get("finish_reason")
        return _annotate(
            result,
            call_kind=kind,
            max_tokens=limit,
            token_field=describe_field(mode),
            cut_at=limit if finish == "length" else None,
            notes=notes,
        )

    def _post_once(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        **kwargs: Any,
    ) -> ChatResult:
        """One request through ``ChatOpenAI``, streamed (``stream_replies``); a reply it
        cannot read is said in words."""
        progress = CURRENT_CALL.get()
        if progress is not None:
            CALLS.sent(progress)
        try:
            if self.stream_replies:
                result = streamed_result(self, messages, stop, run_manager, progress, kwargs)
            else:
                result = super()._generate(messages, stop, run_manager, **kwargs)
        except openai.APIError:
            raise
        except StreamEndedEarly:
            raise ModelCallError(
                f"The model server at {self.server} stopped sending mid-answer: the stream "
                "ended before the reply was complete."
            ) from None
        except ModelCallError:
            raise
        except openai.LengthFinishReasonError as exc:
            # The client's parse (any response_format) refuses a reply cut at its limit;
            # the reply is there, and cut is for the caller to handle (ask_json repairs it).
            result = self._create_chat_result(exc.completion)
        except Exception as exc:
            words = unreadable_reply(exc)
            if words is None:
                raise
            raise ModelCallError(f"The model server at {self.server} {words}.") from None
        if not result.generations:
            raise ModelCallError(
                f"The model server at {self.server} sent a chat completion with an empty "
                "list of choices (no answer in it)."
            )
        return result

    def _get_request_payload(
        self, input_: LanguageModelInput, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict:
        """``ChatOpenAI``'s payload, the reply limit in the field(s) ``token_field`` says
        (it sends ``max_completion_tokens`` only, which some servers ignore)."""
        mode = kwargs.pop("token_field", None)
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        limit = payload.pop("max_completion_tokens", None)
        limit = payload.pop("max_tokens", None) if limit is None else limit
        if limit is not None:
            payload.update(limit_fields(mode, limit))
        return payload

    # ------------------------------------------------------------------ structured output

    def _generate_json(
        self,
        messages: list[BaseMessage],
        request: dict,
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        kwargs: dict,
    ) -> ChatResult:
        book = self._book()
        adaptive = self.structured_setting == "auto"
        learnt = book.get(self.server, self.model_name)
        mode = (learnt.structured or "json_schema") if adaptive else self.structured_setting
        notes: list[str] = []
        while True:
            sent = (
                messages
                if mode == "json_schema"
                else with_text(messages, shape_text(request["schema"], self.prompts))
            )
            try:
                result = self._post(
                    sent, stop, run_manager, **kwargs, **format_kwargs(mode, request)
                )
            except openai.APIStatusError as exc:
                word = is_refusal(exc, STRUCTURED_WORDS)
                lower = STRUCTURED_FALLBACK.get(mode)
                if not (adaptive and word and lower):
                    raise
                notes.append(
                    f"The server refused {describe_structured(mode)} (HTTP "
                    f"{exc.status_code} naming {word}); used {describe_structured(lower)}."
                )
                mode = lower
                continue
            break
        if adaptive:
            book.learn(
                self.server,
                self.model_name,
                structured=mode,
                note=" ".join(notes) if notes else None,
            )
            why = " ".join(notes) or (learnt.structured_note if mode == learnt.structured else "")
        else:
            why = f"configured: STEPWISE_STRUCTURED_OUTPUT={mode}"
        return _annotate(result, structured=mode, notes=notes, structured_why=why or None)

    # ------------------------------------------------------------------ tool calling

    def _generate_with_tools(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        kwargs: dict,
    ) -> ChatResult:
        book = self._book()
        adaptive = self.tools_setting == "auto"
        learnt = book.get(self.server, self.model_name)
        mode = (learnt.tools or "native") if adaptive else self.tools_setting
        if mode == "prompted":
            why = learnt.tools_note if adaptive else "configured: STEPWISE_TOOL_CALLING=prompted"
            return self._prompted(messages, stop, run_manager, kwargs, why=why)
        try:
            result = self._post(messages, stop, run_manager, **kwargs)
        except openai.APIStatusError as exc:
            word = is_refusal(exc, TOOL_WORDS)
            if not (adaptive and word):
                raise
            note = (
                f"The server refused native tool calls (HTTP {exc.status_code} naming "
                f"{word}); used {describe_tools('prompted')}."
            )
            book.learn(self.server, self.model_name, tools="prompted", note=note)
            return self._prompted(messages, stop, run_manager, kwargs, why=note, new=True)
        if _tool_calls(result):
            if adaptive:
                book.learn(self.server, self.model_name, tools="native")
            return _annotate(result, tools="native")
        if adaptive and learnt.tools != "native" and tool_prompting.first_turn(messages):
            # Prose where the agent's first move must be a tool call: is it the model or the
            # protocol? Ask again with the tools in the prompt.
            prompted = self._prompted(messages, stop, run_manager, dict(kwargs), why="")
            if _tool_calls(prompted):
                note = (
                    "The model answered in prose where a tool call was needed; used "
                    f"{describe_tools('prompted')}."
                )
                book.learn(self.server, self.model_name, tools="prompted", note=note)
                return _annotate(prompted, notes=[note], tools_why=note)
        return _annotate(result, tools="native")

    def _prompted(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        kwargs: dict,
        *,
        why: str,
        new: bool = False,
    ) -> ChatResult:
        """One turn of tool calling written in the reply, parsed back into a tool call."""
        tools = kwargs.pop("tools")
        for key in ("tool_choice", "parallel_tool_calls", "strict"):
            kwargs.pop(key, None)
        request = {"name": "ToolAction", "schema": tool_prompting.action_schema(tools)}
        result = self._generate_json(
            tool_prompting.to_prompted(messages, tools, self.prompts),
            request,
            stop,
            run_manager,
            kwargs,
        )
        raw = result.generations[0].message
        parsed = tool_prompting.parse_action(str(raw.content or ""))
        if (repeated := tool_prompting.repeated_result(messages, parsed)) is not None:
            # A small model asks the same thing again instead of answering: the result it
            # already has is what that call returns, so it stands as the agent's answer.
            name = parsed.tool_calls[0]["name"]
            parsed = AIMessage(content=repeated)
            result = _annotate(
                result,
                notes=[
                    f"The model called {name} again with the same arguments; its earlier result "
                    "stands as the answer."
                ],
            )
        message = AIMessage(
            content=parsed.content,
            tool_calls=parsed.tool_calls,
            usage_metadata=raw.usage_metadata if isinstance(raw, AIMessage) else None,
            response_metadata=dict(raw.response_metadata or {}),
            id=raw.id,
        )
        out = ChatResult(
            generations=[ChatGeneration(message=message)], llm_output=result.llm_output
        )
        return _annotate(
            out, tools="prompted", notes=[why] if new and why else [], tools_why=why or None
        )
