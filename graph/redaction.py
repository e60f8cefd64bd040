"""Secrets taken out of any text before it is stored or shown.

Why: a server's error can echo the request, ``Authorization: Bearer sk-...`` included,
and that text becomes a run's reason, an event, a checkpoint, an export and a page.
Every secret Stepwise is configured with is remembered here (``Settings`` registers its
own when it is made), and ``redact`` replaces those, and anything shaped like a bearer
token or an OpenAI-style key, with ``[redacted]``.

The bottom layer: it imports nothing of Stepwise, so the store, the model layer and the
settings can all use it.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

REDACTED = "[redacted]"
_MIN_SECRET = 6  # shorter "secrets" (a placeholder key like "x") would blank ordinary words

_SHAPES = [
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}"), rf"\1 {REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
]

# Replaced whole, never changed in place: a reader iterates it while a setting is made.
_known: frozenset[str] = frozenset()
_known_pattern: re.Pattern | None = None
_lock = threading.Lock()


def _alternation(secrets: Iterable[str]) -> re.Pattern | None:
    ordered = sorted(set(secrets), key=len, reverse=True)  # a longer secret wins
    return re.compile("|".join(map(re.escape, ordered))) if ordered else None


def remember_secrets(values: Iterable[str | None]) -> None:
    """Secrets to take out of every text from now on (a configured API key, say)."""
    found = {v for v in values if v and len(v) >= _MIN_SECRET}
    # A secret may sit in JSON text with its special characters escaped, non-ASCII ones
    # too (``redact_data``'s text) or not (``clean_json``'s, as the store writes it).
    found |= {json.dumps(v, ensure_ascii=e)[1:-1] for v in found for e in (True, False)}
    global _known, _known_pattern
    if found - _known:
        with _lock:
            known = _known | found
            _known_pattern = _alternation(known)
            _known = known


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without any remembered secret, any of ``secrets``, or anything shaped like
    a bearer token or an ``sk-`` key."""
    if not text:
        return text
    extra = {s for s in secrets if s and len(s) >= _MIN_SECRET}
    known = _alternation(_known | extra) if extra - _known else _known_pattern
    if known is not None:
        text = known.sub(REDACTED, text)
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


def shown_text(text: object, limit: int = 200) -> str:
    """Text a server wrote, as a page may show it: no secret (a hostile server may echo
    the key it was sent), one line, at most ``limit`` characters. Cut before redacting
    too, generously, so a 100 MB body is not searched whole."""
    text = " ".join(str(text)[: limit * 4 + 1000].split())
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _may_hold_secret(text: str) -> bool:
    """Whether JSON ``text`` could hold something ``redact`` takes out. A secret in any
    string of a value is in the value's JSON text too, escaped as ``remember_secrets``
    also remembers it; the shapes begin with "bearer" or "sk-", which JSON never escapes.
    Plain substring tests: far quicker than the patterns on a long text."""
    if "sk-" in text or "bearer" in text.lower():
        return True
    return any(secret in text for secret in _known)


def redact_data(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with ``redact`` applied to every string
    in it, keys included; always a copy, as JSON would read it back (tuples become lists,
    a number key its text).

    Most values hold no secret: their JSON text, made and searched at C speed, tells so,
    and the copy is read back from it instead of walking every string in Python (a run's
    state snapshot, stored every step, is thousands of them)."""
    if isinstance(value, (dict, list, tuple)):
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):  # not JSON alone (an object, NaN): walk it
            return _redact_walk(value)
        if not _may_hold_secret(text):
            return json.loads(text)
    return _redact_walk(value)


def clean_json(value: Any) -> str | None:
    """``value``'s JSON text, non-ASCII kept (as the store writes it), when it holds
    nothing ``redact`` would take out; None when it may, or is not JSON alone (then
    ``redact_data`` it). The store's one encoding of an event: where ``redact_data``
    would encode, decode a copy and the store encode that copy again."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # an object, NaN: the caller walks it
        return None
    return clean_text(text)


def clean_texts(texts: Iterable[str]) -> bool:
    """Whether none of ``texts`` holds anything ``redact`` would take out: an event's
    short fields checked together, without encoding them as JSON first."""
    return not _may_hold_secret("\n".join(texts))


def clean_text(text: str) -> str | None:
    """``text`` (a value's JSON, made by the caller) when it holds nothing ``redact``
    would take out; None when it may (then ``redact_data`` the value)."""
    return None if _may_hold_secret(text) else text


def _redact_walk(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {_redact_walk(k): _redact_walk(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_walk(v) for v in value]
    return value


def url_password(url: str) -> str | None:
    """The password in a PostgreSQL URL (in its user part or as ``?password=``), decoded."""
    parts = urlsplit(url)
    password = parts.password
    if password is None:
        password = dict(parse_qsl(parts.query)).get("password")
    return unquote(password) if password else None


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``[redacted]``: safe to show and log."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    in_query = any(k == "password" for k, _ in query)
    if parts.password is None and not in_query:
        return url
    netloc = parts.netloc
    if parts.password is not None:
        user_part, _, host_part = netloc.rpartition("@")
        netloc = f"{user_part.split(':', 1)[0]}:{REDACTED}@{host_part}"
    if in_query:
        query = [(k, REDACTED if k == "password" else v) for k, v in query]
    return urlunsplit(
        (parts.scheme, netloc, parts.path, urlencode(query, safe="[]/"), parts.fragment)
    )
