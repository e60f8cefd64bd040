"""The engine bench's fairness check (issue 33.1): both sides' checkpointer settings are
read back from their live SQLite connections, and unequal settings refuse the ratio.
Real SQLite files, the real peer checkpointer and Stepwise's own."""

from __future__ import annotations

import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from bench.fairness import UnequalSettings, checkpointer_settings, require_same, spread
from bench.langgraph_peer import peer_checkpointer
from graph.kernel.checkpoints import open_checkpointer


def test_the_peer_and_stepwise_run_with_the_same_settings(tmp_path):
    ours = checkpointer_settings(open_checkpointer(tmp_path / "ours.sqlite"))
    peer = checkpointer_settings(peer_checkpointer(tmp_path / "peer.sqlite"))
    assert ours["journal_mode"] == "WAL" and ours["synchronous"] == "NORMAL"
    require_same({"stepwise": ours, "peer": peer})  # raises if they differ
    assert peer["serializer class"] == "JsonPlusSerializer"
    assert ours["serializer class"] == "BlobSerializer"


def test_a_peer_left_at_sqlites_default_sync_is_refused(tmp_path):
    conn = sqlite3.connect(tmp_path / "default.sqlite", check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")  # synchronous left at SQLite's FULL
    default = checkpointer_settings(SqliteSaver(conn))
    ours = checkpointer_settings(open_checkpointer(tmp_path / "ours.sqlite"))
    with pytest.raises(UnequalSettings, match="synchronous: stepwise='NORMAL' but peer='FULL'"):
        require_same({"stepwise": ours, "peer": default})


def test_spread_gives_the_median_quartiles_and_extremes():
    assert spread([5.0, 1.0, 3.0, 2.0, 4.0]) == {
        "median": 3.0,
        "q1": 2.0,
        "q3": 4.0,
        "min": 1.0,
        "max": 5.0,
    }
