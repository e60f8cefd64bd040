"""The node playground's samples: one request of a node's model on one profile, its reply
read as the node would read it (a value, with a plan's steps as rows; or a worker's
proposed tool calls, shown, never run), and what the offline scripted model's replies
mean.

The offline scripted model answers by rules that read only some lines of a prompt: each of
its results says what they read, and a reply equal to another prompt's says the edit
changed nothing they read, so identical replies are never shown as if the edit was tried.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig

from graph.kernel.node_asks import NodeAsk, ToolAsk
from graph.models.capped import capped
from graph.models.chat import describe_error, make_chat_model
from graph.models.replies import reply_text
from graph.models.scripted.reads import reading
from graph.models.structured import JsonAsk, ask_once
from graph.prompts import PromptSet
from graph.service.model_profiles import ModelProfile
from graph.stopping import Stopped

if TYPE_CHECKING:
    from graph.service.run_service import RunService

log = logging.getLogger(__name__)

CANCELLED = "Cancelled before the model answered."


@dataclass
class Sample:
    prompt: str  # the PromptTry's label
    profile: str
    number: int  # from 1
    value: dict | None = None  # the parsed, repaired and checked reply
    rows: list[dict] = field(default_factory=list)  # a plan's steps, a list the value holds
    fields: dict = field(default_factory=dict)  # the value's other fields (agent, reason...)
    raw: str = ""
    problem: str = ""  # why the reply is not usable, or why no request was made
    notices: list[str] = field(default_factory=list)
    tokens: int | None = None
    latency_s: float | None = None
    note: str = ""  # what an offline reply means

    @property
    def ok(self) -> bool:
        return self.value is not None


def model_for(
    service: RunService, profile: ModelProfile, ask: NodeAsk, texts: PromptSet
) -> BaseChatModel:
    """The chat model ``profile`` names, for the node's role, with the prompts tried."""
    settings = service.profiles.settings_of(profile)
    return capped(
        make_chat_model(ask.role, settings, modes=service.modes, prompts=texts),
        settings.max_reply_chars,
    )


def ask_sample(
    model: BaseChatModel,
    request: JsonAsk[Any] | ToolAsk,
    label: str,
    profile: ModelProfile,
    number: int,
    service: RunService,
    callbacks: list[BaseCallbackHandler] | None,
) -> Sample:
    """One request of ``model``; a refusal, a timeout or a stop is a sample too, said."""
    sample = Sample(label, profile.name, number)
    started = time.perf_counter()
    config: RunnableConfig | None = {"callbacks": callbacks} if callbacks else None
    try:
        if isinstance(request, ToolAsk):
            reply = model.bind_tools(list(request.tools)).invoke(list(request.messages), config)
        else:
            tried = ask_once(model, request, config)
    except Stopped:
        sample.problem = CANCELLED
        sample.latency_s = time.perf_counter() - started
        return sample
    except Exception as exc:  # a server that refused or did not answer: said, not raised
        log.warning("playground call to %s failed: %s", profile.name, exc)
        sample.problem = describe_error(exc, service.profiles.settings_of(profile))
        sample.latency_s = time.perf_counter() - started
        return sample
    sample.latency_s = time.perf_counter() - started
    if profile.scripted:
        sample.note = offline_words(request.label)
    if isinstance(request, ToolAsk):
        _proposed(sample, reply, request.label)
        return sample
    sample.raw = reply_text(tried.reply)
    sample.tokens = _tokens(tried.reply)
    sample.notices = tried.notices
    if tried.value is None:
        sample.problem = f"{request.label} reply is not usable: {tried.problem}."
    else:
        sample.value = tried.value.model_dump()
        sample.rows, sample.fields = _shown(sample.value)
    return sample


def _proposed(sample: Sample, reply: BaseMessage, label: str) -> None:
    """A worker's reply: the tool calls it proposes (shown, never run) or its text."""
    calls = reply.tool_calls if isinstance(reply, AIMessage) else []
    text = reply_text(reply).strip()
    sample.tokens = _tokens(reply) if isinstance(reply, AIMessage) else None
    proposed = [{"tool": c["name"], "args": json.dumps(c.get("args") or {})} for c in calls]
    sample.raw = text or json.dumps([{"name": c["name"], "args": c.get("args")} for c in calls])
    broken = reply.invalid_tool_calls if isinstance(reply, AIMessage) else []
    if broken:
        sample.problem = f"{label} proposed a tool call that cannot be read: " + "; ".join(
            f"{c.get('name')!r} ({c.get('error') or 'its arguments are not JSON'})" for c in broken
        )
        return
    if not proposed and not text:
        sample.problem = f"{label} reply is not usable: it proposes no tool call and says nothing."
        return
    sample.value = {"tool_calls": proposed, "text": text}
    sample.rows = proposed
    sample.fields = {"text": text} if text else {}


def _tokens(reply: AIMessage) -> int | None:
    return reply.usage_metadata["total_tokens"] if reply.usage_metadata else None


def _shown(value: dict) -> tuple[list[dict], dict]:
    """A value as a table (its first list of objects: a plan's steps) and its other fields
    (a routing decision's agent and reason)."""
    rows: list[dict] = []
    fields = {}
    for key, item in value.items():
        if not rows and isinstance(item, list) and item and all(isinstance(i, dict) for i in item):
            rows = [{"#": n, **i} for n, i in enumerate(item, 1)]
        else:
            fields[key] = item
    return rows, fields


def offline_words(label: str) -> str:
    return (
        f"The offline scripted model answered for {label}: it is not an LLM and does not "
        "read this prompt's wording; it follows fixed rules over a few lines of it."
    )


def offline_notes(
    ask: NodeAsk, profiles: Sequence[ModelProfile], results: list[Sample], samples: int
) -> list[str]:
    """What the offline model's replies mean: what its rules read, which prompts gave the
    same reply (the edit changed nothing they read), and that samples repeat."""
    if not any(p.scripted for p in profiles):
        return []
    found = reading(ask.prompt)
    notes = [
        "The offline scripted model does not read this prompt's wording; it follows fixed "
        f"rules. What they read: {found.reads} What makes no difference to it: {found.ignored}"
    ]
    offline = [s for s in results if s.note and s.number == 1]
    first: dict[str, str] = {}
    for s in offline:
        seen = first.setdefault(s.raw, s.prompt)
        if seen != s.prompt:
            notes.append(
                f"{s.prompt} got the same reply as {seen} from the offline scripted model: "
                "the edit changes nothing its rules read, so it cannot show what the edit "
                "would do. Try it on a real model."
            )
    if samples > 1:
        notes.append(
            f"The offline scripted model gives the same reply every time: its {samples} "
            "samples of a prompt are equal."
        )
    return notes
