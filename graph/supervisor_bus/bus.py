"""The message bus: sending typed messages, reading an inbox, matching answers.

Message ids are derived from the run's session, the sender, the bus position and
the content, not drawn at random: replaying or forking a run from a checkpoint
makes the same deterministic decision produce the same id, and the same id is what
lets a handler (and the side-effect ledger) recognise a message it already handled.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Iterable, Mapping

from graph.supervisor_bus.state import Message, MessageType, consumed_field

ANSWER_TYPES = ("result", "error")


def messages(state: Mapping[str, Any]) -> list[Message]:
    """The bus, each entry a ``Message`` (a forked or imported state may hold dicts)."""
    return [
        m if isinstance(m, Message) else Message.model_validate(m) for m in state.get("bus") or []
    ]


class Outbox:
    """The messages one node run sends, with ids unique within the run."""

    def __init__(self, state: Mapping[str, Any], sender: str) -> None:
        self.session = state.get("session_id") or ""
        self.position = len(state.get("bus") or [])
        self.sender = sender
        self.sent: list[Message] = []

    def send(
        self,
        to: str,
        type: MessageType,
        payload: dict[str, Any] | None = None,
        in_reply_to: str | None = None,
    ) -> Message:
        payload = payload or {}
        n = self.position + len(self.sent)
        digest = hashlib.sha1(
            json.dumps(
                [self.session, n, self.sender, to, type, in_reply_to, payload],
                sort_keys=True,
                default=str,
            ).encode()
        ).hexdigest()[:10]
        message = Message(
            id=f"m{n + 1}-{digest}",
            from_=self.sender,
            to=to,
            type=type,
            payload=payload,
            sent_at=time.time(),
            in_reply_to=in_reply_to,
        )
        self.sent.append(message)
        return message


def inbox(
    state: Mapping[str, Any], agent: str, types: Iterable[str] | None = None
) -> list[Message]:
    """Messages addressed to ``agent`` that it has not consumed yet, oldest first."""
    consumed = set(state.get(consumed_field(agent)) or [])
    wanted = set(types) if types else None
    return [
        m
        for m in messages(state)
        if m.to == agent and m.id not in consumed and (wanted is None or m.type in wanted)
    ]


def answer_to(bus: list[Message], request_id: str) -> Message | None:
    """The first result or error that answers ``request_id``."""
    return next((m for m in bus if m.in_reply_to == request_id and m.type in ANSWER_TYPES), None)


def by_id(bus: list[Message], message_id: str) -> Message | None:
    return next((m for m in bus if m.id == message_id), None)


def preview(payload: dict[str, Any], limit: int = 160) -> str:
    """A payload in one line, for tables."""
    if "decision" in payload and "round" in payload:  # a supervisor's decision
        text = f"decision: {payload['decision']} ({payload.get('by', '')}): {payload.get('reason', '')}"
    else:
        found = payload.get("text") or payload.get("task") or payload.get("answer")
        text = (
            found
            if isinstance(found, str)
            else json.dumps(payload, default=str, ensure_ascii=False)
        )
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
