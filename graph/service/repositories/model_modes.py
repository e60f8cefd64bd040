"""What each model server was found to accept, kept across restarts."""

from __future__ import annotations

import json
import time

from graph.service.database import Database
from graph.service.repositories.shared import dumps


class ModelModes:
    """The ``model_modes`` table (``graph.models.modes.ModeBook`` is its reader)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def load(self) -> dict[tuple[str, str], dict]:
        """What each model server was found to accept (``graph.models.modes.ModeBook``
        reads it at start, so a restart does not learn it again)."""
        return {
            (r["server"], r["model"]): json.loads(r["modes_json"])
            for r in self.db.query("SELECT * FROM model_modes")
        }

    def save(self, server: str, model: str, modes: dict) -> None:
        """Remember (or, with an empty ``modes``, forget) what a server/model accepts."""
        if not modes:
            self.db.execute(
                "DELETE FROM model_modes WHERE server = ? AND model = ?", (server, model)
            )
            return
        self.db.execute(
            "INSERT INTO model_modes (server, model, modes_json, updated_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(server, model) DO UPDATE SET "
            "modes_json = excluded.modes_json, updated_at = excluded.updated_at",
            (server, model, dumps(modes), time.time()),
        )
