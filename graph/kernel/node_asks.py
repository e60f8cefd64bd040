"""A model-calling node's request, built from a stored state: what the node playground
sends in the node's place.

Each system says, per node, which prompt the node sends and how it builds the request
from the state (``Prompts.node_ask``), through the same function the node itself calls,
so the playground never builds a prompt its own way. A supervisor's or planner's request
is a ``JsonAsk`` (a structured decision); a worker's is a ``ToolAsk`` (its messages and
tools: the reply is the call it proposes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Sequence

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool

from graph.errors import StepwiseError
from graph.models.structured import JsonAsk
from graph.prompts import PromptSet


class NotTryable(StepwiseError, ValueError):
    """A checkpoint whose next node asks no model the playground can try; says why."""


@dataclass(frozen=True)
class ToolAsk:
    """A worker's request with its tools bound: its reply proposes tool calls (which the
    playground shows and never runs) or answers in text."""

    label: str
    messages: Sequence[BaseMessage]
    tools: Sequence[BaseTool]


@dataclass(frozen=True)
class NodeAsk:
    node: str
    prompt: str  # the prompt a tuner edits for this node
    role: Literal["planner", "worker"]  # which of a profile's models the node gets
    build: Callable[[PromptSet], JsonAsk | ToolAsk]  # the node's request with these texts
