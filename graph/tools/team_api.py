"""request_team's HTTP calls: real requests, only to one allowlisted API base URL.

The base is ``STEPWISE_TEAMS_API_BASE``, or the demo API Stepwise serves on loopback
when that is empty. A URL outside it (another host, port, scheme, or a path outside the
base path) is refused before anything is sent, with a message that says why; so is
any URL the HTTP client might read differently than the check (userinfo, encoded dots or
slashes, spaces and control characters), and the URL sent is rebuilt from the checked
parts, never the raw text. The calls have side effects, so the team asks a human before
each one (see ``graph/hierarchical_teams/http_gate.py``); this module only checks and sends.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPMessage
from typing import IO
from urllib.parse import SplitResult, urlsplit, urlunsplit

from graph.errors import StepwiseError
from graph.settings import Settings

METHODS = ("GET", "POST")


class RefusedCall(StepwiseError, ValueError):
    """A call the allowlist does not permit; the message says why."""


@dataclass(frozen=True)
class ApiCall:
    method: str
    url: str
    body: dict | None = None

    def describe(self) -> str:
        """The exact call, as a human approves it."""
        text = f"{self.method} {self.url}"
        if self.body is not None:
            text += " " + json.dumps(self.body, ensure_ascii=False)
        return text

    def as_dict(self) -> dict:
        return {"method": self.method, "url": self.url, "body": self.body}


def api_base(settings: Settings) -> str:
    """The allowlisted base URL (the demo API, started on first use, when unset)."""
    if settings.teams_api_base.strip():
        return settings.teams_api_base.strip().rstrip("/")
    from graph.tools.demo_api import demo_api

    return demo_api().base_url


_ENCODED = re.compile(r"%(2e|2f|5c|[01][0-9a-f]|7f)", re.IGNORECASE)


def _shown(url: str) -> str:
    """A URL as a message can show it: control characters escaped, long ones cut."""
    text = url.encode("unicode_escape").decode("ascii")
    return text if len(text) <= 200 else text[:200] + "…"


def _refuse(url: str, why: str, base: str) -> RefusedCall:
    return RefusedCall(
        f"Refused: the URL {_shown(url)} {why}; request_team may only call plain URLs under "
        f"the allowlisted API base {base} (set STEPWISE_TEAMS_API_BASE to change it)."
    )


def _origin(parts: SplitResult) -> tuple[str, str, int]:
    """Scheme, host and port, with the scheme's default port filled in."""
    default = {"http": 80, "https": 443}.get(parts.scheme.lower(), 0)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port or default


def check_allowed(call: ApiCall, base: str) -> str:
    """The URL to send for ``call``, built from checked parts: the base's scheme, host
    and port, and the call's path (under the base's path) and query. Raise
    ``RefusedCall``, saying why, for an unknown method, a URL outside the base, or one
    whose text a server or the HTTP client could read differently than this check does
    (a user name before the host, percent-encoded dots, slashes or control characters,
    backslashes, spaces, control characters, characters outside ASCII, an invalid port)."""
    if call.method not in METHODS:
        raise RefusedCall(
            f"Refused: method {call.method!r} is not allowed (only {', '.join(METHODS)})."
        )
    url = call.url
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise _refuse(url, "contains a space or a control character", base)
    if "\\" in url:
        raise _refuse(url, "contains a backslash", base)
    if not url.isascii():
        raise _refuse(url, "contains characters outside ASCII (write them percent-encoded)", base)
    if _ENCODED.search(url):
        raise _refuse(
            url, "contains a percent-encoded dot, slash, backslash or control character", base
        )
    try:
        target = urlsplit(url)
        target_origin = _origin(target)
    except ValueError:
        raise _refuse(
            url,
            "is not a valid URL (its host or port cannot be read; ports go from 1 to 65535)",
            base,
        ) from None
    if "@" in target.netloc:
        raise _refuse(url, "carries a user name or password before the host", base)
    allowed = urlsplit(base)
    prefix = allowed.path.rstrip("/") + "/"
    segments = target.path.split("/")
    if (
        target_origin != _origin(allowed)
        or not (target.path + "/").startswith(prefix)
        or ".." in segments
        or "." in segments
    ):
        raise _refuse(url, "is outside the allowlisted API base", base)
    host = allowed.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if allowed.port:
        netloc += f":{allowed.port}"
    return urlunsplit((allowed.scheme.lower(), netloc, target.path, target.query, ""))


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect could lead off the allowlist after the check: it is reported, not followed."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        raise urllib.error.HTTPError(
            req.full_url,
            code,
            f"redirect to {newurl} not followed (only the allowlisted API is called)",
            headers,
            fp,
        )


_NO_REDIRECTS = urllib.request.build_opener(_RefuseRedirects)


OUTCOME_UNKNOWN = "whether the API acted on it is unknown"


def send(call: ApiCall, base: str, timeout_s: float, idempotency_key: str = "") -> str:
    """Send an allowed call to the URL built from its checked parts; the status and body
    as text (an HTTP error, or a request that could not be made, is a result to report,
    not an exception). A request that went out but got no readable answer says
    ``OUTCOME_UNKNOWN``. ``idempotency_key`` goes in an ``Idempotency-Key`` header, so an
    API that honours it applies a call sent again after a crash only once."""
    url = check_allowed(call, base)
    data = None if call.body is None else json.dumps(call.body).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    try:
        request = urllib.request.Request(url, data=data, method=call.method, headers=headers)
    except ValueError:
        return f"ERROR: no request could be made for {url}; nothing was sent."
    try:
        with _NO_REDIRECTS.open(request, timeout=timeout_s) as reply:
            return f"HTTP {reply.status}: {reply.read(4000).decode('utf-8', 'replace')}"
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            return f"ERROR: HTTP {exc.code}: {exc.msg}"
        return f"ERROR: HTTP {exc.code}: {exc.read(2000).decode('utf-8', 'replace')}"
    except urllib.error.URLError as exc:  # urllib wraps what fails while sending
        return f"ERROR: could not reach {url}: {exc.reason}"
    except TimeoutError:  # sent, then no answer in time
        return (
            f"ERROR: the request to {url} was sent but no answer came within {timeout_s:g} s; "
            f"{OUTCOME_UNKNOWN}."
        )
    except (http.client.HTTPException, OSError, ValueError):  # sent, answer unreadable
        return (
            f"ERROR: the request to {url} was sent but the server's answer was not valid HTTP "
            f"(or the connection dropped); {OUTCOME_UNKNOWN}."
        )
