"""The one way Stepwise talks to a LangGraph Server: ``langgraph-sdk``'s sync client on an
HTTP client of ours.

Ours because the SDK's own retries a refused connection five times (7.5 s of back-off a
page would wait on each read of a server that is down: here one retry), and because its
default headers pick up ``LANGSMITH_API_KEY`` / ``LANGGRAPH_API_KEY`` from the environment
and would send them to whatever URL someone types on the Server page. The only key sent is
``STEPWISE_SERVER_API_KEY``, as ``x-api-key``, and only to the configured server
(``STEPWISE_SERVER_URL``, else ``langgraph dev``'s address): another URL gets it only when
the user says so on the Server page.
"""

from __future__ import annotations

import httpx
from langgraph_sdk.client import SyncLangGraphClient

from graph.models.http_bounds import BoundedTransport
from graph.settings import Settings

DEV_SERVER_URL = "http://127.0.0.1:2024"  # where ``langgraph dev`` serves by default


def _plain(url: str) -> str:
    return url.strip().rstrip("/").lower()


def configured_server(settings: Settings) -> str:
    """The server the key is for: ``STEPWISE_SERVER_URL``, else ``langgraph dev``'s."""
    return settings.server_url or DEV_SERVER_URL


def sends_key_to(url: str, settings: Settings) -> bool:
    """Whether ``url`` is the configured server, the one the key goes to unasked."""
    return _plain(url) == _plain(configured_server(settings))


def sdk_client(
    url: str, timeout: httpx.Timeout, settings: Settings, *, send_key: bool
) -> SyncLangGraphClient:
    """A sync SDK client for ``url``, with the server key when ``send_key``; raises
    ``httpx.InvalidURL`` / ``ValueError`` for a URL httpx cannot use. Its calls inside
    ``http_bounds.bounded`` have a total deadline and a size cap."""
    key = settings.server_api_key if send_key else None
    http = httpx.Client(
        base_url=url,
        transport=BoundedTransport(retries=1),
        timeout=timeout,
        headers={"x-api-key": key.get_secret_value()} if key else {},
    )
    return SyncLangGraphClient(http)
