"""A run's main table read in a narrow column without sideways scrolling (issue 28).

At 1280 px the step table (twelve columns) was 857 px wide in a 392 px column, and a class
saw Step, Agent and Action but no Status. Each row now flows over lines: the panel's
lead columns (Step, Agent, Status, Replans) on its first line, aligned under their
headings; the wordiest column (the action) on a line of its own; the other cells after
it, each with its column's name. Only the style sheet changes: the table keeps its
columns, in order, for whatever reads it.
"""

from __future__ import annotations

from typing import Sequence

# A lead column's share of the first line, in ems: its longest text at about 0.55 em a
# character, plus the cell's padding; capped so a long status wraps instead.
EM_PER_CHAR = 0.55
PADDING_EM = 0.8
MAX_EM = 10.0

_BASE = """
.st-key-{box} [data-testid="stTable"] table, .st-key-{box} [data-testid="stTable"] thead,
.st-key-{box} [data-testid="stTable"] tbody {{ display: block; width: 100%; }}
.st-key-{box} [data-testid="stTable"] tr {{ display: flex; flex-wrap: wrap;
  border-bottom: 1px solid rgba(49, 51, 63, 0.2); }}
.st-key-{box} [data-testid="stTable"] td, .st-key-{box} [data-testid="stTable"] th {{
  border: none !important; min-width: 0; overflow-wrap: anywhere;
  padding: 0.25em 0.4em; box-sizing: border-box; }}
"""


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _width(column: str, rows: Sequence[dict]) -> float:
    longest = max([len(column), *(len(str(r.get(column) or "")) for r in rows)])
    return round(min(MAX_EM, longest * EM_PER_CHAR + PADDING_EM), 2)


def flow_css(box: str, rows: Sequence[dict], lead: Sequence[str], wordy: str | None) -> str:
    """The style sheet that lays the table in the container keyed ``box`` out as
    flowing rows; ``rows`` as they are shown (the widths come from their texts)."""
    columns = list(rows[0]) if rows else []
    rules = [_BASE.format(box=box)]
    cell = f'.st-key-{box} [data-testid="stTable"]'
    for n, column in enumerate(columns, start=1):
        both = f"{cell} td:nth-child({n}), {cell} th:nth-child({n})"
        if column in lead:
            rules.append(
                f"{both} {{ order: {lead.index(column)}; flex: 1 1 {_width(column, rows)}em; }}"
            )
        elif column == wordy:
            rules.append(f"{both} {{ order: 50; flex: 1 0 100%; }}")
            rules.append(f"{cell} th:nth-child({n}) {{ display: none; }}")
        else:
            rules.append(
                f"{both} {{ order: 100; flex: 0 1 auto; max-width: 100%; font-size: 0.85em; }}"
            )
            rules.append(f"{cell} th:nth-child({n}) {{ display: none; }}")
            rules.append(
                f"{cell} td:nth-child({n}) p::before {{ content: {_quoted(column + ': ')}; "
                "font-weight: 600; }"
            )
            rules.append(f"{cell} td:nth-child({n}):has(p:empty) {{ display: none; }}")
    return "<style>" + "\n".join(rules) + "</style>"
