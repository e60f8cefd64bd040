"""The saved designs and the prompt versions: what a run is built from."""

from __future__ import annotations

import time
from typing import Any

from pydantic import ValidationError

from graph.kernel.design import Design
from graph.prompts import PromptError, is_known, prompt_spec, template_errors
from graph.service.database import Database
from graph.service.repositories.shared import PromptVersion


class Designs:
    """The designs saved by name, the prompt versions, and which version each prompt runs."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def save(self, design: Design, name: str = "current") -> None:
        self.db.execute(
            "INSERT INTO designs (name, design_json, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET design_json = excluded.design_json, "
            "updated_at = excluded.updated_at",
            (name, design.model_dump_json(), time.time()),
        )

    def load(self, name: str = "current") -> Design | None:
        """The saved design, or None when there is none or it no longer validates (an agent
        was removed from the catalog, say): the page then starts from the default."""
        rows = self.db.query("SELECT design_json FROM designs WHERE name = ?", (name,))
        if not rows:
            return None
        try:
            return Design.model_validate_json(rows[0]["design_json"])
        except (ValidationError, ValueError):
            return None

    # -- prompt versions

    @staticmethod
    def _prompt_version(row: Any) -> PromptVersion:  # a database row
        return PromptVersion(
            row["id"], row["prompt_name"], row["label"], row["text"], row["created_at"]
        )

    def save_prompt_version(self, prompt_name: str, label: str, text: str) -> PromptVersion:
        """Store a new version; an invalid template is refused here, so it can never
        become active and break a run."""
        if errors := template_errors(prompt_name, text):
            raise PromptError(" ".join(errors))
        with self.db.transaction() as tx:
            if not label.strip():
                count = tx.execute(
                    "SELECT COUNT(*) FROM prompt_versions WHERE prompt_name = ?", (prompt_name,)
                ).fetchone()[0]
                label = f"v{count + 1}"
            version_id = tx.insert_id(
                "INSERT INTO prompt_versions (prompt_name, label, text, created_at) "
                "VALUES (?, ?, ?, ?)",
                (prompt_name, label.strip(), text, time.time()),
            )
        found = self.prompt_version(version_id)
        assert found is not None  # written above
        return found

    def prompt_versions(self, prompt_name: str) -> list[PromptVersion]:
        rows = self.db.query(
            "SELECT * FROM prompt_versions WHERE prompt_name = ? ORDER BY id DESC", (prompt_name,)
        )
        return [self._prompt_version(r) for r in rows]

    def prompt_version(self, version_id: int) -> PromptVersion | None:
        rows = self.db.query("SELECT * FROM prompt_versions WHERE id = ?", (version_id,))
        return self._prompt_version(rows[0]) if rows else None

    def set_active_prompt(self, prompt_name: str, version_id: int | None) -> None:
        """Make a version the one runs use; None goes back to the shipped default."""
        prompt_spec(prompt_name)  # PromptError for a name no system declares
        if version_id is None:
            self.db.execute("DELETE FROM active_prompts WHERE prompt_name = ?", (prompt_name,))
            return
        version = self.prompt_version(version_id)
        if version is None:
            raise ValueError(f"No prompt version {version_id}.")
        if version.prompt_name != prompt_name:
            raise ValueError(
                f"Version {version_id} belongs to {version.prompt_name!r}, not {prompt_name!r}."
            )
        self.db.execute(
            "INSERT INTO active_prompts (prompt_name, version_id) VALUES (?, ?) "
            "ON CONFLICT(prompt_name) DO UPDATE SET version_id = excluded.version_id",
            (prompt_name, version_id),
        )

    def active_prompts(self) -> dict[str, PromptVersion]:
        rows = self.db.query(
            "SELECT v.* FROM active_prompts a JOIN prompt_versions v "
            "ON v.id = a.version_id ORDER BY a.prompt_name"
        )
        return {r["prompt_name"]: self._prompt_version(r) for r in rows}

    def active_prompt_texts(self) -> dict[str, str]:
        """What goes into ``Design.prompts`` for a run; prompts no system declares any more
        are left out so they cannot block every run (a user agent's, ``user_agents/<name>``,
        is known as long as its family is registered)."""
        return {name: v.text for name, v in self.active_prompts().items() if is_known(name)}
