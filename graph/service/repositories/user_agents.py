"""The agents defined on the Design page (``graph.agents.user_agents.UserAgent``), by name.

A design carries copies of the definitions it uses (so it travels whole); this table is the
library the Design page offers and edits. ``graph.service.user_agent_designs`` brings a
design up to date with it.
"""

from __future__ import annotations

import logging
import time

from pydantic import ValidationError

from graph.agents.user_agents import UserAgent, name_problem
from graph.errors import StepwiseError
from graph.kernel.design import reserved_names
from graph.service.database import Database

log = logging.getLogger(__name__)


class UserAgentError(StepwiseError, ValueError):
    """A definition that cannot be stored; the message says why."""


class UserAgents:
    """The ``user_agents`` table."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, agent: UserAgent, by: str = "") -> None:
        """Store a new agent; its name must be free and not a built-in agent's."""
        if problem := name_problem(agent.name, self.names(), reserved_names()):
            raise UserAgentError(problem)
        self._write(agent, by)

    def update(self, agent: UserAgent, by: str = "") -> None:
        if self.get(agent.name) is None:
            raise UserAgentError(f"There is no agent named “{agent.name}” to edit.")
        self._write(agent, by)

    def _write(self, agent: UserAgent, by: str) -> None:
        self.db.execute(
            "INSERT INTO user_agents (name, definition_json, updated_by, updated_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
            "definition_json = excluded.definition_json, updated_by = excluded.updated_by, "
            "updated_at = excluded.updated_at",
            (agent.name, agent.model_dump_json(), by, time.time()),
        )

    def delete(self, name: str) -> None:
        self.db.execute("DELETE FROM user_agents WHERE name = ?", (name,))

    def names(self) -> list[str]:
        return [r["name"] for r in self.db.query("SELECT name FROM user_agents ORDER BY name")]

    def all(self) -> list[UserAgent]:
        """Every stored agent by name; one that no longer validates is logged and left out."""
        found = []
        for row in self.db.query("SELECT name, definition_json FROM user_agents ORDER BY name"):
            try:
                found.append(UserAgent.model_validate_json(row["definition_json"]))
            except ValidationError as exc:
                log.warning("stored user agent %s no longer validates: %s", row["name"], exc)
        return found

    def get(self, name: str) -> UserAgent | None:
        return next((a for a in self.all() if a.name == name), None)
