"""The scripted model's rules for the checks around the systems: the guardrail's classifier
(refuse messages after secrets or a jailbreak, pass the rest: the pattern and scope checks
run before it, in code) and the Model page's connection check."""

from __future__ import annotations

import re

SECRETS = re.compile(
    r"\b(password|passwords|api[ _-]?keys?|secret|credentials?|jailbreak)\b", re.IGNORECASE
)


def guardrail_verdict(prompt: str) -> dict:
    """The guardrail classifier, scripted: it refuses messages asking for secrets or a
    jailbreak (the pattern and scope checks run before it, in code) and passes the rest."""
    message = prompt.split('"""')[1] if prompt.count('"""') >= 2 else prompt
    if hit := SECRETS.search(message):
        return {
            "verdict": "refuse",
            "reason": f"It asks about {hit.group(0).lower()}, which the agents must never handle.",
        }
    return {"verdict": "pass", "reason": "Nothing in it tries to change the agents' rules."}


def answer(prompt: str) -> dict | str | None:
    if prompt.startswith("Connection check.") and (
        asked := re.search(r"JSON only: (\{.*\})", prompt)
    ):
        return asked.group(1)  # the reply the check asks for, as asked
    if '"verdict"' in prompt:
        return guardrail_verdict(prompt)
    return None


TOOL_RULES = {
    # "Call the tool echo with the word pong."
    "echo": lambda request, system: {
        "word": (re.findall(r"with the word (\w+)", request) or ["pong"])[0]
    },
}
