"""Hooks that move execution between agents (docs/systems/conversations.md): ``before_run``, ``after`` a node,
``fallback`` when a node failed.

Every hosted system runs as agents under one root: the system itself (its nodes are
one agent, named after the system) and, when the design switches it on, the guardrail.
A hook returns a ``Target`` or None. With ``resume`` the target must be an agent and
execution continues where that agent stopped (its remembered node and step); without
it execution restarts at the node given, ignoring what the agent remembers. A target
that does not exist is refused with a ``HookError`` naming what does.

A design carries hooks as rules (``HookRule``, edited on the Design page); code can
subclass ``Hooks`` for anything a rule cannot say. The guardrail switch is itself a
``before_run`` hook (see ``graph.kernel.conversation``).
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, Field

from graph.errors import StepwiseError

GUARDRAIL = "guardrail"
HookEvent = Literal["before_run", "after", "fallback"]


class HookError(StepwiseError, ValueError):
    """A hook asked for a target that cannot be reached."""


class Target(BaseModel):
    """Where a hook sends execution (the source design's ``node_target`` and ``resume``)."""

    node: str
    resume: bool = False
    step: Optional[int] = None  # without resume: the step to restart at (None: keep it)
    rule: Optional[str] = None  # the design rule that chose it (its key), for the hook log


class HookRule(BaseModel):
    """One hook a design declares: on ``event`` at ``node`` ("*": any node), go to
    ``target``; at most ``times`` per turn, so an ``after`` rule cannot loop for ever."""

    event: HookEvent
    node: str = "*"
    target: str
    resume: bool = False
    step: Optional[int] = Field(default=None, ge=0)
    times: int = Field(default=1, ge=1, le=100)

    def key(self) -> str:
        return f"{self.event}:{self.node}->{self.target}{'/resume' if self.resume else ''}"


class Agents:
    """Which top-level agent each node belongs to, and where each agent starts."""

    def __init__(self, system: str, entry: str, nodes: set[str], guardrail: bool):
        self.system = system
        self.entry = {system: entry}
        self.nodes = set(nodes)
        self.owner = {n: system for n in nodes}
        if guardrail:
            self.entry[GUARDRAIL] = GUARDRAIL
            self.nodes.add(GUARDRAIL)
            self.owner[GUARDRAIL] = GUARDRAIL

    @property
    def names(self) -> list[str]:
        return list(self.entry)

    def agent_of(self, node: str) -> str | None:
        return self.owner.get(node)

    def check(self, target: Target) -> None:
        """Refuse a target that cannot be reached, saying what can."""
        if target.resume:
            if target.node not in self.entry:
                raise HookError(
                    f"A hook with resume must name an agent, not {target.node!r}: the agents "
                    f"are {', '.join(self.entry)}."
                )
        elif target.node not in self.nodes and target.node not in self.entry:
            raise HookError(
                f"A hook cannot go to {target.node!r}: no such node or agent. "
                f"Nodes: {', '.join(sorted(self.nodes))}; agents: "
                f"{', '.join(self.entry)}."
            )


class Hooks:
    """The design's hook rules; subclass and override a method for hooks in code.

    Each method gets the state (and the node) and returns a ``Target`` or None."""

    def __init__(self, rules: list[HookRule] | None = None, guardrail: bool = False):
        self.rules = list(rules or [])
        self.guardrail = guardrail

    def _rule(self, event: str, node: str, state: dict) -> Target | None:
        fired = state.get("hook_log") or []
        turn = state.get("active_turn")
        for rule in self.rules:
            if rule.event != event or rule.node not in ("*", node):
                continue
            if rule.target == node and not rule.resume and event == "after":
                continue  # "after X go to X" would only loop
            times = sum(1 for h in fired if h.get("rule") == rule.key() and h.get("turn") == turn)
            if times < rule.times:
                return Target(node=rule.target, resume=rule.resume, step=rule.step, rule=rule.key())
        return None

    def before_run(self, state: dict, turn: dict) -> Target | None:
        """A new user message arrived (the first one or a follow-up)."""
        if self.guardrail:
            return Target(node=GUARDRAIL)
        return self._rule("before_run", "*", state)

    def after(self, node: str, state: dict) -> Target | None:
        """``node`` finished; ``state`` is the state with its update applied."""
        return self._rule("after", node, state)

    def fallback(self, node: str, error: BaseException, state: dict) -> Target | None:
        """``node`` raised ``error`` (after any retries)."""
        return self._rule("fallback", node, state)

    @property
    def has_fallback(self) -> bool:
        return any(r.event == "fallback" for r in self.rules) or (
            type(self).fallback is not Hooks.fallback
        )
