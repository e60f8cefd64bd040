"""State values as plain JSON: what the store, exports and the timeline keep of them.

A LangChain message becomes a small record (who, type, content, tool calls, the step
and agent it is tagged with, its usage); a pydantic value its dump; a set a sorted list;
anything else its text. Nothing here holds a key: settings never enter a state.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel


def message_record(message: BaseMessage) -> dict:
    """A LangChain message as plain JSON: who sent it, its type, content, tool calls."""
    meta = message.response_metadata or {}
    return {
        "id": message.id,
        "type": message.type,
        "name": getattr(message, "name", None),
        "content": message.content if isinstance(message.content, str) else str(message.content),
        "tool_calls": [
            {"name": c["name"], "args": c["args"], "id": c.get("id")}
            for c in getattr(message, "tool_calls", None) or []
        ],
        "tool_call_id": getattr(message, "tool_call_id", None),
        "step": meta.get("step"),
        "agent": meta.get("agent"),
        "usage": getattr(message, "usage_metadata", None),
    }


_SCALARS = frozenset({str, int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """``value`` as JSON-safe data (messages as records)."""
    if type(value) in _SCALARS:  # the most common, and no message: returned at once
        return value
    if hasattr(value, "response_metadata") and hasattr(value, "content"):
        return message_record(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, BaseModel):  # e.g. a bus Message
        return plain(value.model_dump())
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=str)
    return str(value)
