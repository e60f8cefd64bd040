"""How the offline scripted model chooses an agent it knows only by its description (a user
agent): the agent whose description shares the most words with the text it is routing.
Every system's rules that route to user agents use it, so one request goes to the same agent
in each of them."""

from __future__ import annotations

import re
from collections.abc import Collection

_COMMON = frozenset(
    "about after also answer asks does each find from gives have into just like make more "
    "most only over same says some step tells than that their them then there these they "
    "this tool tools using what when which with your".split()
)


def words(text: str) -> set[str]:
    """The words that say what a text is about (four letters or more, no common ones)."""
    return {w.rstrip("s") for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in _COMMON}


def described_agents(
    prompt: str, offered: Collection[str], built_in: Collection[str]
) -> dict[str, set[str]]:
    """The agents a prompt's agent list describes (``- name: description Use when: ...``)
    that are offered and not among ``built_in`` (user agents), with their descriptions'
    words."""
    found = {}
    for name, description in re.findall(r"^- ([a-z][a-z0-9_]*): (.*?) Use when:", prompt, re.M):
        if name in offered and name not in built_in:
            found[name] = words(description)
    return found


def agent_for(text: str, agents: dict[str, set[str]]) -> str | None:
    """The agent whose description shares the most words with ``text``; None: none does."""
    said = words(text)
    scored = [(len(described & said), name) for name, described in agents.items()]
    best = max(scored, default=(0, ""))
    return best[1] if best[0] else None
