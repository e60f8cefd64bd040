"""The app has no login, so a plain start must listen on this machine only: started
as the README starts it (``streamlit run app.py``, nothing about the address), it
accepts on 127.0.0.1 and refuses on every non-loopback address the machine has.

Exposing it is the documented choice in the README ("Exposing the app").
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct

import pytest

from tests.e2e.conftest import start_app, stop_app

SIOCGIFADDR = 0x8915  # Linux: the IPv4 address of a network interface


def _interface_address(name: str) -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            packed = fcntl.ioctl(
                probe.fileno(), SIOCGIFADDR, struct.pack("256s", name[:15].encode())
            )
        except OSError:  # the interface has no IPv4 address
            return None
    return socket.inet_ntoa(packed[20:24])


def _outgoing_address() -> str | None:
    """The address this machine would send from (a UDP connect sends no packet)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:  # no route off the machine
            return None
        return probe.getsockname()[0]


def non_loopback_addresses() -> list[str]:
    """Every address of this machine outside loopback: the host name's, each interface's
    IPv4 and global IPv6 address, and the one outgoing traffic uses (the host name often
    maps to 127.0.x.1 in /etc/hosts, so it alone finds nothing)."""
    found: set[str | None] = {_outgoing_address()}
    try:
        found.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    found.update(_interface_address(name) for _, name in socket.if_nameindex())
    found.update(_global_ipv6_addresses())
    return sorted(a for a in found if a and not ipaddress.ip_address(a).is_loopback)


def _global_ipv6_addresses() -> list[str]:
    """IPv6 addresses of global scope (a server bound to ``::`` answers on them)."""
    try:
        lines = open("/proc/net/if_inet6").read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[3] == "00":  # scope 00: global
            hex_address = fields[0]
            groups = [hex_address[i : i + 4] for i in range(0, 32, 4)]
            found.append(str(ipaddress.IPv6Address(":".join(groups))))
    return found


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=3):
            return True
    except OSError:
        return False


def test_a_plain_start_listens_on_loopback_only(tmp_path, monkeypatch):
    addresses = non_loopback_addresses()
    if not addresses:
        pytest.skip("this machine has no non-loopback address to try a connection on")
    for variable in ("STREAMLIT_SERVER_ADDRESS", "STREAMLIT_SERVER_PORT"):
        monkeypatch.delenv(variable, raising=False)  # the defaults, not this shell's
    process, url = start_app(tmp_path)
    try:
        port = int(url.rsplit(":", 1)[1])
        assert _accepts("127.0.0.1", port), "the app does not answer on 127.0.0.1"
        exposed = [address for address in addresses if _accepts(address, port)]
    finally:
        stop_app(process)
    assert not exposed, f"the app, which has no login, accepts connections on {exposed}"
