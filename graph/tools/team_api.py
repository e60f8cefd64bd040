"""request_team's HTTP calls: real requests, only to one allowlisted API base URL.

The base is ``STEPWISE_TEAMS_API_BASE``, or the demo API Stepwise serves on loopback
when that is empty. A URL outside it (another host, port, scheme, or a path outside the
base path) is refused before anything is sent, with a message that says why. The
calls have side effects, so the team asks a human before each one (see
``graph/hierarchical_teams/teams.py``); this module only checks and sends.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from graph.settings import Settings

METHODS = ("GET", "POST")


class RefusedCall(ValueError):
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


def check_allowed(call: ApiCall, base: str) -> None:
    """Raise ``RefusedCall`` unless ``call`` goes to ``base`` (same scheme, host and port,
    a path under its path) with a known method."""
    if call.method not in METHODS:
        raise RefusedCall(
            f"Refused: method {call.method!r} is not allowed (only {', '.join(METHODS)})."
        )
    target, allowed = urlsplit(call.url), urlsplit(base)
    prefix = allowed.path.rstrip("/") + "/"
    same_origin = (target.scheme, target.hostname, target.port) == (
        allowed.scheme,
        allowed.hostname,
        allowed.port,
    )
    if not same_origin or not (target.path + "/").startswith(prefix) or ".." in target.path:
        raise RefusedCall(
            f"Refused: {call.url} is outside the allowlisted API base {base} "
            "(request_team may only call that API; set "
            "STEPWISE_TEAMS_API_BASE to change it)."
        )


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect could lead off the allowlist after the check: it is reported, not followed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(
            req.full_url,
            code,
            f"redirect to {newurl} not followed (only the allowlisted API is called)",
            headers,
            fp,
        )


_NO_REDIRECTS = urllib.request.build_opener(_RefuseRedirects)


def send(call: ApiCall, base: str, timeout_s: float) -> str:
    """Send an allowed call; the status and body as text (an HTTP error is a result to
    report, not an exception)."""
    check_allowed(call, base)
    data = None if call.body is None else json.dumps(call.body).encode()
    request = urllib.request.Request(
        call.url,
        data=data,
        method=call.method,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with _NO_REDIRECTS.open(request, timeout=timeout_s) as reply:
            return f"HTTP {reply.status}: {reply.read(4000).decode('utf-8', 'replace')}"
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            return f"ERROR: HTTP {exc.code}: {exc.msg}"
        return f"ERROR: HTTP {exc.code}: {exc.read(2000).decode('utf-8', 'replace')}"
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"ERROR: could not reach {call.url}: {reason}"
