"""Eval sets: fixed questions with checks, as files and documents.

Tuning a prompt needs a yardstick that does not move: the same questions, each with
checks a run either passes or fails (the answer says X, these agents ran, at most N
steps or replans, a chart came out, no human had to step in). ``graph.service.evals``
evaluates them on stored runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graph.kernel.system import systems
from graph.service.import_checks import FileProblem, ImportProblem, check_tree, load_json
from graph.service.score_scales import JUDGE_SCALE, ScoreScale
from graph.settings import REPO_ROOT

EVAL_SET_FORMAT = "stepwise-eval-set"
EVAL_SET_VERSION = 1
STARTER_PATH = REPO_ROOT / "data" / "evals" / "starter.json"

CheckKind = Literal[
    "answer_contains",
    "answer_not_contains",
    "uses_agents",
    "max_steps",
    "max_replans",
    "chart_produced",
    "no_human_help",
]
CHECK_KINDS: tuple[str, ...] = CheckKind.__args__  # type: ignore[attr-defined]
TEXT_KINDS = ("answer_contains", "answer_not_contains")
COUNT_KINDS = ("max_steps", "max_replans")
FLAG_KINDS = ("chart_produced", "no_human_help")


def known_agents() -> list[str]:
    """Agents of every hosted system: an eval set is not tied to one system."""
    return list(dict.fromkeys(a for system in systems().values() for a in system.agents))


class EvalSetError(FileProblem):
    """An eval set file or document that cannot be used; the message says where and why."""


# --------------------------------------------------------------------------- the set


class Check(BaseModel):
    """One thing a run must do. ``value`` is the text (answer checks), the agent names
    (``uses_agents``), the limit (``max_steps``, ``max_replans``) or nothing (flags)."""

    model_config = ConfigDict(extra="forbid")

    kind: CheckKind
    value: Any = None

    @model_validator(mode="after")
    def _value_fits_kind(self) -> Check:
        kind, value = self.kind, self.value
        if kind in TEXT_KINDS:
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{kind} needs the text to look for")
            self.value = value.strip()
        elif kind == "uses_agents":
            names = [value] if isinstance(value, str) else value
            if (
                not isinstance(names, list)
                or not names
                or not all(isinstance(n, str) and n.strip() for n in names)
            ):
                raise ValueError("uses_agents needs a list of agent names")
            names = [n.strip() for n in names]
            known = known_agents()
            if unknown := [n for n in names if n not in known]:
                raise ValueError(
                    f"uses_agents names unknown agent(s): {', '.join(unknown)}; "
                    f"known: {', '.join(known)}"
                )
            self.value = list(dict.fromkeys(names))
        elif kind in COUNT_KINDS:
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{kind} needs a whole number of 0 or more")
            self.value = value
        elif value not in (None, True):
            raise ValueError(f"{kind} takes no value")
        else:
            self.value = None
        return self

    @property
    def label(self) -> str:
        """The check in words, for table headers."""
        value = self.value
        return {
            "answer_contains": lambda: f"answer contains {value!r}",
            "answer_not_contains": lambda: f"answer does not contain {value!r}",
            "uses_agents": lambda: "uses " + ", ".join(value),
            "max_steps": lambda: f"at most {value} step(s)",
            "max_replans": lambda: f"at most {value} replan(s)",
            "chart_produced": lambda: "a chart is produced",
            "no_human_help": lambda: "finishes without human help",
        }[self.kind]()


class EvalQuestion(BaseModel):
    """A question and its checks; ``reference`` (the expected output), ``metadata`` and
    ``origin`` (the line it was imported from, ``{"format", "line"}``) come with
    LangSmith and Langfuse datasets and go back out with them (``eval_formats``)."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    checks: list[Check] = Field(default_factory=list)
    reference: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    origin: dict[str, Any] | None = None

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty")
        return value.strip()


class EvalSet(BaseModel):
    """``scale``: what people score its runs on (the judge's 1-5 unless said)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    questions: list[EvalQuestion] = Field(min_length=1)
    scale: ScoreScale = JUDGE_SCALE

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the eval set needs a name")
        return value.strip()


def with_kept_fields(edited: EvalSet, before: EvalSet | None) -> EvalSet:
    """``edited`` (from an editor that shows questions and checks only) with each
    unchanged question's reference, metadata and origin from ``before``, and its scale
    unless the edit gave one: an edit loses nothing it did not show."""
    if before is None:
        return edited
    if "scale" not in edited.model_fields_set:
        edited = edited.model_copy(update={"scale": before.scale})
    kept = {q.question: q for q in before.questions}
    questions = [
        q.model_copy(
            update={"reference": old.reference, "metadata": old.metadata, "origin": old.origin}
        )
        if (old := kept.get(q.question)) is not None
        else q
        for q in edited.questions
    ]
    return edited.model_copy(update={"questions": questions})


_UNSET_WHEN_EMPTY = {"reference", "metadata", "origin"}  # left out of files when empty


def export_eval_set(eval_set: EvalSet) -> dict:
    """An eval set as a JSON-ready document with its format tag."""
    return {
        "format": EVAL_SET_FORMAT,
        "version": EVAL_SET_VERSION,
        "eval_set": eval_set.model_dump(mode="json", exclude={"questions", "scale"})
        | ({} if eval_set.scale == JUDGE_SCALE else {"scale": eval_set.scale.document()})
        | {
            "questions": [
                q.model_dump(
                    mode="json",
                    exclude={k for k in _UNSET_WHEN_EMPTY if getattr(q, k) in (None, {})},
                )
                for q in eval_set.questions
            ]
        },
    }


def _where(loc: tuple) -> str:
    """A pydantic error location in words a person can find in the file."""
    parts, items = [], list(loc)
    while items:
        key = items.pop(0)
        if key in ("questions", "checks") and items and isinstance(items[0], int):
            parts.append(f"{key[:-1]} {items.pop(0) + 1}")
        else:
            parts.append(str(key))
    return ", ".join(parts) or "eval set"


def import_eval_set(data: dict | str | bytes) -> EvalSet:
    """The eval set in an exported document (a dict, or its JSON text); EvalSetError
    says what is wrong: not JSON, not an eval set, or which question/check is bad."""
    try:  # the whole document checked first: no depth or number a store cannot hold
        if isinstance(data, (str, bytes, bytearray)):
            data = load_json(data)
        check_tree(data)
    except ImportProblem as exc:
        raise EvalSetError(str(exc)) from None
    if not isinstance(data, dict) or data.get("format") != EVAL_SET_FORMAT:
        raise EvalSetError(
            f'Not a Stepwise eval set file (its "format" is not {EVAL_SET_FORMAT!r}).'
        )
    version = data.get("version", EVAL_SET_VERSION)
    if not isinstance(version, int) or version > EVAL_SET_VERSION:
        raise EvalSetError(
            f"Eval set format version {version!r} is newer than this Stepwise "
            f"reads (up to {EVAL_SET_VERSION})."
        )
    body = data.get("eval_set")
    if not isinstance(body, dict):
        raise EvalSetError('The file has no "eval_set" object.')
    try:
        return EvalSet.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        more = len(exc.errors()) - 1
        raise EvalSetError(
            f"{_where(first['loc'])}: {message}"
            + (f" (and {more} more problem(s))" if more else "")
            + "."
        ) from None


def load_starter(path: Path | None = None) -> EvalSet:
    """The starter set shipped with the app (exercises the offline tools)."""
    return import_eval_set((path or STARTER_PATH).read_text(encoding="utf-8"))
