"""A listening TCP socket for mcpdeck's HTTP faces (``serve`` and ``gateway --port``), bound before anything starts."""

from __future__ import annotations

import socket

from mcpdeck.errors import ConfigError

__all__ = ["ANY_ADDRESS", "bind", "names_an_address"]


def bind(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening on ``host:port`` (port 0: any free one).

    Connections accepted on it send small writes at once (``TCP_NODELAY``, which they inherit):
    without it an answer written as headers, then body, waits for the client's delayed ACK,
    about 40 ms a request on Linux. (asyncio sets it only on sockets it made itself.)

    Raises:
        ConfigError: The port is in use, or the address cannot be listened on; the message says what to do.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        if error.errno in (98, 48, 10048):  # EADDRINUSE on Linux, macOS, Windows
            raise ConfigError(
                f"port {port} on {host} is in use; pick another with --port (or --port 0 for any)"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock.setblocking(False)
    return sock


ANY_ADDRESS = ("0.0.0.0", "::")
"""Addresses that listen on every address of the machine."""


def names_an_address(host_header: str, port: int) -> bool:
    """Whether a ``Host`` header is an IP address (``192.0.2.2:PORT``, ``[fd00::2]:PORT``) with this port.

    For a server listening on every address, such a header is let in: it cannot be a DNS
    rebinding, which needs a host name the attacker's DNS answers for.
    """
    import ipaddress

    address, colon, given = host_header.rpartition(":")
    if not colon or given != str(port):
        return False
    if address.startswith("[") and address.endswith("]"):
        address = address[1:-1]
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True
