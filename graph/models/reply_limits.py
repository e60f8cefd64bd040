"""How long a reply may be, and how a server is told.

Why a table: a small model given room rambles, and on a slow server every token is time.
A routing decision is a name and a sentence; a plan is several steps; an agent's answer
may be a page. Each call says its kind, and gets that many tokens at most, never more
than ``STEPWISE_MAX_TOKENS`` (the cap, and the budget of a call of no kind).

Why a field mode: servers read the limit from different fields. ``langchain-openai``
renames ``max_tokens`` to ``max_completion_tokens``, which OpenAI and vLLM read and
llama-cpp-python's server ignores (a reply then runs until the context is full: seen,
7,879 tokens in 353 s); Ollama and LM Studio read ``max_tokens``. So both are sent, with
the same value, and a server that refuses one of them by name (OpenAI refuses
``max_tokens`` for its reasoning models) gets the other alone from then on, learnt like
the structured-output modes.
"""

from __future__ import annotations

import re

from graph.models.lazy import openai_loaded
from graph.models.modes import OPENAI_API

# Tokens each kind of call may write (a call of no kind: the cap).
REPLY_TOKENS: dict[str, int] = {
    "route": 160,  # a name to go to and a sentence why
    "verdict": 160,  # the guardrail classifier: pass or refuse, and why
    "decision": 320,  # a next agent, its instruction and why
    "judgement": 512,  # four scores, each with a sentence
    "plan": 768,  # several steps, each an agent and an action
}

# The share of STEPWISE_MODEL_CALL_DEADLINE a call of each kind may take in all (a call
# of no kind: all of it), never less than a minute or the whole deadline if shorter:
# a routing decision that takes minutes has gone wrong, an answer may not have.
CALL_SHARE: dict[str, float] = {
    "route": 0.25,
    "verdict": 0.25,
    "decision": 0.5,
    "judgement": 0.75,
    "plan": 1.0,
}
MIN_CAP_S = 60.0

BOTH = "both"
TOKEN_FIELDS = (BOTH, "max_completion_tokens", "max_tokens")
_FIELD_RE = re.compile(r"\b(max_completion_tokens|max_tokens)\b")
# Words of a refusal of the field itself, not of its value (a limit too large for the
# model's context also names max_tokens, and the other field would not help there).
_REFUSAL_WORDS = (
    "unsupported",
    "not supported",
    "unknown",
    "unrecognized",
    "unexpected",
    "extra",
    "not permitted",
    "not allowed",
    "instead",
)


def reply_budget(kind: str | None, cap: int | None) -> int | None:
    """The tokens a call of ``kind`` may write: its entry in ``REPLY_TOKENS``, at most
    ``cap``; ``cap`` for a call of no kind (or an unknown one)."""
    wanted = REPLY_TOKENS.get(kind or "")
    if wanted is None:
        return cap
    return wanted if cap is None else min(wanted, cap)


def call_cap_s(kind: str | None, deadline_s: float) -> float:
    """Seconds a call of ``kind`` may take in all: its share of ``deadline_s``."""
    share = CALL_SHARE.get(kind or "", 1.0)
    return max(deadline_s * share, min(deadline_s, MIN_CAP_S))


def first_field_mode(server: str) -> str:
    """Where to start: OpenAI's own API reads ``max_completion_tokens`` for every model
    and refuses ``max_tokens`` for some; any other server gets both."""
    return "max_completion_tokens" if server.rstrip("/") == OPENAI_API else BOTH


def limit_fields(mode: str | None, limit: int) -> dict[str, int]:
    if mode == "max_tokens":
        return {"max_tokens": limit}
    if mode == "max_completion_tokens":
        return {"max_completion_tokens": limit}
    return {"max_tokens": limit, "max_completion_tokens": limit}


def describe_field(mode: str) -> str:
    return "max_tokens and max_completion_tokens" if mode == BOTH else mode


def refused_field(exc: BaseException) -> str | None:
    """The limit field a server's error refuses by name, or None for any other error. The
    field named first: a refusal may go on to name the other ("Use 'max_completion_tokens'
    instead"), and OpenAI's refusal of both at once names ``max_tokens`` first."""
    if not openai_loaded():  # no model server was used: no error can be its refusal
        return None
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code in (401, 403, 404, 429):
        return None
    text = f"{exc.message} {exc.body}".lower()
    named = _FIELD_RE.search(text)
    if named is None or not any(w in text for w in _REFUSAL_WORDS):
        return None
    return named.group(1)


def field_fallback(mode: str, refused: str, tried: set[str]) -> str | None:
    """The mode to try after ``mode`` had ``refused`` refused: one without that field,
    not tried yet in this call."""
    for lower in TOKEN_FIELDS:
        if lower not in tried and lower != mode and refused not in limit_fields(lower, 1):
            return lower
    return None
