"""What the pages show of a run, as plain data a system's view fills and the page widgets
draw: a panel (a table or a list of folded items), an approval card's words, a plan a
fork edits as a table, a lesson's two sides, and the facts of a run the store knows
beyond its state. No Streamlit here: the views are tested without a page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Panel:
    """One part of the Run page for a run of this system: a table, or a list of
    collapsible items (each a few lines and a table), under a title."""

    key: str
    title: str
    rows: list[dict] = field(default_factory=list)
    caption: str = ""
    empty: str = ""  # what is said when there are no rows (and no items)
    status_column: str | None = None  # a column whose words are coloured by status
    items: list[dict] = field(default_factory=list)  # {label, text, rows, messages, open}
    # The columns a class must always see on a row's first line, in a narrow column; the
    # wordiest column goes on a line of its own below, the others after it (empty: a
    # plain table).
    lead_columns: tuple[str, ...] = ()


@dataclass
class ApprovalView:
    """How an approval card shows one question a run asks a person."""

    heading: str  # markdown: what waits, and for what
    note: str = ""  # a line on what the buttons do here
    code: str = ""  # the exact thing to be done (an HTTP call, say), shown as code
    help: dict[str, str] = field(default_factory=dict)  # decision -> what it does
    # The reason box's hint and the query box's label, in this kind of question's words.
    placeholder: str = "e.g. why not, and what to do instead"
    query_label: str = "Query the agent will get (edit it, then Approve edited query)"


@dataclass
class ForkTable:
    """A state field a fork edits as a table: its columns, its rows at the checkpoint, the
    values a column may take, the columns nobody types in (ids given in code), and a
    line on what the edit does."""

    columns: list[str]
    rows: list[dict]
    choices: dict[str, list[str]] = field(default_factory=dict)
    locked: tuple[str, ...] = ()
    note: str = ""


@dataclass
class Block:
    """A piece of a lesson's side: ``markdown``, ``table`` (rows), or a verdict shown as
    ``error``, ``success`` or ``warning``."""

    kind: str
    content: Any


@dataclass
class Lesson:
    """A teaching scenario a system offers (the Run page shows it): the same task done two
    ways, side by side, and what it teaches."""

    title: str
    caption: str
    intro: str  # markdown above the two sides
    sides: list[tuple[str, list[Block]]]  # (heading, blocks)
    takeaways: list[str]


@dataclass
class RunFacts:
    """What the store knows of a run beyond its state, for a system's panels: per step,
    the human decisions, the time and the model use (as table cells), the guardrail's
    marks, and the run's update events."""

    live: bool = False
    cells: dict[int, dict[str, str]] = field(default_factory=dict)  # step -> cells
    blank: dict[str, str] = field(default_factory=dict)  # the cells of a step with none yet
    flags: dict[int, str] | None = None  # step -> guardrail mark; None: no guardrail column
    updates: list[dict] = field(default_factory=list)  # stored "update" events, in order
    paused_next: str = ""  # paused in step mode: the node that runs next

    def step_cells(self, step: int) -> dict[str, str]:
        """A copy of the step's cells (a system may reorder them)."""
        return dict(self.cells.get(step) or self.blank)

    def marks(self, step: int) -> dict[str, str]:
        """The guardrail column of a step's row, when the run has one."""
        return {} if self.flags is None else {"Guardrail": self.flags.get(step, "")}


def cell(text: object) -> str:
    """Text for one table cell, on one line and inert: the pages draw tables as Markdown,
    and a model's text may start with a heading or hold a pipe."""
    flat = re.sub(r"([\\`*_\[\]#<>|~$])", r"\\\1", " ".join(str(text).split()))
    return "\\" + flat if flat[:1] in ("-", "+") else flat
