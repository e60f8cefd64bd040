"""The offline scripted model: a deterministic chat model that is honest about being one.

It is not an LLM and never says it is one: the UI calls it "offline scripted model".
It reads what it is sent the way a model would have to (the agent list and the user
query in the Planner prompt, the step and its result in the Executor prompt, the tools
it was given and what they returned, tools offered in the prompt by a server without
native tool calls) and answers by fixed rules, so an edited prompt changes its answers
and whole runs work end to end with no network.

Each hosted system brings its own rules (``offline_rules.py`` in its package, registered
with the system); the checks around them (``checks``: the guardrail classifier, the Model
page's connection check) live beside this file. ``rules`` says how they are found and in
which order they are tried.
"""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any, Callable, Sequence

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from graph.models import tool_prompting
from graph.models.scripted import rules as offline_rules
from graph.models.scripted.any_tool import CALLED, is_tool_listing, use_any_tool
from graph.models.scripted.common import (
    LABEL,
    count_tokens,
    message_text,
    task_prompt,
    tool_call,
    tool_name_of,
)


class ScriptedChatModel(BaseChatModel):
    """Deterministic rules behind LangChain's chat-model interface, with tool calling."""

    is_scripted: bool = True
    model_name: str = LABEL
    delay_s: float = 0.0  # a pause per call, so a demo or a test can watch a run unfold
    jitter_s: float = 0.0  # up to this much more, at random: timing noise, answers unchanged
    seed: int | None = None  # the draws' sequence, shared by the process's scripted models

    @property
    def _llm_type(self) -> str:
        return "stepwise-scripted"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept LangChain tools, functions, pydantic classes or OpenAI tool dicts."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        tools: list[dict] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if pause := self.delay_s + (_draw(self.seed, self.jitter_s) if self.jitter_s else 0.0):
            time.sleep(pause)
        if not tools and tool_prompting.is_prompted(messages):
            # Tools offered in the prompt (a server without native tool calls): read the
            # conversation back, apply the same rules, write the reply as the JSON action.
            offered = [{"function": {"name": n}} for n in tool_prompting.offered_tools(messages)]
            inner = self._generate(tool_prompting.from_prompted(messages), tools=offered)
            reply = inner.generations[0].message
            assert isinstance(reply, AIMessage)  # this model's replies are
            message = AIMessage(
                content=tool_prompting.encode_reply(reply),
                usage_metadata=reply.usage_metadata,
                response_metadata={"model_name": LABEL, "finish_reason": "stop"},
            )
            return ChatResult(generations=[ChatGeneration(message=message)])
        tool_names = [t["function"]["name"] for t in tools or []]
        forced = tool_choice not in (None, "auto", "none")
        if forced and len(tool_names) == 1 and tool_names[0] not in offline_rules.tool_rules():
            # with_structured_output: answer the task as JSON, delivered as the tool's args.
            args = json.loads(_answer_text(messages))
            message = AIMessage(content="", tool_calls=[tool_call(tool_names[0], args)])
        elif tool_names and not isinstance(messages[-1], ToolMessage):
            message = _use_tool(messages, tool_names, tools or [])
        elif tool_names and (follow := _follow_up(messages, tool_names)) is not None:
            message = follow
        else:
            message = AIMessage(content=_answer_text(messages))
        read = sum(count_tokens(message_text(m)) for m in messages)
        wrote = count_tokens(message_text(message)) + sum(
            count_tokens(json.dumps(c["args"])) for c in message.tool_calls
        )
        message.usage_metadata = {
            "input_tokens": read,
            "output_tokens": wrote,
            "total_tokens": read + wrote,
        }
        # Why it stopped, in the words OpenAI-compatible servers use (a trace shows it).
        finished = "tool_calls" if message.tool_calls else "stop"
        message.response_metadata = {"model_name": LABEL, "finish_reason": finished}
        return ChatResult(generations=[ChatGeneration(message=message)])


_SEQUENCES: dict[int, random.Random] = {}
_SEQUENCES_LOCK = threading.Lock()


def _draw(seed: int | None, most: float) -> float:
    """A pause from 0 to ``most`` s; with a seed, the next of that seed's one sequence in
    the process (every run's model draws from it), so runs taken in one order pause alike."""
    if seed is None:
        return random.uniform(0, most)
    with _SEQUENCES_LOCK:
        sequence = _SEQUENCES.setdefault(seed, random.Random(seed))
        return sequence.uniform(0, most)


def _answer_text(messages: list[BaseMessage]) -> str:
    if isinstance(messages[-1], ToolMessage):
        return _summarise_tool_result(messages)
    prompt = task_prompt(messages)
    for rules in offline_rules.tried():
        if (reply := rules.answer(prompt)) is not None:
            return reply if isinstance(reply, str) else json.dumps(reply)
    return (
        f"[{LABEL}] I follow fixed rules and have none for this request. "
        "Configure a real model (OPENAI_BASE_URL / OPENAI_API_KEY) for free-form answers."
    )


def _use_tool(messages: list[BaseMessage], tool_names: list[str], tools: list[dict]) -> AIMessage:
    """Call the first tool we have a rule for, with arguments drawn from the request."""
    request = message_text(
        next(
            (m for m in reversed(messages) if isinstance(m, HumanMessage)), HumanMessage(content="")
        )
    )
    system = "\n".join(message_text(m) for m in messages if isinstance(m, SystemMessage))
    for name in tool_names:
        if rule := offline_rules.tool_rules().get(name):
            args = rule(request, system)
            if isinstance(args, str):  # the rule explains why it cannot call the tool
                return AIMessage(content=args)
            return AIMessage(content="", tool_calls=[tool_call(name, args)])
    if is_tool_listing(system):
        return use_any_tool(request, system, tools)  # a user agent's tools
    return AIMessage(
        content=f"No usable results: the {LABEL} has no rule for the tools {', '.join(tool_names)}."
    )


def _summarise_tool_result(messages: list[BaseMessage]) -> str:
    result = messages[-1]
    content = message_text(result)
    name = getattr(result, "name", "") or (
        tool_name_of(messages, result) if isinstance(result, ToolMessage) else ""
    )
    if content.startswith(("NO RESULTS", "ERROR")):
        return f"No usable results: {content.splitlines()[0]}"
    read = offline_rules.summaries().get(name)
    if read:
        return read(messages, content)
    called = CALLED.format(tool=name)
    if any(isinstance(m, AIMessage) and message_text(m).startswith(called) for m in messages):
        return f"{called}; it returned: {content}"
    return content


def _follow_up(messages: list[BaseMessage], tool_names: list[str]) -> AIMessage | None:
    """After some tools comes a second one, once (``FOLLOW_UPS``)."""
    last = messages[-1]
    name = getattr(last, "name", "") or (
        tool_name_of(messages, last) if isinstance(last, ToolMessage) else ""
    )
    follow, args_from = offline_rules.follow_ups().get(name, (None, None))
    called = {c["name"] for m in messages for c in getattr(m, "tool_calls", None) or []}
    content = message_text(last)
    if (
        follow not in tool_names
        or follow in called
        or content.startswith(("NO RESULTS", "ERROR", "REFUSED"))
    ):
        return None
    args = args_from(content)
    return AIMessage(content="", tool_calls=[tool_call(follow, args)]) if args is not None else None
