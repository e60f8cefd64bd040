"""A cap on what a run keeps of one model reply, applied around every system's models.

A model that rambles (or a server that misbehaves) can send megabytes in one reply; every
node keeps its replies in the state, and every checkpoint and state event copies the
state, so four 2 MB replies once became 1.2 GB on disk. ``CappedChatModel`` wraps the
chat model a system is given and cuts each reply to ``Settings.max_reply_chars``
characters (``STEPWISE_MAX_REPLY_CHARS``) before any node sees it: text past the cap is
dropped with a marker saying so, and a tool call whose arguments alone pass the cap is
refused (kept as an invalid call, not run). The cut is said in the run: a note in the
reply's ``response_metadata["stepwise"]``, which the run's accounting records with the
model call and the Run page lists among the run's notices.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.tools import BaseTool

from graph.models.replies import reply_text


def _marker(kept: int, total: int) -> str:
    return f"\n\n[Cut by Stepwise: kept the first {kept:,} of {total:,} characters.]"


def cut_text(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``; else its start and a marker, ``max_chars``
    characters in all."""
    if len(text) <= max_chars:
        return text
    kept = max(0, max_chars - len(_marker(max_chars, len(text))))
    return text[:kept] + _marker(kept, len(text))


def _cap_tool_calls(message: AIMessage, max_chars: int) -> list[str]:
    """Refuse tool calls whose arguments pass the cap: they become invalid calls (never
    run) holding the start of their arguments; their raw copies are dropped."""
    notes, kept, dropped = [], [], set()
    for call in message.tool_calls:
        args = json.dumps(call.get("args") or {}, ensure_ascii=False)
        if len(args) <= max_chars:
            kept.append(call)
            continue
        dropped.add(call.get("id"))
        message.invalid_tool_calls.append(
            {
                "type": "invalid_tool_call",
                "name": call.get("name"),
                "args": args[:200],
                "id": call.get("id"),
                "error": f"Its arguments were {len(args):,} characters, over the "
                f"{max_chars:,}-character cap on a reply: not run.",
            }
        )
        notes.append(
            f"A model's call of {call.get('name')!r} had {len(args):,} characters of "
            f"arguments, over the {max_chars:,}-character cap on a reply "
            "(STEPWISE_MAX_REPLY_CHARS): it was not run."
        )
    if dropped:
        message.tool_calls = kept
        raw = message.additional_kwargs.get("tool_calls")
        if isinstance(raw, list):
            message.additional_kwargs["tool_calls"] = [
                c for c in raw if not (isinstance(c, dict) and c.get("id") in dropped)
            ]
    return notes


def cap_message(message: BaseMessage, max_chars: int) -> list[str]:
    """Cut ``message`` (in place) to the cap; the notes saying what was cut, if anything."""
    notes = []
    text = reply_text(message)
    if len(text) > max_chars:
        message.content = cut_text(text, max_chars)
        notes.append(
            f"A model reply of {len(text):,} characters was cut to its first "
            f"{max_chars:,} (the cap on a reply, STEPWISE_MAX_REPLY_CHARS)."
        )
    for key, value in list(message.additional_kwargs.items()):
        if isinstance(value, str) and len(value) > max_chars:  # e.g. a reasoning text
            message.additional_kwargs[key] = cut_text(value, max_chars)
            notes.append(
                f"The {key} of a model reply ({len(value):,} characters) was cut to its "
                f"first {max_chars:,} (STEPWISE_MAX_REPLY_CHARS)."
            )
    if isinstance(message, AIMessage) and message.tool_calls:
        notes += _cap_tool_calls(message, max_chars)
    if notes:
        meta = dict(message.response_metadata or {})
        stepwise = dict(meta.get("stepwise") or {})
        stepwise["notes"] = [*stepwise.get("notes", []), *notes]
        meta["stepwise"] = stepwise
        message.response_metadata = meta
    return notes


def cap_result(result: ChatResult, max_chars: int) -> ChatResult:
    for generation in result.generations:
        cap_message(generation.message, max_chars)
    return result


class CappedChatModel(BaseChatModel):
    """``inner`` with each reply cut to ``max_chars``: same calls, tools and labels."""

    inner: BaseChatModel
    max_chars: int

    @property
    def _llm_type(self) -> str:
        return self.inner._llm_type

    @property
    def _identifying_params(self) -> Mapping[str, Any]:
        return self.inner._identifying_params

    # What the UI reads to name a model (graph.models.chat.model_label).
    @property
    def is_scripted(self) -> bool:
        return bool(getattr(self.inner, "is_scripted", False))

    @property
    def model_name(self) -> str:
        return getattr(self.inner, "model_name", None) or type(self.inner).__name__

    @property
    def openai_api_base(self) -> str | None:
        return getattr(self.inner, "openai_api_base", None)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The inner model's way of offering tools, bound to this model (so replies to
        tool-calling turns are capped too)."""
        bound = self.inner.bind_tools(tools, **kwargs)
        assert isinstance(bound, RunnableBinding)  # what BaseChatModel.bind_tools returns
        return self.bind(**bound.kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = self.inner._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        return cap_result(result, self.max_chars)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = await self.inner._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
        return cap_result(result, self.max_chars)


def capped(model: BaseChatModel, max_chars: int) -> BaseChatModel:
    """``model`` with its replies capped at ``max_chars`` (once: never wrapped twice)."""
    if isinstance(model, CappedChatModel) and model.max_chars == max_chars:
        return model
    return CappedChatModel(inner=model, max_chars=max_chars)
