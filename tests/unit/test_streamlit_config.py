"""The Streamlit settings the app ships with (``.streamlit/config.toml``), read as
Streamlit reads them: each one is there for a reason a test elsewhere cannot see."""

from __future__ import annotations

import tomllib
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"


def test_the_app_ships_offline_loopback_and_without_a_forced_collection_per_refresh():
    config = tomllib.loads(CONFIG.read_text())
    assert config["browser"]["gatherUsageStats"] is False  # no call off the machine
    assert config["server"]["address"] == "localhost"  # no login: this machine only
    # A full gc.collect after every script and fragment run kept the server busy ~45% of
    # the time while a run was live (the Run page refreshes twice a second).
    assert config["runner"]["postScriptGC"] is False
