"""Which rules the offline scripted model plays by: the checks around every system (kept
here), then each hosted system's own, registered with the system.

A system's rules are a module (or any object) with ``answer(prompt)`` — the reply to a
prompt of its own, or None for anyone else's — and, where its agents use tools, the
tables ``TOOL_RULES`` (how to call a tool), ``SUMMARIES`` (how to read its result) and
``FOLLOW_UPS`` (which tool comes next). ``graph.kernel.system.register`` adds a system's
``offline_rules``; nothing else needs editing for a new system to be played offline.

Rules registered later are tried first, so the shipped systems are tried in the order
teams, bus, plan (the registry registers plan, bus, teams): the plan rules are the
broadest ("Findings" in a prompt), so they come last. A new system's ``answer`` must
recognise only its own prompts. Where two systems name the same tool, the rule of the
one tried last wins, as before.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any, Callable, Protocol

from graph.models.scripted import checks


class OfflineRules(Protocol):
    def answer(self, prompt: str) -> dict[str, Any] | str | None: ...


_LOCK = threading.Lock()
_REGISTERED: list[OfflineRules | ModuleType] = []


def add(rules: OfflineRules | ModuleType) -> None:
    """Play ``rules`` from now on, before every set registered earlier (once each)."""
    with _LOCK:
        if rules not in _REGISTERED:
            _REGISTERED.append(rules)


def remove(rules: OfflineRules | ModuleType) -> None:
    with _LOCK:
        if rules in _REGISTERED:
            _REGISTERED.remove(rules)


def tried() -> tuple[Any, ...]:
    """Every set of rules, in the order a prompt is offered to them."""
    with _LOCK:
        return (checks, *reversed(_REGISTERED))


def _table(name: str) -> dict[str, Any]:
    # Later in the order overrides earlier, as a dict built in that order does.
    return {key: value for rules in tried() for key, value in getattr(rules, name, {}).items()}


def tool_rules() -> dict[str, Callable[..., Any]]:
    return _table("TOOL_RULES")


def summaries() -> dict[str, Callable[..., str]]:
    return _table("SUMMARIES")


def follow_ups() -> dict[str, tuple[Any, Any]]:
    return _table("FOLLOW_UPS")
