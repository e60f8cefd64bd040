"""A team's inner steps as the Run page shows them (``team_step``), and the words that
mark a worker's report as unusable (``USELESS``): shared by a team's supervisor, its
workers and its HTTP gate."""

from __future__ import annotations

import time
from typing import Any

USELESS = "No usable results"


def team_step(state: dict, node: str, kind: str, text: str, **extra: Any) -> dict:
    """One inner step of a team, for the Run page."""
    return {
        "subtask_id": state.get("current_subtask_id"),
        "team": state.get("current_team"),
        "node": node,
        "kind": kind,
        "text": text,
        "at": time.time(),
        **extra,
    }
