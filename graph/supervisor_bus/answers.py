"""What a supervisor_bus run answers when its supervisor finishes: the writer's latest
draft, else the findings and the user agents' answers; and why there is none, when no
worker wrote one (a run never ends ``done`` claiming an answer nobody wrote)."""

from __future__ import annotations

from graph.supervisor_bus.agents import is_worker
from graph.supervisor_bus.state import Message


def _latest_results(bus: list[Message]) -> dict[str, Message]:
    latest: dict[str, Message] = {}
    for m in bus:
        if m.type == "result" and is_worker(m.from_):
            latest[m.from_] = m
    return latest


def _answers(latest: dict[str, Message]) -> list[Message]:
    """What the answer is made of: the writer's latest draft (written from everyone's
    results); without one, the researcher's findings and each user agent's answer, in the
    order they came."""
    if "writer" in latest:
        return [latest["writer"]]
    found = [m for name, m in latest.items() if name != "reviewer"]
    return sorted(found, key=lambda m: m.sent_at)


def missing_answer(bus: list[Message]) -> str:
    """Why there is no answer to end ``done`` with, in a sentence; "" when there is one."""
    answers = _answers(_latest_results(bus))
    if not answers:
        return (
            "The supervisor finished, but no agent produced an answer "
            "(neither the writer nor the researcher returned a result)."
        )
    if not any(str(m.payload.get("text") or "").strip() for m in answers):
        return f"The supervisor finished, but the {answers[-1].from_} returned an empty answer."
    return ""


def final_answer(bus: list[Message]) -> str:
    """The writer's latest draft, else the researcher's latest findings and the user
    agents' answers; the reviewer's verdict appended when it checked it."""
    latest = _latest_results(bus)
    answers = _answers(latest)
    if not answers:
        return "No agent produced an answer."
    texts = [str(m.payload.get("text") or "") for m in answers]
    text = "\n\n".join(t for t in texts if t.strip()) or texts[-1]
    review = latest.get("reviewer")
    if review is not None and review.sent_at >= answers[-1].sent_at:
        text += f"\n\nReview: {review.payload.get('text', '')}"
    return text
