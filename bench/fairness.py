"""What keeps a bench honest: the settings both sides run with, read back from their live
connections and checked equal; the machine's load; medians with their spread.

A bench that compares two checkpointers prints ``checkpointer_settings`` of each side and
calls ``require_same`` before it prints a ratio: a peer left at SQLite's default
``synchronous=FULL`` (a disk sync per commit) against a side at ``NORMAL`` measures the
disk, not the engine.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
from collections.abc import Sequence
from typing import Any

SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


class UnequalSettings(ValueError):
    """The sides of a comparison do not run with the same checkpointer settings."""


def sqlite_settings(conn: sqlite3.Connection) -> dict[str, str]:
    """``journal_mode`` and ``synchronous`` as the live connection reports them."""
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    return {"journal_mode": str(journal).upper(), "synchronous": SYNCHRONOUS.get(sync, str(sync))}


def serializer_format(serde: Any) -> str:
    """The serialization format a serializer writes: the LangGraph serializer class it is
    or derives from. Stepwise's ``BlobSerializer`` is a ``JsonPlusSerializer`` that also
    stores long texts once (part of what its checkpointer costs, so the peer does not get
    it); the bytes it writes are the same msgpack format."""
    for cls in type(serde).__mro__:
        if cls.__module__.startswith("langgraph."):
            fallback = getattr(serde, "pickle_fallback", False)
            return f"{cls.__name__}(pickle_fallback={fallback})"
    return type(serde).__name__


def checkpointer_settings(saver: Any) -> dict[str, str]:
    """A SQLite checkpointer's settings: journal mode and synchronous from its live
    connection, its serializer's format, and (printed, not compared) its exact class."""
    return {
        **sqlite_settings(saver.conn),
        "serializer": serializer_format(saver.serde),
        "serializer class": type(saver.serde).__qualname__,
    }


COMPARED = ("journal_mode", "synchronous", "serializer")


def require_same(sides: dict[str, dict[str, str]]) -> None:
    """Raise ``UnequalSettings`` naming each difference unless every side has the same
    journal mode, synchronous and serializer format."""
    names = list(sides)
    first = sides[names[0]]
    problems = [
        f"{key}: {names[0]}={first.get(key)!r} but {name}={sides[name].get(key)!r}"
        for name in names[1:]
        for key in COMPARED
        if sides[name].get(key) != first.get(key)
    ]
    if problems:
        raise UnequalSettings(
            "The sides do not run with the same checkpointer settings; no ratio printed: "
            + "; ".join(problems)
        )


def print_settings(sides: dict[str, dict[str, str]]) -> None:
    for name, settings in sides.items():
        print(f"  {name:24s} " + ", ".join(f"{k}={v}" for k, v in settings.items()))


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1/5/15 min, {os.cpu_count()} cores)"


def spread(values: Sequence[float]) -> dict[str, float]:
    """The median, the interquartile range and the extremes of ``values``."""
    ordered = sorted(values)
    q1, q3 = ordered[0], ordered[-1]
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return {
        "median": statistics.median(ordered),
        "q1": q1,
        "q3": q3,
        "min": ordered[0],
        "max": ordered[-1],
    }


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


__all__ = [
    "UnequalSettings",
    "checkpointer_settings",
    "load",
    "percentile",
    "print_settings",
    "require_same",
    "spread",
    "sqlite_settings",
]
