"""How the offline scripted model plays the relay: the drafter's request, and nothing
else (``answer`` returns None for every other system's prompt)."""

from __future__ import annotations

REQUEST = "Relay drafter: write a first answer to this question.\nQuestion: "


def draft_request(question: str) -> str:
    return f"{REQUEST}{question}"


def answer(prompt: str) -> str | None:
    if not prompt.startswith(REQUEST):
        return None
    question = prompt[len(REQUEST) :].strip()
    return f"A first draft from the relay's own rules, for: {question}"
