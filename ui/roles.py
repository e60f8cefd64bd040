"""Who may do what once sign-in is on (issue 29): four roles, each with everything the one
before it may do, given by e-mail or by an OIDC group claim in a small TOML file.

Plain Python (no Streamlit) so the rules are read, and tested, in one place;
``ui/access.py`` asks them for the person signed in to this browser session.

The roles file (``STEPWISE_ROLES_FILE``, default ``.streamlit/roles.toml``)::

    group_claim = "groups"          # the ID-token claim listing a person's groups

    [emails]
    "ana@example.org" = "operator"

    [groups]
    "stepwise-admins" = "admin"

A person listed several ways gets the highest of their roles; anyone else who signs in
is a viewer. A file that cannot be read makes everybody a viewer, and says why.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from graph.errors import StepwiseError

log = logging.getLogger(__name__)

ROLES = ("viewer", "operator", "editor", "admin")

# What each guarded action needs, and how a refusal names it.
ACTIONS: dict[str, tuple[str, str]] = {
    "decide": ("operator", "deciding approvals"),
    "run": ("operator", "starting, stopping or resuming runs"),
    "design": ("editor", "changing the design"),
    "prompts": ("editor", "saving or activating prompts"),
    "eval_sets": ("editor", "changing eval sets"),
    "model_profiles": ("editor", "changing model profiles"),
    "settings": ("admin", "changing settings"),
    "mcp_http": ("editor", "connecting or removing MCP servers"),
    "mcp_stdio": ("admin", "adding a stdio MCP server (a program run on the app's machine)"),
}


class Refused(StepwiseError, ValueError):
    """The person's role does not allow the action; the message says which role does. A
    ValueError, so each action's way of saying a refusal in words shows it too."""


@dataclass(frozen=True)
class RoleTable:
    emails: dict[str, str] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    group_claim: str = "groups"
    problem: str = ""  # why the file could not be used, in words; "" when it could


def _checked(section: object, name: str, path: Path) -> dict[str, str]:
    if not isinstance(section, dict):
        raise ValueError(f"[{name}] must be a table of names to roles")
    table = {}
    for key, role in section.items():
        if role not in ROLES:
            raise ValueError(
                f"{key!r} in [{name}] has the role {role!r}; the roles are {', '.join(ROLES)}"
            )
        table[str(key).strip().lower() if name == "emails" else str(key)] = role
    return table


def read_roles(path: Path) -> RoleTable:
    """The roles file at ``path``; no file gives no roles (everybody a viewer)."""
    if not path.exists():
        return RoleTable()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        claim = raw.get("group_claim", "groups")
        if not isinstance(claim, str) or not claim:
            raise ValueError("group_claim must be the name of a claim")
        return RoleTable(
            emails=_checked(raw.get("emails", {}), "emails", path),
            groups=_checked(raw.get("groups", {}), "groups", path),
            group_claim=claim,
        )
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as exc:
        log.error("the roles file %s cannot be used: %s", path, exc)
        return RoleTable(
            problem=f"The roles file {path} cannot be used ({exc}): everybody is a viewer."
        )


def role_for(email: str, claims: dict, table: RoleTable) -> str:
    """The highest role ``table`` gives this e-mail or any of the person's groups."""
    found = ["viewer"]
    if role := table.emails.get(email.strip().lower()):
        found.append(role)
    groups = claims.get(table.group_claim) or []
    for group in [groups] if isinstance(groups, str) else groups:
        if role := table.groups.get(str(group)):
            found.append(role)
    return max(found, key=ROLES.index)


def allows(role: str, action: str) -> bool:
    needed, _ = ACTIONS[action]
    return role in ROLES and ROLES.index(role) >= ROLES.index(needed)


def check(who: str, role: str, action: str) -> None:
    """Raise ``Refused`` with a sentence when ``role`` may not do ``action``."""
    if allows(role, action):
        return
    needed, words = ACTIONS[action]
    raise Refused(
        f"{who} is signed in as a {role}: {words} needs the {needed} role. "
        "An admin gives roles in the roles file."
    )
