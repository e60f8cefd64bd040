"""What each model server accepts, learnt on first use and remembered.

Servers refuse what they do not support in different ways: OpenAI takes
``response_format: json_schema``; llama.cpp's Python server answers it with HTTP 500 and
a validation message naming ``response_format``, but takes ``json_object`` with a
``schema`` field (grammar-constrained decoding); others take ``json_object`` alone, or
nothing. Some take ``tools`` and never call one. So a model adapter tries the strongest
mode, treats a refusal that names the feature as a refusal whatever its status, falls
back, and writes down what worked, per (server, model), with why in words. A
``ModeBook`` with a persistence (the store) remembers across restarts.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Protocol

from graph.models.lazy import openai_loaded

# Structured output, strongest first; each refusal moves one step down.
STRUCTURED_MODES = ("json_schema", "json_object", "json_object_bare", "none")
STRUCTURED_FALLBACK = {
    "json_schema": "json_object",
    "json_object": "json_object_bare",
    "json_object_bare": "none",
}
TOOL_MODES = ("native", "prompted")

STRUCTURED_WORDS = ("response_format", "json_schema", "schema")
TOOL_WORDS = ("tools", "tool_choice", "tool_calls", "function")

OPENAI_API = "https://api.openai.com/v1"


def describe_structured(mode: str) -> str:
    """A structured-output mode in words, for notices and the Model page."""
    return {
        "json_schema": "json_schema",
        "json_object": "json_object with the schema",
        "json_object_bare": "json_object without a schema",
        "none": "no response_format (the schema in the prompt)",
    }.get(mode, mode)


def describe_tools(mode: str) -> str:
    return {
        "native": "native tool calls",
        "prompted": "tool calls written as JSON in the reply (prompted)",
    }.get(mode, mode)


def is_refusal(exc: BaseException, words: tuple[str, ...]) -> str | None:
    """The word a server's error names when it refused a feature (any HTTP status: llama.cpp
    answers 500, others 400 or 422), or None for any other error."""
    if not openai_loaded():  # no model server was used: no error can be its refusal
        return None
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code in (401, 403, 404, 429):
        return None
    text = f"{exc.message} {exc.body}".lower()
    return next((w for w in words if w in text), None)


@dataclass
class LearntModes:
    """What one server/model pair was found to accept, and why, in words."""

    structured: str | None = None
    tools: str | None = None
    structured_note: str = (
        ""  # e.g. "the server refused json_schema (HTTP 500 naming response_format)"
    )
    tools_note: str = ""
    token_field: str | None = None  # where the reply limit goes (graph.models.reply_limits)
    token_field_note: str = ""
    updated_at: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


class ModePersistence(Protocol):
    """Where learnt modes outlive the process (the store implements it)."""

    def load_model_modes(self) -> dict[tuple[str, str], dict]: ...

    def save_model_modes(self, server: str, model: str, modes: dict) -> None: ...


@dataclass
class ModeBook:
    """Learnt modes per (server, model), shared by every model adapter of a process."""

    persistence: ModePersistence | None = None
    _modes: dict[tuple[str, str], LearntModes] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.persistence is not None:
            for key, record in self.persistence.load_model_modes().items():
                known = {k: v for k, v in record.items() if k in LearntModes.__dataclass_fields__}
                self._modes[key] = LearntModes(**known)

    def get(self, server: str, model: str) -> LearntModes:
        with self._lock:
            found = self._modes.get((server, model))
            return LearntModes(**found.as_dict()) if found else LearntModes()

    def learn(
        self,
        server: str,
        model: str,
        *,
        structured: str | None = None,
        tools: str | None = None,
        token_field: str | None = None,
        note: str | None = None,
    ) -> None:
        """Record what worked; ``note`` says why it is not the strongest mode."""
        with self._lock:
            current = self._modes.setdefault((server, model), LearntModes())
            before = current.as_dict()
            if structured is not None:
                current.structured = structured
                if note is not None:
                    current.structured_note = note
            if tools is not None:
                current.tools = tools
                if note is not None:
                    current.tools_note = note
            if token_field is not None:
                current.token_field = token_field
                if note is not None:
                    current.token_field_note = note
            changed = {k: v for k, v in current.as_dict().items() if k != "updated_at"} != {
                k: v for k, v in before.items() if k != "updated_at"
            }
            if changed:
                current.updated_at = time.time()
                record = current.as_dict()
        if changed and self.persistence is not None:
            self.persistence.save_model_modes(server, model, record)

    def all(self) -> dict[tuple[str, str], LearntModes]:
        with self._lock:
            return {k: LearntModes(**v.as_dict()) for k, v in self._modes.items()}

    def forget(self) -> None:
        """Learn everything again (the Model page's *Forget*; tests)."""
        with self._lock:
            keys = list(self._modes)
            self._modes.clear()
        if self.persistence is not None:
            for server, model in keys:
                self.persistence.save_model_modes(server, model, {})


# What a process learns when no store is attached (the command line without a home, tests).
PROCESS_MODES = ModeBook()
