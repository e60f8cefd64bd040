"""Eval questions and checks as table rows and back, without Streamlit: the rows the
sets tab's table editor and the "Add to eval set" control show in ``st.data_editor``,
and the checks read back from the edited rows, with a message naming the bad row.

One text cell holds any check's value: the text (answer checks), agent names separated
by commas (``uses_agents``), a whole number (step and replan limits), or nothing (flags).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from graph.service.eval_sets import (
    CHECK_KINDS,
    Check,
    EvalQuestion,
    EvalSet,
    EvalSetError,
)
from graph.service.run_to_eval import ProposedCheck

VALUE_HELP = (
    "The text to look for, agent names separated by commas, a whole number, or nothing "
    "for chart_produced and no_human_help."
)


def value_text(check: Check) -> str:
    """A check's value as the table's text cell shows it."""
    if check.value is None:
        return ""
    if isinstance(check.value, list):
        return ", ".join(check.value)
    return str(check.value)


def _cell(value: Any) -> Any:
    """A table cell as Python: pandas' NaN and NA (an empty cell of an added row) are None."""
    if value is None:
        return None
    try:
        if isinstance(value, float) and math.isnan(value):
            return None
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except TypeError:
        pass
    return value


def records(frame) -> list[dict]:
    """An edited table (a DataFrame, as ``st.data_editor`` returns it) as plain rows."""
    return [{k: _cell(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _text(value: Any) -> str:
    value = _cell(value)
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def check_from_cells(kind: Any, value: Any, where: str) -> Check:
    """The check in a row's Kind and Value cells; EvalSetError names ``where`` it is."""
    kind = _text(kind)
    if kind not in CHECK_KINDS:
        raise EvalSetError(
            f"{where} has no kind: pick one of {', '.join(CHECK_KINDS)}."
            if not kind
            else f"{where}: {kind!r} is not a kind of check."
        )
    text = _text(value)
    if kind == "uses_agents":
        parsed: Any = [name.strip() for name in text.split(",") if name.strip()]
    else:
        parsed = text or None
    try:
        return Check(kind=kind, value=parsed)
    except ValidationError as exc:
        message = exc.errors()[0]["msg"].removeprefix("Value error, ")
        if kind in ("chart_produced", "no_human_help"):
            message += ": leave its value empty"
        raise EvalSetError(f"{where} ({kind}): {message}.") from None


def _blank(row: dict, columns: tuple[str, ...]) -> bool:
    return all(not _text(row.get(c)) for c in columns)


# ------------------------------------------------------------------ from a run


def proposal_rows(proposed: list[ProposedCheck]) -> list[dict]:
    """The checks proposed from a run, all kept to start with."""
    return [
        {
            "Keep": True,
            "Kind": p.check.kind,
            "Value": value_text(p.check),
            "From the run": p.because,
        }
        for p in proposed
    ]


def question_from_rows(question: str, rows: list[dict]) -> EvalQuestion:
    """The question with the kept checks of the edited proposal table; EvalSetError says
    what is wrong (an empty question, a check whose value does not fit its kind)."""
    if not (question or "").strip():
        raise EvalSetError("The question is empty: write the question the set should ask.")
    checks = []
    for number, row in enumerate(rows, start=1):
        if row.get("Keep") is False or _blank(row, ("Kind", "Value")):
            continue
        checks.append(check_from_cells(row.get("Kind"), row.get("Value"), f"Check row {number}"))
    return EvalQuestion(question=question.strip(), checks=checks)


# ------------------------------------------------------------------ a whole set


def question_table(eval_set: EvalSet) -> list[dict]:
    """One row per question, numbered: the checks table names a question by its number."""
    return [{"No.": i, "Question": q.question} for i, q in enumerate(eval_set.questions, 1)]


def check_table(eval_set: EvalSet) -> list[dict]:
    """One row per check, with the number of its question."""
    return [
        {"Question": i, "Kind": c.kind, "Value": value_text(c)}
        for i, q in enumerate(eval_set.questions, 1)
        for c in q.checks
    ]


def eval_set_from_tables(
    name: str, description: str, questions: list[dict], checks: list[dict]
) -> EvalSet:
    """The eval set the edited tables describe; EvalSetError names the first bad row.

    Questions keep their numbers while edited, so deleting question 2 does not move the
    checks of question 3 onto another question; a new question without a number gets
    the next free one. The saved set is numbered 1, 2, 3… again."""
    if not (name or "").strip():
        raise EvalSetError("The eval set needs a name.")
    numbered: dict[int, str] = {}
    unnumbered: list[str] = []
    for position, row in enumerate(questions, start=1):
        if _blank(row, ("No.", "Question")):
            continue
        text = _text(row.get("Question"))
        if not text:
            raise EvalSetError(
                f"Question row {position} is empty: write the question or delete the row."
            )
        number = _text(row.get("No."))
        if not number:
            unnumbered.append(text)
            continue
        if not number.isdigit() or int(number) < 1:
            raise EvalSetError(
                f"Question row {position}: its number must be a whole number from 1."
            )
        if int(number) in numbered:
            raise EvalSetError(f"Question row {position}: number {number} is used twice.")
        numbered[int(number)] = text
    for text in unnumbered:
        numbered[max(numbered, default=0) + 1] = text
    if not numbered:
        raise EvalSetError("The eval set needs at least one question.")
    by_number: dict[int, list[Check]] = {n: [] for n in numbered}
    for position, row in enumerate(checks, start=1):
        if _blank(row, ("Question", "Kind", "Value")):
            continue
        where = f"Check row {position}"
        number = _text(row.get("Question"))
        if not number.isdigit() or int(number) not in by_number:
            raise EvalSetError(
                f"{where} names question {number or '(none)'}, which is not in the questions "
                "table: give it the number of a question, or delete the check."
            )
        by_number[int(number)].append(check_from_cells(row.get("Kind"), row.get("Value"), where))
    return EvalSet(
        name=name.strip(),
        description=(description or "").strip(),
        questions=[
            EvalQuestion(question=numbered[n], checks=by_number[n]) for n in sorted(numbered)
        ],
    )


def apply_edits(rows: list[dict], edits: dict | None) -> list[dict]:
    """The rows a ``st.data_editor`` shows, from the rows it was given and the edits it
    keeps in session state (edited, deleted and added rows): what a button callback
    reads, before the editor's script run hands back its table."""
    if not edits:
        return [dict(r) for r in rows]
    current = [dict(r) for r in rows]
    for position, changes in (edits.get("edited_rows") or {}).items():
        current[int(position)].update(changes)
    deleted = {int(p) for p in edits.get("deleted_rows") or []}
    current = [r for i, r in enumerate(current) if i not in deleted]
    current += [dict(r) for r in edits.get("added_rows") or []]
    return current
