"""A listening TCP socket for mcpdeck's HTTP faces (``serve`` and ``gateway --port``), bound before anything starts."""

from __future__ import annotations

import socket

from mcpdeck.errors import ConfigError

__all__ = ["bind"]


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
