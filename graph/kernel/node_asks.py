"""A model-calling node's request, built from a stored state: what the node playground
sends in the node's place.

Each system says, per node, which prompt the node sends and how it builds the request
from the state (``System.node_ask``), through the same function the node itself calls,
so the playground never builds a prompt its own way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from graph.errors import StepwiseError
from graph.models.structured import JsonAsk
from graph.prompts import PromptSet


class NotTryable(StepwiseError, ValueError):
    """A checkpoint whose next node asks no model the playground can try; says why."""


@dataclass(frozen=True)
class NodeAsk:
    node: str
    prompt: str  # the prompt a tuner edits for this node
    role: Literal["planner", "worker"]  # which of a profile's models the node gets
    build: Callable[[PromptSet], JsonAsk]  # the node's request with these prompt texts
