"""Reducers shared by the hosted systems' states."""

from __future__ import annotations

RESET = "__reset__"  # a key that makes merge_dicts start the map afresh (a new turn)


def merge_dicts(left: dict | None, right: dict | None) -> dict:
    """Reducer for keyed maps (per step, per turn, per agent): an update changes the keys
    it names and keeps the rest. An update carrying ``RESET`` replaces the map (a new
    turn starts its steps at 1)."""
    if right and right.get(RESET):
        return {k: v for k, v in right.items() if k != RESET}
    merged = dict(left or {})
    merged.update(right or {})
    return merged
