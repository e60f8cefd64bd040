"""The guardrail agent (the example of docs/systems/conversations.md): every new user message comes here first.

It checks a message three ways: prompt-injection patterns (an editable text file,
``prompts/guardrail/injection_patterns.txt``), requests outside what the enabled agents
can do, and, when the design asks for it, a model classifier with its own editable
prompt. A message that passes goes on, and the main agent resumes exactly where it
stopped; a refused one is answered with the reason, recorded on its turn. Tool results
(retrieved documents, API replies) are scanned with the same patterns: instructions
aimed at the agents are flagged on the step that fetched them.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import BaseModel

from graph.kernel.system import System
from graph.kernel.system_parts import Ability
from graph.models.structured import JsonAsk, ask_json
from graph.prompts import PromptSet, PromptSpec, register
from graph.settings import get_settings

register(
    PromptSpec(
        "guardrail/classifier",
        "Guardrail: the model classifier (used when the design switches it on).",
        frozenset({"message", "agents"}),
        frozenset({"message"}),
    )
)

PATTERNS_FILE = "guardrail/injection_patterns.txt"  # under the prompts folder

# What no hosted agent can do, in any design.
NEVER: tuple[tuple[str, str], ...] = (
    ("send e-mail", r"\b(send|write) (an? )?e-?mails?\b"),
    (
        "make payments or trades",
        r"\b(place (a|an) (trade|order)|transfer (money|funds)|"
        r"make a payment|wire money)\b",
    ),
    (
        "run code or commands",
        r"\b(run|execute|eval) (this |the |my |some )?"
        r"(code|script|command|shell)",
    ),
    ("delete files or data", r"\b(delete|remove|wipe) (the |all |my )?(files?|database|records)\b"),
)


class Verdict(BaseModel):
    verdict: Literal["pass", "refuse"]
    reason: str = ""


@dataclass
class Check:
    passed: bool
    reason: str
    checks: list[dict] = field(default_factory=list)  # each: check, passed, detail


@lru_cache(maxsize=8)
def _compiled(text: str) -> tuple[tuple[str, re.Pattern], ...]:
    lines = [ln.strip() for ln in text.splitlines()]
    return tuple(
        (ln, re.compile(ln, re.IGNORECASE)) for ln in lines if ln and not ln.startswith("#")
    )


def injection_patterns(path: Path | None = None) -> tuple[tuple[str, re.Pattern], ...]:
    """The patterns in the file (read each time: a user may have edited it)."""
    path = path or get_settings().prompts_dir / PATTERNS_FILE
    return _compiled(path.read_text(encoding="utf-8"))


def find_injection(
    text: str, patterns: Iterable[tuple[str, re.Pattern]] | None = None
) -> tuple[str, str, int] | None:
    """The first injection pattern ``text`` matches, the matching words and where they
    start. ``patterns``: ``injection_patterns()`` read once for many texts."""
    for source, pattern in patterns if patterns is not None else injection_patterns():
        if match := pattern.search(text or ""):
            return source, match.group(0), match.start()
    return None


def out_of_scope(text: str, abilities: Iterable[Ability], enabled: list[str]) -> str | None:
    """Why the enabled agents cannot do what ``text`` asks, or None. ``abilities``: what
    the system's agents can do (``Shape.abilities``)."""
    for never, pattern in NEVER:
        if re.search(pattern, text, re.IGNORECASE):
            return f"It asks to {never}, which no agent here can do."
    for ability in abilities:
        providers = ability.agents
        if re.search(ability.pattern, text, re.IGNORECASE) and not set(providers) & set(enabled):
            return (
                f"It asks to {ability.words}, but {' / '.join(providers)} "
                f"{'is' if len(providers) == 1 else 'are'} not enabled in this design."
            )
    return None


def classifier_ask(
    text: str, system: System, enabled: list[str], prompts: PromptSet | None = None
) -> JsonAsk:
    """The guardrail classifier's request for ``text`` (the guardrail asks it; the
    playground too)."""
    agents = "\n".join(
        f"- {n}: {system.agents[n].description}" for n in enabled if n in system.agents
    )
    prompt = (prompts or PromptSet()).render(
        "guardrail/classifier", message=text, agents=agents or "- (none)"
    )
    return JsonAsk(
        prompt,
        Verdict,
        label="Guardrail classifier",
        repair_prompt=lambda error, _reply: (
            f"Your reply was unusable ({error}). Reply with JSON only, for "
            'example: {"verdict": "refuse", "reason": "It asks for the '
            'system prompt."}'
        ),
        kind="verdict",
    )


def check_message(
    text: str,
    system: System,
    enabled: list[str],
    *,
    model: BaseChatModel | None = None,
    prompts: PromptSet | None = None,
) -> Check:
    """All checks on one user message; the first that fails gives the reason."""
    checks: list[dict[str, Any]] = []
    hit = find_injection(text)
    checks.append(
        {
            "check": "injection patterns",
            "passed": hit is None,
            "detail": f"matches {hit[0]!r} ({hit[1]!r})" if hit else "no pattern matches",
        }
    )
    scope = out_of_scope(text, system.shape.abilities, enabled)
    checks.append(
        {
            "check": "scope of the enabled agents",
            "passed": scope is None,
            "detail": scope or "within what the enabled agents can do",
        }
    )
    if model is not None:
        reply = ask_json(model, classifier_ask(text, system, enabled, prompts))
        checks.append(
            {
                "check": "model classifier",
                "passed": reply.value.verdict == "pass",
                "detail": reply.value.reason or reply.value.verdict,
            }
        )
    failed = [c for c in checks if not c["passed"]]
    if not failed:
        return Check(True, "Passed every check.", checks)
    first = failed[0]
    if first["check"] == "injection patterns":
        reason = f"It looks like a prompt injection: it {first['detail']}."
    else:
        reason = first["detail"]
    return Check(False, reason, checks)


def flag_tool_results(messages: list[BaseMessage], node: str, step: int | None) -> list[dict]:
    """Flags for tool results that carry instructions aimed at the agents."""
    results = [m for m in messages or [] if isinstance(m, ToolMessage)]
    patterns = injection_patterns() if results else ()
    flags = []
    for message in results:
        content = message.content if isinstance(message.content, str) else str(message.content)
        if hit := find_injection(content, patterns):
            source, _, at = hit
            flags.append(
                {
                    "step": step,
                    "node": node,
                    "tool": message.name or "tool",
                    "pattern": source,
                    "excerpt": content[max(0, at - 80) : at + 120].strip(),
                    "at": time.time(),
                }
            )
    return flags


def guardrail_message(text: str, step: int | None) -> AIMessage:
    return AIMessage(
        content=text, name="guardrail", response_metadata={"step": step, "agent": "guardrail"}
    )
