"""Where a model profile's API key comes from, read at the moment a model is made.

A key typed in the browser lives here, in this process's memory only: never in the store,
a log, an export or a checkpoint, and gone when the process ends. Every key put here is
remembered by ``graph.redaction`` first, so a server's error echoing it is redacted
before it could reach any stored text. A key named as an environment variable is read
from the environment when a model is made, so a changed variable is picked up without a
restart of anything but the process that holds it.
"""

from __future__ import annotations

import os
import re
import threading

from pydantic import SecretStr

from graph.redaction import remember_secrets

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

_lock = threading.Lock()
_typed: dict[str, SecretStr] = {}


def put_typed_key(profile: str, key: str) -> None:
    """Keep ``key`` for ``profile`` in memory (replacing any before it)."""
    key = key.strip()
    if not key:
        raise ValueError("The key is empty: type the key, or pick “no key”.")
    remember_secrets([key])
    with _lock:
        _typed[profile] = SecretStr(key)


def typed_key(profile: str) -> SecretStr | None:
    with _lock:
        return _typed.get(profile)


def forget_typed_key(profile: str) -> None:
    with _lock:
        _typed.pop(profile, None)


def typed_keys() -> dict[str, str]:
    """Every typed key in clear, by profile: only for handing to a worker process of this
    app over its socket (``graph.service.run_processes``)."""
    with _lock:
        return {name: key.get_secret_value() for name, key in _typed.items()}


def env_key(name: str) -> SecretStr | None:
    """The key in the environment variable ``name``; None when it is unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    remember_secrets([value])
    return SecretStr(value)
