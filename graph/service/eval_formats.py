"""Eval sets and experiment results as JSONL in the field's dataset shapes: LangSmith's
examples (``inputs``, ``outputs``, ``metadata``) and Langfuse's dataset items
(``input``, ``expectedOutput``, ``metadata``), one JSON object a line.

Why: eval sets stayed inside Stepwise (its own JSON only). Mapping: the question is
``inputs.question`` (LangSmith, an object) or ``input`` (Langfuse, a text; an object
with ``question``, ``input``, ``query`` or ``prompt`` is read too); the expected output
is ``outputs`` / ``expectedOutput``, kept as it is; Stepwise's checks travel in
``metadata.stepwise_checks`` and the set's score scale, when not the judge's 1-5, in
``metadata.stepwise_scale`` on every line (our extensions: another tool keeps them as
metadata; a file without a scale gets the default). A line
imported is kept whole with its question (``EvalQuestion.origin``), so an export in the
same shape writes it back unchanged, with other tools' fields (``id``, ``split``,
``status``…) and key order. An import that does not fit names the line and the field
and imports nothing.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from graph.service.eval_sets import Check, EvalQuestion, EvalSet, EvalSetError
from graph.service.import_checks import ImportProblem, check_tree
from graph.service.score_scales import JUDGE_SCALE, ScaleError, ScoreScale, scale_from

CHECKS_KEY = "stepwise_checks"
SCALE_KEY = "stepwise_scale"
QUESTION_KEYS = ("question", "input", "query", "prompt")
# shape -> (input field, expected-output field); metadata is "metadata" in both
SHAPES = {"langsmith": ("inputs", "outputs"), "langfuse": ("input", "expectedOutput")}
TITLES = {"langsmith": "LangSmith", "langfuse": "Langfuse"}


class FormatError(EvalSetError):
    """A JSONL file that does not fit a dataset shape; says which line and field."""


def _dumps(line: dict) -> str:
    return json.dumps(line, ensure_ascii=False)


# --------------------------------------------------------------------------- import


def shape_of(line: dict) -> str | None:
    if "inputs" in line:
        return "langsmith"
    if "input" in line:
        return "langfuse"
    return None


def _question_in(value: Any, shape: str, where: str) -> str:
    if isinstance(value, str) and shape == "langfuse":
        if value.strip():
            return value.strip()
        raise FormatError(f"{where}: the question is empty.")
    if not isinstance(value, dict):
        kind = "an object" if shape == "langsmith" else "a text or an object"
        raise FormatError(f"{where}: must be {kind} holding the question.")
    for key in QUESTION_KEYS:
        if isinstance(value.get(key), str) and value[key].strip():
            return value[key].strip()
    texts = [v for v in value.values() if isinstance(v, str) and v.strip()]
    if len(texts) == 1:
        return texts[0].strip()
    raise FormatError(
        f"{where}: no question in it (a text under {', '.join(QUESTION_KEYS)}, or one text alone)."
    )


def _scale(metadata: dict, at: str) -> ScoreScale | None:
    """The scale a line carries (taken out of its metadata), None when it has none."""
    if SCALE_KEY not in metadata:
        return None
    try:
        return scale_from(metadata.pop(SCALE_KEY))
    except ScaleError as exc:
        said = str(exc).removeprefix("The score scale is not usable: ")
        raise FormatError(f"{at} metadata.{SCALE_KEY}: {said}") from None


def _question(line: dict, number: int, shape: str) -> tuple[EvalQuestion, ScoreScale | None]:
    input_key, output_key = SHAPES[shape]
    at = f"line {number}, field"
    if input_key not in line:
        raise FormatError(
            f"line {number}: no {input_key!r} field; every line of a {TITLES[shape]} "
            f"file holds the question in {input_key!r}."
        )
    question = _question_in(line[input_key], shape, f"{at} {input_key}")
    reference = line.get(output_key)
    if shape == "langsmith" and reference is not None and not isinstance(reference, dict):
        raise FormatError(f"{at} {output_key}: must be an object (LangSmith's outputs).")
    metadata = line.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise FormatError(f"{at} metadata: must be an object.")
    metadata = dict(metadata)
    scale = _scale(metadata, at)
    found = metadata.pop(CHECKS_KEY, None) or []
    if not isinstance(found, list):
        raise FormatError(f"{at} metadata.{CHECKS_KEY}: must be a list of checks.")
    checks = []
    for index, item in enumerate(found):
        try:
            checks.append(Check.model_validate(item))
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise FormatError(f"{at} metadata.{CHECKS_KEY}[{index}]: {message}.") from None
    asked = EvalQuestion(
        question=question,
        checks=checks,
        reference=reference,
        metadata=metadata,
        origin={"format": shape, "line": line},
    )
    return asked, scale


def import_jsonl(raw: bytes | str, name: str, description: str = "") -> EvalSet:
    """An eval set from a LangSmith- or Langfuse-shaped JSONL file (the shape told by the
    first line: ``inputs`` or ``input``); FormatError names the first line and field
    that do not fit, and nothing is made of the file."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    except UnicodeDecodeError:
        raise FormatError("The file is not UTF-8 text.") from None
    shape, questions = None, []
    scale: tuple[int, ScoreScale] | None = None  # the first line's that has one
    for number, row in enumerate(text.splitlines(), start=1):
        if not row.strip():
            continue
        try:
            line = json.loads(row)
            check_tree(line)
        except json.JSONDecodeError as exc:
            raise FormatError(
                f"line {number}: not JSON ({exc.msg} at column {exc.colno})."
            ) from None
        except ImportProblem as exc:
            raise FormatError(f"line {number}: {exc}") from None
        except RecursionError:
            raise FormatError(f"line {number}: nested too deep.") from None
        if not isinstance(line, dict):
            raise FormatError(f"line {number}: not a JSON object.")
        if shape is None:
            shape = shape_of(line)
            if shape is None:
                raise FormatError(
                    f"line {number}: neither LangSmith's shape (an 'inputs' field) nor "
                    "Langfuse's (an 'input' field)."
                )
        question, said = _question(line, number, shape)
        if said is not None and scale is None:
            scale = (number, said)
        elif said is not None and scale is not None and said != scale[1]:
            raise FormatError(
                f"line {number}, field metadata.{SCALE_KEY}: {said.describe()} differs from "
                f"line {scale[0]}'s {scale[1].describe()}; an eval set has one scale."
            )
        questions.append(question)
    if not questions:
        raise FormatError("The file has no lines.")
    try:
        found = {} if scale is None else {"scale": scale[1]}
        return EvalSet(name=name, description=description, questions=questions, **found)
    except ValidationError as exc:
        raise FormatError(f"{exc.errors()[0]['msg'].removeprefix('Value error, ')}.") from None


# --------------------------------------------------------------------------- export


def _ordered(metadata: dict, before: Any) -> dict:
    """``metadata`` with the keys a line came with in the order it had them."""
    if not isinstance(before, dict):
        return metadata
    order = [k for k in before if k in metadata] + [k for k in metadata if k not in before]
    return {k: metadata[k] for k in order}


def _scale_value(scale: ScoreScale, before: Any) -> Any:
    """The scale as a line carries it: as the imported line spelled it when it says the
    same (so the line goes back unchanged), else the scale's own document."""
    if isinstance(before, dict) and SCALE_KEY in before:
        try:
            if scale_from(before[SCALE_KEY]) == scale:
                return before[SCALE_KEY]
        except ScaleError:
            pass  # a file's bad scale never got this far: import refuses it
    return scale.document()


def _line(question: EvalQuestion, shape: str, scale: ScoreScale = JUDGE_SCALE) -> dict:
    input_key, output_key = SHAPES[shape]
    origin = question.origin or {}
    line = dict(origin["line"]) if origin.get("format") == shape else {}
    before = line.get("metadata")
    if input_key not in line or _question_in(line[input_key], shape, "") != question.question:
        line[input_key] = (
            {"question": question.question} if shape == "langsmith" else (question.question)
        )
    if output_key in line or question.reference is not None:
        line[output_key] = question.reference
    metadata = dict(question.metadata)
    if question.checks:
        metadata[CHECKS_KEY] = [
            c.model_dump(mode="json", exclude_none=True) for c in question.checks
        ]
    if scale != JUDGE_SCALE or (isinstance(before, dict) and SCALE_KEY in before):
        metadata[SCALE_KEY] = _scale_value(scale, before)
    metadata = _ordered(metadata, before)
    if "metadata" in line and line["metadata"] is None and not metadata:
        return line
    if "metadata" in line or metadata:
        line["metadata"] = metadata
    return line


def export_jsonl(eval_set: EvalSet, shape: str) -> str:
    """The eval set as ``shape`` ("langsmith" or "langfuse") JSONL, a line a question."""
    return "".join(_dumps(_line(q, shape, eval_set.scale)) + "\n" for q in eval_set.questions)


RESULT_FIGURES = ("steps", "replans", "llm_calls", "tokens", "cost", "latency_s")


def export_results_jsonl(
    records: list[dict], eval_set: EvalSet, experiment: str, shape: str
) -> str:
    """An experiment's runs (``run_records``) as ``shape`` JSONL, a line a run: the
    question as the input, what the run answered as LangSmith's ``outputs.answer`` (an
    example made from a run) or Langfuse's ``output`` beside the question's
    ``expectedOutput``, and the variant, repeat, status, checks and figures as metadata."""
    lines = []
    for r in records:
        question = eval_set.questions[r["question_index"]]
        metadata: dict[str, Any] = {
            "experiment": experiment,
            "variant": r["variant"],
            "repeat": r["repeat"],
            "run_id": r["run_id"],
            "status": r["status"],
            "passed": r["passed"],
            "checks": r["checks"],
            **{m: r.get(m) for m in RESULT_FIGURES},
        }
        answer = r.get("final_answer")
        line: dict[str, Any]
        if shape == "langsmith":
            line = {
                "inputs": {"question": question.question},
                "outputs": {"answer": answer},
                "metadata": metadata | {"reference_outputs": question.reference},
            }
        else:
            line = {
                "input": question.question,
                "expectedOutput": question.reference,
                "output": answer,
                "metadata": metadata,
            }
        lines.append(_dumps(line) + "\n")
    return "".join(lines)
