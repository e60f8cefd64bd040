"""The MCP tool servers the Tools page connected, and each of their tools' policy.

What is stored of a server's environment: each variable's name, with its ``${VAR}``
reference when it is one, else null. A typed value never reaches this table (nor a log or
an export): it lives in the app's memory (``graph.tools.mcp_config``) and must be typed
again after a restart, which ``missing`` says.
"""

from __future__ import annotations

import json
import time
from typing import Any

from graph.service.database import Database
from graph.service.repositories.shared import dumps
from graph.tools.mcp_config import (
    REFERENCE,
    McpConfigError,
    McpServerConfig,
    forget_typed_env,
    keep_typed_env,
    make_config,
    missing_env,
    type_env_again,
    with_typed_env,
)
from graph.tools.mcp_servers import McpToolInfo


class McpServers:
    """The ``mcp_servers`` and ``mcp_tool_policies`` tables."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def add(
        self, config: McpServerConfig, added_by: str = "", untyped: tuple[str, ...] = ()
    ) -> None:
        """Store a new server (its typed environment values stay in memory; ``untyped``:
        variables whose values are to be typed on the Tools page). A ``pending`` config
        (from an imported file) is stored pending: nothing starts it until ``confirm``."""
        if self.get(config.name) is not None:
            raise McpConfigError(f"There is already an MCP server named “{config.name}”.")
        env = {**{name: None for name in untyped}, **config.stored_env()}
        self.db.execute(
            "INSERT INTO mcp_servers (name, transport, command, args_json, env_json, url, "
            "added_by, created_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                config.name,
                config.transport,
                config.command,
                dumps(list(config.args)),
                dumps(env),
                config.url,
                added_by,
                time.time(),
                "pending" if config.pending else "active",
            ),
        )
        keep_typed_env(config)

    def confirm(self, name: str) -> None:
        """An admin saw the command of a server an import brought and lets it run."""
        if self.get(name) is None:
            raise McpConfigError(f"There is no MCP server named “{name}”.")
        self.db.execute("UPDATE mcp_servers SET status = 'active' WHERE name = ?", (name,))

    def exported(self) -> list[dict]:
        """Every server as a file carries it: no typed value (null), references as they are."""
        return [
            {
                "name": r["name"],
                "transport": r["transport"],
                "command": r["command"],
                "args": json.loads(r["args_json"]),
                "env": json.loads(r["env_json"]),
                "url": r["url"],
            }
            for r in self.db.query("SELECT * FROM mcp_servers ORDER BY name")
        ]

    def take_imported(self, items: Any, added_by: str) -> list[str]:
        """The servers an imported file names, stored pending when they run a command
        (stdio: nothing is started until an admin confirms the command on the Tools page),
        an HTTP one only when its URL passes the same checks as one typed; a name already
        here keeps ours. Environment values other than ``${VAR}`` references are not taken
        from a file: they are to be typed. Sentences saying what became of each."""
        if not items:
            return []
        if not isinstance(items, list):
            return ["The file's mcp_servers is not a list: no MCP server was taken from it."]
        notes = []
        for item in items:
            try:
                notes.append(self._take_one(item, added_by))
            except McpConfigError as exc:
                name = item.get("name") if isinstance(item, dict) else None
                notes.append(f"The MCP server {name or '(unnamed)'!s} was not taken: {exc}")
        return notes

    def _take_one(self, item: Any, added_by: str) -> str:
        if not isinstance(item, dict):
            raise McpConfigError("it is not an object.")
        env = item.get("env") or {}
        if not isinstance(env, dict) or not isinstance(item.get("args") or [], list):
            raise McpConfigError("its env is not an object or its args not a list.")
        refs = {str(k): v for k, v in env.items() if isinstance(v, str) and REFERENCE.match(v)}
        transport = str(item.get("transport") or "")
        config = make_config(
            str(item.get("name") or ""),
            transport,
            command=str(item.get("command") or ""),
            args=[str(a) for a in item.get("args") or []],
            env=refs or None,
            url=str(item.get("url") or ""),
        )
        if (here := self.get(config.name)) is not None:
            same = here.model_copy(update={"pending": False, "env": {}}) == config.model_copy(
                update={"env": {}}
            )
            return f"The MCP server “{config.name}” is already here" + (
                "." if same else ", configured otherwise: ours was kept, the file's left out."
            )
        untyped = tuple(sorted(str(k) for k in env if str(k) not in refs))
        pending = transport == "stdio"
        self.add(config.model_copy(update={"pending": pending}), added_by, untyped)
        if pending:
            return (
                f"The MCP server “{config.name}” runs a command on this machine "
                f"({config.described()}): it was stored pending and is not started until an "
                "admin confirms it on the Tools page."
            )
        return f"The MCP server “{config.name}” ({config.url}) was added."

    def all(self) -> list[McpServerConfig]:
        """Every server by name, with the typed values this process still holds."""
        return [_config(r) for r in self.db.query("SELECT * FROM mcp_servers ORDER BY name")]

    def get(self, name: str) -> McpServerConfig | None:
        rows = self.db.query("SELECT * FROM mcp_servers WHERE name = ?", (name,))
        return _config(rows[0]) if rows else None

    def missing(self, name: str) -> list[tuple[str, str | None]]:
        """The server's environment variables that cannot be given to it now
        (``missing_env``: a typed value gone, or an unset variable its reference names)."""
        rows = self.db.query("SELECT * FROM mcp_servers WHERE name = ?", (name,))
        if not rows:
            return []
        return missing_env(_config(rows[0]), json.loads(rows[0]["env_json"]))

    def type_env(self, name: str, values: dict[str, str]) -> None:
        """Keep again, in memory, the typed values of ``name``'s environment (gone since
        the app restarted); a variable that is not a typed one of that server is refused."""
        rows = self.db.query("SELECT env_json FROM mcp_servers WHERE name = ?", (name,))
        if not rows:
            raise McpConfigError(f"There is no MCP server named “{name}”.")
        typed = {k for k, v in json.loads(rows[0]["env_json"]).items() if v is None}
        if unknown := sorted(set(values) - typed):
            raise McpConfigError(
                f"The MCP server “{name}” has no typed environment variable {', '.join(unknown)}."
            )
        if not any(v.strip() for v in values.values()):
            raise McpConfigError("Type at least one value.")
        type_env_again(name, values)

    def delete(self, name: str) -> None:
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM mcp_servers WHERE name = ?", (name,))
            tx.execute("DELETE FROM mcp_tool_policies WHERE server = ?", (name,))
        forget_typed_env(name)

    # ------------------------------------------------------------------ tools' policies

    def remember_tools(self, server: str, tools: list[McpToolInfo]) -> None:
        """Record each listed tool's default policy (from its annotations); a policy a
        person chose is kept, a default one follows the annotations as they are now."""
        now = time.time()
        with self.db.transaction() as tx:
            for tool in tools:
                tx.execute(
                    "INSERT INTO mcp_tool_policies (server, tool, policy, annotations_json, "
                    "updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(server, tool) DO UPDATE "
                    "SET annotations_json = excluded.annotations_json, "
                    "updated_at = excluded.updated_at, policy = CASE "
                    "WHEN mcp_tool_policies.chosen_by = '' THEN excluded.policy "
                    "ELSE mcp_tool_policies.policy END",
                    (server, tool.name, tool.policy, dumps(tool.annotations), now),
                )

    def set_policy(self, server: str, tool: str, policy: str, chosen_by: str) -> None:
        """A person's choice of ``tool``'s policy (``read_only`` or ``side_effecting``),
        kept over its annotations' default from now on."""
        if policy not in ("read_only", "side_effecting"):
            raise McpConfigError("A tool's policy is read_only or side_effecting.")
        if self.get(server) is None:
            raise McpConfigError(f"There is no MCP server named “{server}”.")
        self.db.execute(
            "INSERT INTO mcp_tool_policies (server, tool, policy, updated_at, chosen_by) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(server, tool) DO UPDATE SET "
            "policy = excluded.policy, updated_at = excluded.updated_at, "
            "chosen_by = excluded.chosen_by",
            (server, tool, policy, time.time(), chosen_by or "human"),
        )

    def chosen(self, server: str) -> dict[str, str]:
        """Each tool of ``server`` whose policy a person chose, and who."""
        rows = self.db.query(
            "SELECT tool, chosen_by FROM mcp_tool_policies WHERE server = ? AND chosen_by != ''",
            (server,),
        )
        return {r["tool"]: r["chosen_by"] for r in rows}

    def policies(self, server: str) -> dict[str, str]:
        """Each recorded tool of ``server`` and its policy."""
        rows = self.db.query(
            "SELECT tool, policy FROM mcp_tool_policies WHERE server = ? ORDER BY tool",
            (server,),
        )
        return {r["tool"]: r["policy"] for r in rows}


def _config(row: Any) -> McpServerConfig:  # a database row
    stored = json.loads(row["env_json"])
    config = McpServerConfig(
        name=row["name"],
        transport=row["transport"],
        command=row["command"],
        args=tuple(json.loads(row["args_json"])),
        url=row["url"],
        pending=row["status"] == "pending",
    )
    return with_typed_env(config, stored)
