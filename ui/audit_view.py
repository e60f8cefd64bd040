"""The audit trail (issue 29): every decision on an approval and every change of a prompt
or the design, with who made it, as one table to filter and export as CSV.

Decisions come from the decisions record (who answered each question), changes from the
audit log; both keep ``by`` as stored ("human" in single-user mode, a person's e-mail
once sign-in is on, "timeout" when the design's default applied).
"""

from __future__ import annotations

import csv
import io
from datetime import datetime

from graph.service.store import Store
from ui.inbox_view import DECIDED_WORDS

COLUMNS = ["When", "Who", "What", "About", "Details"]
TIMED_OUT = "nobody: timed out"


def who_words(by: str) -> str:
    """How the trail names whoever acted."""
    if by in ("human", ""):
        return "you"
    if by == "timeout":
        return TIMED_OUT
    if by == "experiment":
        return "the experiment"
    return by


def _decision_row(item: dict) -> dict:
    decided = item["decided"]
    what = DECIDED_WORDS.get(decided["decision"], decided["decision"].capitalize())
    if decided["by"] == "timeout":
        what += " (the design's default)"
    details = item.get("edited_query") or decided.get("reason") or ""
    about = (
        f"run {item['run_id'][:8]} · step {item.get('step')} ({item.get('agent')}) · "
        f"“{item.get('question', '')}”"
    )
    return {
        "at": decided["at"],
        "by": decided["by"],
        "what": what,
        "about": about,
        "details": details,
    }


def trail(store: Store, since: float = 0.0) -> list[dict]:
    """Decisions and changes since ``since``, newest first: {at, by, what, about, details}."""
    rows = [_decision_row(item) for item in store.decisions.since(since)]
    rows += [
        {
            "at": entry["at"],
            "by": entry["by"],
            "what": entry["action"].capitalize(),
            "about": entry["subject"],
            "details": entry["detail"],
        }
        for entry in store.audit.entries(since)
    ]
    return sorted(rows, key=lambda row: row["at"], reverse=True)


def filtered(rows: list[dict], who: list[str], what: list[str]) -> list[dict]:
    """The rows by any of ``who`` (as ``who_words`` names them) doing any of ``what``;
    an empty filter keeps every row."""
    return [
        row
        for row in rows
        if (not who or who_words(row["by"]) in who) and (not what or row["what"] in what)
    ]


def table(rows: list[dict]) -> list[dict]:
    """The rows as the page and the CSV show them."""
    return [
        dict(
            zip(
                COLUMNS,
                (
                    f"{datetime.fromtimestamp(row['at']):%Y-%m-%d %H:%M:%S}",
                    who_words(row["by"]),
                    row["what"],
                    row["about"],
                    row["details"],
                ),
                strict=True,
            )
        )
        for row in rows
    ]


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(table(rows))
    return out.getvalue()
