"""The one way Stepwise talks to a LangGraph Server: ``langgraph-sdk``'s sync client on an
HTTP client of ours.

Ours because the SDK's own retries a refused connection five times (7.5 s of back-off a
page would wait on each read of a server that is down: here one retry), and because its
default headers pick up ``LANGSMITH_API_KEY`` / ``LANGGRAPH_API_KEY`` from the environment
and would send them to whatever URL someone types on the Server page. The only key sent is
``STEPWISE_SERVER_API_KEY``, as ``x-api-key``, to the server the settings or the page name.
"""

from __future__ import annotations

import httpx
from langgraph_sdk.client import SyncLangGraphClient

from graph.settings import Settings


def sdk_client(url: str, timeout: httpx.Timeout, settings: Settings) -> SyncLangGraphClient:
    """A sync SDK client for ``url``; raises ``httpx.InvalidURL`` / ``ValueError`` for a
    URL httpx cannot use."""
    key = settings.server_api_key
    http = httpx.Client(
        base_url=url,
        transport=httpx.HTTPTransport(retries=1),
        timeout=timeout,
        headers={"x-api-key": key.get_secret_value()} if key else {},
    )
    return SyncLangGraphClient(http)
