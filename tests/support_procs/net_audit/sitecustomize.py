"""Loaded by every Python process started with this folder on ``PYTHONPATH`` (a test's
``langgraph dev``): records each attempt to resolve or reach a host that is not loopback
in the file ``$STEPWISE_NET_AUDIT``, one line each, so a test can say the server stayed
offline. It records, it does not block: the server behaves as it would anywhere."""

import os
import socket

_LOG = os.environ.get("STEPWISE_NET_AUDIT")
_LOOPBACK = ("127.", "::1", "localhost", "0.0.0.0")


def _record(what: str, host) -> None:
    host = host.decode() if isinstance(host, bytes) else str(host or "")
    if _LOG and host and not host.startswith(_LOOPBACK):
        with open(_LOG, "a") as out:
            out.write(f"{os.getpid()} {what} {host}\n")


if _LOG:
    _getaddrinfo = socket.getaddrinfo
    _connect = socket.socket.connect
    _connect_ex = socket.socket.connect_ex

    def getaddrinfo(host, *args, **kwargs):
        _record("resolve", host)
        return _getaddrinfo(host, *args, **kwargs)

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _record("connect", address[0])
        return _connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _record("connect", address[0])
        return _connect_ex(self, address)

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
