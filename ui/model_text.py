"""Markdown a model wrote, shown inside a page: its headings demoted below the page's own.

A writer's draft that starts with ``# Title`` would otherwise render larger than the
page's headings and read as part of the app. Headings inside code fences are left alone.
"""

from __future__ import annotations

import re

import streamlit as st

TOP_LEVEL = 4  # a model's "#" becomes "####": smaller than every heading of a page
_ATX = re.compile(r"^( {0,3})(#{1,6})(?=\s|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def demote_headings(text: str) -> str:
    """``#``..``######`` become ``####``..``######`` (never deeper than 6); underlined
    (setext) headings become ``####`` too."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _ATX.match(line)):
            level = min(len(m.group(2)) + TOP_LEVEL - 1, 6)
            line = m.group(1) + "#" * level + line[m.end() :]
        elif not fenced and _SETEXT.match(line) and out and out[-1].strip():
            previous = out[-1]
            if not _ATX.match(previous) and not previous.lstrip().startswith(("-", "*", ">")):
                out[-1] = "#" * TOP_LEVEL + " " + previous.strip()
                continue
        out.append(line)
    return "\n".join(out)


def model_markdown(text: str) -> None:
    """Show a model's Markdown at the right size inside the page."""
    st.markdown(demote_headings(text))
