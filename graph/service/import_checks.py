"""What an imported file must be before anything of it is stored: run exports, design
files and eval set files.

Why: a file can come from anyone. One run export with ``"created_at": "yesterday"``
once reached the store unchecked, and every later visit of the Run and History pages
failed on it; a file nested thousands of levels deep crashed the importers; a design
file could point runs at any model server. So every import is read through here whole
first: each field's type, each time, each event's seq, the nesting depth, every number
finite. The first problem found refuses the file, in one sentence naming the field;
nothing of a refused file is stored.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from graph.errors import StepwiseError
from graph.kernel.design import DESIGN_FORMAT, Design, DesignError, import_design
from graph.kernel.system import systems
from graph.models.choice import configured_choice
from graph.redaction import redact
from graph.settings import Settings

# Levels of lists and objects in one file: a run's deepest (a teams run's state, a
# Vega-Lite chart spec) has about fifteen; the JSON parser gives up near a thousand.
MAX_DEPTH = 64
# Times are seconds since 1970; past the year 3000 is no moment a run had (and beyond
# year 9999 Python cannot show one).
LATEST_TIME = 32_503_680_000.0
MAX_COUNT = 10**9  # a step count or an event's seq: SQLite's integers end at 2**63
EVENT_KINDS = ("update", "custom", "state", "end")
RESERVED_KEYS = ("$text", "$delta")  # how the store writes shelved texts and state patches
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


class FileProblem(StepwiseError, ValueError):
    """What is wrong with an uploaded file, in words. A refusal quotes the value it
    refuses, and a crafted file may hold a key there: the message never shows one."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class ImportProblem(FileProblem):
    """A file that cannot be imported; the message names the field and what is wrong."""


def load_json(raw: bytes | str) -> Any:
    """An uploaded file's JSON, or ImportProblem saying why it is none."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
        return json.loads(text)
    except UnicodeDecodeError:
        raise ImportProblem("The file is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise ImportProblem(f"The file is not JSON text: {exc}.") from None
    except RecursionError:
        raise ImportProblem(f"The file is nested deeper than {MAX_DEPTH} levels.") from None


def _path(parts: tuple) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return (text if len(text) <= 80 else text[:79] + "…") or "the file"


def check_tree(value: Any, where: tuple = ()) -> None:
    """Refuse data no store or page can hold: nesting past MAX_DEPTH, a number that is
    NaN or infinite, a text with a NUL or a lone surrogate (PostgreSQL and UTF-8 refuse
    them), a key that is not text, the store's reserved forms, anything not JSON.
    Walked without recursion, so a deep value cannot crash the walk itself."""
    stack = [(value, where, 0)]
    while stack:
        item, parts, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ImportProblem(f"{_path(parts)}: nested deeper than {MAX_DEPTH} levels.")
            if isinstance(item, dict):
                if len(item) == 1 and next(iter(item)) in RESERVED_KEYS:
                    raise ImportProblem(
                        f"{_path(parts)}: {next(iter(item))!r} alone is a form the store "
                        "reserves for itself."
                    )
                for key, inner in item.items():
                    if not isinstance(key, str):
                        raise ImportProblem(f"{_path(parts)}: the key {key!r} is not text.")
                    stack.append((inner, (*parts, key), depth + 1))
            else:
                stack.extend((inner, (*parts, i), depth + 1) for i, inner in enumerate(item))
        elif isinstance(item, float):
            if not math.isfinite(item):
                shown = "NaN" if math.isnan(item) else "Infinity"
                raise ImportProblem(f"{_path(parts)}: {shown} is not a finite number.")
        elif isinstance(item, str):
            _check_text(item, parts)
        elif item is not None and not isinstance(item, (bool, int)):
            raise ImportProblem(f"{_path(parts)}: a {type(item).__name__} is not JSON data.")


def _check_text(text: str, parts: tuple) -> None:
    if "\x00" in text:
        raise ImportProblem(f"{_path(parts)}: the text holds a NUL character.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ImportProblem(f"{_path(parts)}: the text is not valid Unicode.") from None


# --------------------------------------------------------------------------- fields


@overload
def _text(
    value: Any, where: str, *, optional: Literal[False] = False, limit: int | None = None
) -> str: ...
@overload
def _text(value: Any, where: str, *, optional: bool, limit: int | None = None) -> str | None: ...
def _text(
    value: Any, where: str, *, optional: bool = False, limit: int | None = None
) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ImportProblem(f"{where}: {_shown(value)} is not text.")
    if limit is not None and len(value) > limit:
        raise ImportProblem(
            f"{where}: {len(value):,} characters, more than the {limit:,} it may have."
        )
    return value


@overload
def _count(value: Any, where: str, *, optional: Literal[False] = False, least: int = 0) -> int: ...
@overload
def _count(value: Any, where: str, *, optional: bool, least: int = 0) -> int | None: ...
def _count(value: Any, where: str, *, optional: bool = False, least: int = 0) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_COUNT:
        raise ImportProblem(f"{where}: {_shown(value)} is not a whole number from {least} up.")
    return value


@overload
def _moment(value: Any, where: str, *, optional: Literal[False] = False) -> float: ...
@overload
def _moment(value: Any, where: str, *, optional: bool) -> float | None: ...
def _moment(value: Any, where: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if value is None:
        raise ImportProblem(f"{where}: missing; the time is needed.")
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 <= value <= LATEST_TIME  # NaN fails this too
    ):
        raise ImportProblem(
            f"{where}: {_shown(value)} is not a time (seconds since 1970, as exports write it)."
        )
    return float(value)


@overload
def _object(value: Any, where: str, *, optional: Literal[False] = False) -> dict: ...
@overload
def _object(value: Any, where: str, *, optional: bool) -> dict | None: ...
def _object(value: Any, where: str, *, optional: bool = False) -> dict | None:
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise ImportProblem(f"{where}: {_shown(value)} is not an object.")
    return value


def _shown(value: Any) -> str:
    """A value as a refusal quotes it: short, whatever its size."""
    text = json.dumps(value, ensure_ascii=False, default=repr)[:60] if value is not None else "null"
    return text if len(text) < 60 else text[:59] + "…"


# --------------------------------------------------------------------------- stored runs


def shown_time(value: Any) -> float | None:
    """A stored time as a record holds it, None when it is no time: a run an unchecked
    import stored must still list, open and delete."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value <= LATEST_TIME else None


def shown_counts(text: str | None) -> dict[str, int]:
    """A run's stored counts; what is no count (an unchecked import's) is left out."""
    return {
        k: v
        for k, v in shown_object(text).items()
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0
    }


def shown_object(text: str | None) -> dict:
    """A stored JSON object, {} for anything else."""
    try:
        value = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def shown_design(text: str | None) -> dict:
    """A stored design's object with the fields every page reads (its system, its
    agents) left out when they are of the wrong type: the defaults show instead."""
    design = shown_object(text)
    if not isinstance(design.get("system", ""), str):
        design.pop("system")
    agents = design.get("enabled_agents", [])
    if not (isinstance(agents, list) and all(isinstance(a, str) for a in agents)):
        design.pop("enabled_agents")
    return design


# --------------------------------------------------------------------------- designs


def checked_design(
    data: Any, settings: Settings, where: str = "design"
) -> tuple[Design, list[str]]:
    """A design from a file, and sentences on what was left out of it: a model endpoint
    other than the one configured here (runs would send their questions there). Refuses
    (ImportProblem) a design with no agent or one that does not validate."""
    body = _object(data, where)
    check_tree(body, (where,))
    if isinstance(body.get("enabled_agents"), list) and not body["enabled_agents"]:
        raise ImportProblem(f"{where}.enabled_agents: the design has no agent enabled.")
    notes = []
    model = body.get("model")
    if model is not None:
        ours = configured_choice(settings)
        endpoint = model.get("endpoint") if isinstance(model, dict) else model
        if not isinstance(model, dict) or (endpoint or "").rstrip("/") != ours.endpoint:
            body = {**body, "model": None}
            notes.append(
                f"The file's model server ({_shown(endpoint)}) was left out: an imported "
                "design never chooses where questions are sent. Its runs use the model in "
                f"use here ({ours.label})."
            )
    try:
        design = import_design({"format": DESIGN_FORMAT, "design": body})
    except DesignError as exc:  # "field: problem", or a sentence of its own
        text = str(exc).rstrip(".") + "."
        named = " " not in text.split(":", 1)[0] and ":" in text
        raise ImportProblem(f"{where}.{text}" if named else f"{where}: {text}") from None
    return design, notes


def check_design_file(data: Any, settings: Settings) -> tuple[Design, list[str]]:
    """The design in a design file (``export_design``'s document)."""
    if not isinstance(data, dict) or data.get("format") != DESIGN_FORMAT:
        raise ImportProblem(f'Not a Stepwise design file (its "format" is not "{DESIGN_FORMAT}").')
    check_tree(data)
    return checked_design(data.get("design") or {}, settings)


# --------------------------------------------------------------------------- runs


@dataclass
class CheckedRun:
    """A run export as the store takes it: every value checked, nothing stored yet."""

    record: dict  # the run's columns, by name
    snapshot: dict | None
    events: list[tuple]  # (seq, ts, kind, node, namespace, step, data)
    notes: list[str] = field(default_factory=list)


def check_run_export(
    data: Any, settings: Settings, *, export_format: str, statuses: tuple[str, ...]
) -> CheckedRun:
    """A run export read whole, or ImportProblem naming the first thing wrong in it."""
    if not isinstance(data, dict) or data.get("format") != export_format:
        raise ImportProblem(f'Not a Stepwise run export (its "format" is not "{export_format}").')
    check_tree(data)
    run = _object(data.get("run"), "run")
    if "schema_version" in data:
        _count(data["schema_version"], "schema_version")
    run_id = run.get("id")
    if run_id is not None and not (isinstance(run_id, str) and _RUN_ID.fullmatch(run_id)):
        raise ImportProblem(
            f"run.id: {_shown(run_id)} is not a run id (letters, digits and ._:- only)."
        )
    known = list(systems())
    design_data = _object(run.get("design"), "run.design", optional=True) or {}
    system = run.get("system") or design_data.get("system") or known[0]
    if system not in known:
        raise ImportProblem(
            f"run.system: {_shown(system)} is not a system this app hosts ({', '.join(known)})."
        )
    if design_data.get("system", system) != system:
        raise ImportProblem(
            f"run.design.system: {_shown(design_data['system'])} is not the run's system "
            f"({system})."
        )
    design, notes = checked_design({**design_data, "system": system}, settings, "run.design")
    status = run.get("status")
    if status is not None and status not in statuses:
        raise ImportProblem(
            f"run.status: {_shown(status)} is not a run status ({', '.join(statuses)})."
        )
    versions = _object(run.get("prompt_versions"), "run.prompt_versions", optional=True) or {}
    for name, version in versions.items():
        _count(version, f"run.prompt_versions.{name}")
    started = _moment(run.get("started_at"), "run.started_at", optional=True)
    finished = _moment(run.get("finished_at"), "run.finished_at", optional=True)
    if started is not None and finished is not None and finished < started:
        raise ImportProblem("run.finished_at: the run finished before it started.")
    record = {
        "id": run_id,
        "question": _question(run.get("question"), settings),
        "system": system,
        "design": design.model_dump(mode="json"),
        "prompt_versions": versions,
        "settings": _object(run.get("settings"), "run.settings", optional=True) or {},
        "status": status,
        "reason": _text(run.get("reason") or "", "run.reason"),
        "model_label": _text(run.get("model_label") or "", "run.model_label", limit=1000),
        "created_at": _moment(run.get("created_at"), "run.created_at"),
        "started_at": started,
        "finished_at": finished,
        "final_answer": _text(run.get("final_answer"), "run.final_answer", optional=True),
        "counts": _counts(run),
        "parent_run": _text(run.get("parent_run"), "run.parent_run", optional=True, limit=128),
        "parent_checkpoint": _text(
            run.get("parent_checkpoint"), "run.parent_checkpoint", optional=True, limit=128
        ),
    }
    snapshot = _object(data.get("snapshot"), "snapshot", optional=True)
    return CheckedRun(record, snapshot, _events(data.get("events")), notes)


def _counts(run: dict) -> dict[str, int]:
    """The run's counts (``counts``), or those of an export made before systems counted
    in their own words (``step_count`` and ``replan_count``)."""
    if "counts" not in run:
        return {
            "steps": _count(run.get("step_count") or 0, "run.step_count"),
            "replans": _count(run.get("replan_count") or 0, "run.replan_count"),
        }
    counts = _object(run["counts"], "run.counts")
    return {str(k): _count(v, f"run.counts.{k}") for k, v in counts.items()}


def _question(value: Any, settings: Settings) -> str:
    text = _text(value, "run.question", limit=settings.max_question_chars)
    if not text.strip():
        raise ImportProblem("run.question: the question is empty.")
    return text


def _events(value: Any) -> list[tuple]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportProblem(f"events: {_shown(value)} is not a list of events.")
    rows, seen = [], set()
    for i, event in enumerate(value):
        where = f"events[{i}]"
        event = _object(event, where)
        if "seq" not in event:
            raise ImportProblem(f"{where}.seq: missing; every event needs its place in the log.")
        seq = _count(event["seq"], f"{where}.seq", least=1)
        if seq in seen:
            raise ImportProblem(f"{where}.seq: {seq} is the seq of an earlier event too.")
        seen.add(seq)
        kind = event.get("kind")
        if kind not in EVENT_KINDS:
            raise ImportProblem(
                f"{where}.kind: {_shown(kind)} is not an event kind ({', '.join(EVENT_KINDS)})."
            )
        data = event.get("data")
        if kind != "custom" and data is not None and not isinstance(data, dict):
            raise ImportProblem(f"{where}.data: an event of kind {kind!r} holds an object here.")
        if kind == "end" and data is not None:
            _end(data, where)
        rows.append(
            (
                seq,
                _moment(event.get("ts") or 0.0, f"{where}.ts"),
                kind,
                _text(event.get("node") or "", f"{where}.node", limit=200),
                _text(event.get("namespace") or "", f"{where}.namespace", limit=1000),
                _count(event.get("step"), f"{where}.step", optional=True),
                data,
            )
        )
    return rows


def _end(data: dict, where: str) -> None:
    """An end event's status, reason and questions to a person, which pages read."""
    _text(data.get("status") or "", f"{where}.data.status")
    _text(data.get("reason") or "", f"{where}.data.reason")
    asks = data.get("interrupts")
    if asks is not None and not (isinstance(asks, list) and all(isinstance(a, dict) for a in asks)):
        raise ImportProblem(f"{where}.data.interrupts: not a list of objects.")
