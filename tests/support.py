"""Deterministic chat models for tests that need a model to misbehave on cue.

They are the real scripted model with one rule changed, so every other reply
(tool calls, plans, captions) is exactly what a normal offline run produces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.models.scripted import ScriptedChatModel, task_prompt

ROOT = Path(__file__).resolve().parent.parent  # the repository


class RewritingModel(ScriptedChatModel):
    """The scripted model, with ``rewrite(prompt, reply_text, call_no)`` applied to
    every plain-text reply; return None to keep the scripted reply."""

    rewrite: Callable[[str, str, int], str | None]
    calls: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        self.calls.append(task_prompt(messages))
        if message.tool_calls:
            return result
        new = self.rewrite(task_prompt(messages), message.content, len(self.calls))
        if new is None:
            return result
        replaced = AIMessage(
            content=new,
            usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata,
        )
        return ChatResult(generations=[ChatGeneration(message=replaced)])


def is_executor(prompt: str) -> bool:
    return '"goto"' in prompt


def is_planner(prompt: str) -> bool:
    return '"agent"' in prompt and '"action"' in prompt and not is_executor(prompt)


def edit_json(text: str, **changes) -> str:
    data = json.loads(text)
    data.update(changes)
    return json.dumps(data)
