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
# What the model reads on every call, worked out once per registration, not per call.
_TRIED: tuple[Any, ...] = (checks,)
_TABLES: dict[str, dict[str, Any]] = {}


def _table(name: str, order: tuple[Any, ...]) -> dict[str, Any]:
    # Later in the order overrides earlier, as a dict built in that order does.
    return {key: value for rules in order for key, value in getattr(rules, name, {}).items()}


def _settle() -> None:
    global _TRIED, _TABLES
    _TRIED = (checks, *reversed(_REGISTERED))
    _TABLES = {name: _table(name, _TRIED) for name in ("TOOL_RULES", "SUMMARIES", "FOLLOW_UPS")}


def add(rules: OfflineRules | ModuleType) -> None:
    """Play ``rules`` from now on, before every set registered earlier (once each)."""
    with _LOCK:
        if rules not in _REGISTERED:
            _REGISTERED.append(rules)
            _settle()


def remove(rules: OfflineRules | ModuleType) -> None:
    with _LOCK:
        if rules in _REGISTERED:
            _REGISTERED.remove(rules)
            _settle()


def tried() -> tuple[Any, ...]:
    """Every set of rules, in the order a prompt is offered to them."""
    return _TRIED


def tool_rules() -> dict[str, Callable[..., Any]]:
    return _TABLES["TOOL_RULES"]


def summaries() -> dict[str, Callable[..., str]]:
    return _TABLES["SUMMARIES"]


def follow_ups() -> dict[str, tuple[Any, Any]]:
    return _TABLES["FOLLOW_UPS"]


_settle()
