"""A small model's slip in a name, repaired in code when its intent is unambiguous.

Under a json_schema the enum of allowed names prevents it; a server that takes no schema
lets a small model write ``Web_Researcher`` or ``search team ``. Failing a run, or
spending a repair round, on a name that can mean only one enabled agent helps nobody; the
notice keeps the repair visible. A name that matches none, or several, is left as it is
for the caller's check to refuse in words.
"""

from __future__ import annotations

import re
from typing import Sequence

_SEPARATORS = re.compile(r"[\s_-]+")


def _key(name: str) -> str:
    return _SEPARATORS.sub("_", name.strip()).casefold()


def match_name(name: str, allowed: Sequence[str]) -> str | None:
    """The one name of ``allowed`` that ``name`` differs from only in case, surrounding
    spaces or word separators (space, ``-``, ``_``); None when there is none or several."""
    if name in allowed:
        return name
    found = {a for a in allowed if _key(a) == _key(name)}
    return found.pop() if len(found) == 1 else None


def repair_name(name: str, allowed: Sequence[str], where: str) -> tuple[str, list[str]]:
    """``name`` read as the allowed name it unambiguously means, with a notice starting
    with ``where`` ("The Planner's step 2 named agent"); else unchanged, no notice."""
    match = match_name(name, allowed)
    if match is None or match == name:
        return name, []
    return match, [f"{where} {name!r}: read as {match}."]
