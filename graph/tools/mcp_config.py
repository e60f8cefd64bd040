"""What an MCP tool server is, as Stepwise keeps it: a name and either a program started over
stdio (command, arguments, environment) or a streamable HTTP URL.

Environment values are never written anywhere. A value that is only a reference to one of
the app's own environment variables (``${MY_TOKEN}``) is kept as that reference, which
names a variable and holds no secret; any other value (a token typed in the browser, say)
is treated as a secret: it is kept in this process's memory only (gone when the app
restarts, like a model profile's typed key), remembered by ``graph.redaction`` so no text
Stepwise stores or shows can carry it, and stored as its name alone.

An HTTP URL is checked as the teams' allowlist checks its calls: http or https, a host, no
user name or password before the host, no spaces, control or non-ASCII characters; the
HTTP client then refuses any request (a redirect) that leaves the URL's scheme, host and
port.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from graph.errors import StepwiseError
from graph.redaction import REDACTED, remember_secrets

TRANSPORTS = ("stdio", "streamable_http")
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_USER_PART = re.compile(r"//[^/?#]*@")
REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}$")


class McpConfigError(StepwiseError, ValueError):
    """A server configuration that cannot be used; the message says why."""


class McpServerConfig(BaseModel):
    """One MCP server. ``env`` maps a variable to its value as typed (in memory) or to a
    ``${VAR}`` reference; ``stored_env`` is what may be written down."""

    model_config = ConfigDict(frozen=True)

    name: str
    transport: Literal["stdio", "streamable_http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    url: str = ""
    # From an imported file, its command not yet confirmed by an admin: never started
    pending: bool = False

    def stored_env(self) -> dict[str, str | None]:
        """The environment as the store keeps it: references as they are, any other
        value as None (its value lives in memory only)."""
        return {k: (v if REFERENCE.match(v) else None) for k, v in self.env.items()}

    def described(self) -> str:
        """The server in one line, as a person checks it (never an environment value)."""
        if self.transport == "streamable_http":
            return self.url
        names = f" (environment: {', '.join(sorted(self.env))})" if self.env else ""
        return " ".join([self.command, *self.args]) + names


def make_config(
    name: str,
    transport: str,
    command: str = "",
    args: list[str] | tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    url: str = "",
) -> McpServerConfig:
    """A checked configuration; ``McpConfigError`` says what is wrong. Typed environment
    values are remembered as secrets (and for this server, in memory) before anything
    else can see them; they are kept for the server once it is stored (``keep_typed_env``)."""
    name = (name or "").strip()
    if not NAME.match(name):
        raise McpConfigError(
            "Give the server a name of letters, digits, - and _ (starting with a letter, "
            "at most 64), e.g. time or my-tools."
        )
    if transport not in TRANSPORTS:
        raise McpConfigError(f"The transport is one of: {', '.join(TRANSPORTS)}.")
    env = {str(k).strip(): str(v) for k, v in (env or {}).items()}
    if transport == "streamable_http":
        if command.strip() or args or env:
            raise McpConfigError(
                "An HTTP server takes a URL only: a command, arguments and environment are "
                "for a stdio server."
            )
        return McpServerConfig(name=name, transport="streamable_http", url=check_url(url))
    command = (command or "").strip()
    if not command:
        raise McpConfigError("Give the command that starts the server, e.g. uvx or python.")
    for key in env:
        if not ENV_NAME.match(key):
            raise McpConfigError(
                f"The environment variable name {key!r} is not valid: letters, digits and _, "
                "not starting with a digit."
            )
    remember_secrets(v for v in env.values() if not REFERENCE.match(v))
    return McpServerConfig(name=name, transport="stdio", command=command, args=tuple(args), env=env)


def check_url(url: str) -> str:
    """``url`` when it may be used for an MCP server, else ``McpConfigError`` saying why."""
    url = (url or "").strip()
    if not url:
        raise McpConfigError("Give the server's URL, e.g. http://127.0.0.1:8000/mcp.")
    # a user part (perhaps a token) is never shown back
    shown = _USER_PART.sub(f"//{REDACTED}@", url).encode("unicode_escape").decode("ascii")[:200]
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url) or "\\" in url:
        raise McpConfigError(
            f"Refused: the URL {shown} contains a space, a control character or a backslash."
        )
    if not url.isascii():
        raise McpConfigError(
            f"Refused: the URL {shown} contains characters outside ASCII (write them "
            "percent-encoded)."
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (an invalid port raises here)
    except ValueError:
        raise McpConfigError(
            f"Refused: the URL {shown} is not valid (its host or port cannot be read)."
        ) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise McpConfigError(f"Refused: the URL {shown} is not an http or https URL with a host.")
    if "@" in parts.netloc:
        raise McpConfigError(
            f"Refused: the URL {shown} carries a user name or password before the host; "
            "MCP server URLs may not (a secret there would be stored and shown)."
        )
    if parts.fragment:
        raise McpConfigError(f"Refused: the URL {shown} has a #fragment; remove it.")
    return url


def origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme.lower(), 0)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port or default


class OffHostRequest(StepwiseError, RuntimeError):
    """A request (a redirect) that would leave the server's scheme, host and port."""


def http_client_factory(url: str) -> Callable[..., httpx.AsyncClient]:
    """An ``httpx.AsyncClient`` factory for ``langchain-mcp-adapters`` whose client refuses
    every request off ``url``'s origin, redirects included."""
    allowed = origin(url)

    async def on_request(request: httpx.Request) -> None:
        if origin(str(request.url)) != allowed:
            raise OffHostRequest(
                f"Refused: the MCP server at {url} redirected to {request.url.host}, off its "
                "host; only the server's own host is called."
            )

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            headers=headers,
            timeout=timeout if timeout is not None else httpx.Timeout(30),
            auth=auth,
            follow_redirects=False,  # the MCP transports follow same-origin ones
            event_hooks={"request": [on_request]},
        )

    return factory


# ---------------------------------------------------------------- typed values, in memory

_lock = threading.Lock()
_typed: dict[str, dict[str, SecretStr]] = {}


def keep_typed_env(config: McpServerConfig) -> None:
    """Keep ``config``'s typed environment values for its server, in memory only."""
    typed = {k: SecretStr(v) for k, v in config.env.items() if not REFERENCE.match(v)}
    with _lock:
        _typed[config.name] = typed


def type_env_again(server: str, values: dict[str, str]) -> None:
    """Keep typed values again for ``server`` (after a restart), beside any still kept."""
    values = {k: v for k, v in values.items() if v.strip()}
    remember_secrets(values.values())
    with _lock:
        _typed.setdefault(server, {}).update({k: SecretStr(v) for k, v in values.items()})


def forget_typed_env(server: str) -> None:
    with _lock:
        _typed.pop(server, None)


def with_typed_env(config: McpServerConfig, stored: dict[str, str | None]) -> McpServerConfig:
    """``config`` with its environment filled from ``stored`` (names and references) and
    the values typed in this process; a typed value no longer here stays missing
    (``missing_env`` names it)."""
    with _lock:
        typed = dict(_typed.get(config.name, {}))
    env = {
        k: (v if v is not None else typed[k].get_secret_value())
        for k, v in stored.items()
        if v is not None or k in typed
    }
    return config.model_copy(update={"env": env})


def missing_env(
    config: McpServerConfig, stored: dict[str, str | None]
) -> list[tuple[str, str | None]]:
    """The variables that cannot be given to the server now, each with the app's
    variable its ``${VAR}`` reference names when that one is not set, or None when it
    was a typed value, gone since the app restarted (the page words them)."""
    missing: list[tuple[str, str | None]] = []
    for key, value in stored.items():
        if value is None and key not in config.env:
            missing.append((key, None))
        elif value is not None and (m := REFERENCE.match(value)) and not os.environ.get(m[1]):
            missing.append((key, m[1]))
    return missing


class PendingServer(McpConfigError):
    """A server from an imported file that nobody has confirmed: it is not started."""


def connection(config: McpServerConfig, timeout_s: float) -> dict[str, Any]:
    """The ``langchain-mcp-adapters`` connection of ``config``; ``PendingServer`` for one
    an import brought and nobody confirmed (nothing is started or called for it)."""
    if config.pending:
        raise PendingServer(
            f"The MCP server “{config.name}” came from an imported file and is not confirmed: "
            f"its command ({config.described()}) runs only once an admin confirms it on the "
            "Tools page."
        )
    if config.transport == "streamable_http":
        check_url(config.url)
        return {
            "transport": "streamable_http",
            "url": config.url,
            "timeout": timeout_s,
            "sse_read_timeout": timeout_s,
            "httpx_client_factory": http_client_factory(config.url),
        }
    remember_secrets(os.environ.get(m[1]) for v in config.env.values() if (m := REFERENCE.match(v)))
    return {
        "transport": "stdio",
        "command": config.command,
        "args": list(config.args),
        "env": dict(config.env) or None,
    }
