"""Which run the History page has open, computed without Streamlit: a click in the runs
table (a row, or any cell of it) opens that row's run; the table's selection is kept on
the opened run when the list changes under it (a filter, a new fork at the top); a run
the filter hides is said to be hidden rather than shown under a table that omits it.
"""

from __future__ import annotations

from dataclasses import dataclass

UNCHANGED = "unchanged"


def selected(state) -> tuple[list[int], list]:
    """The rows and cells of a dataframe's selection state (absent: nothing)."""
    selection = (state or {}).get("selection") or {}
    return list(selection.get("rows") or []), list(selection.get("cells") or [])


def clicked_run(state, drawn_ids: list[str], drawn_rows: list[int]) -> str | None:
    """The run the user picked in the table since the page last drew it: its id, None
    when they cleared the selection, or ``UNCHANGED`` when they did not touch it.

    ``state`` is the table's selection state; ``drawn_ids`` the run ids in the order the
    table last showed them and ``drawn_rows`` the selection the page drew, so a click is
    read against the rows the user saw, whatever the list holds now."""
    if state is None:  # the table was not drawn last time
        return UNCHANGED
    rows, cells = selected(state)
    if cells:  # a click on a cell opens its row
        position = cells[0][0]
    elif rows != list(drawn_rows):
        if not rows:
            return None
        position = rows[0]
    else:
        return UNCHANGED
    return drawn_ids[position] if 0 <= position < len(drawn_ids) else UNCHANGED


def table_selection(opened: str | None, listed_ids: list[str]) -> dict:
    """The selection state that marks the opened run's row (none when it is not listed)."""
    rows = [listed_ids.index(opened)] if opened in listed_ids else []
    return {"selection": {"rows": rows, "columns": [], "cells": []}}


@dataclass(frozen=True)
class Opened:
    """What the page shows below the table: the run (``show``) and a note about it."""

    show: bool
    note: str = ""
    hidden_by_filter: bool = False


def opened_view(
    opened: str | None, question: str | None, listed_ids: list[str], filtered: bool
) -> Opened:
    """Whether the opened run is shown. ``question`` is None when the store has no such
    run. A run the filter hides is not shown (the table would not list what is below it):
    the page says so and offers to clear the filter."""
    if opened is None:
        return Opened(False, "Click a row of the table to open its run.")
    if question is None:
        return Opened(False, f"There is no run {opened} in the store. Click a row to open one.")
    if opened in listed_ids:
        return Opened(True)
    short = f"{opened[:8]} (“{_clip(question)}”)"
    if filtered:
        return Opened(
            False,
            f"The opened run {short} is hidden by the filter. Clear the filter to see it, "
            "or click a row to open another run.",
            hidden_by_filter=True,
        )
    return Opened(True, f"The opened run {short} is older than the runs listed above.")


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
