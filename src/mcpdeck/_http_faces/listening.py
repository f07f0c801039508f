"""A listening TCP socket for mcpdeck's HTTP faces (``serve`` and ``gateway --port``), bound before anything starts,
and uvicorn serving on it the way those faces stop: on their own signal handling, within a bounded grace."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Generator
from typing import TYPE_CHECKING

from mcpdeck.errors import ConfigError

if TYPE_CHECKING:  # imported when a face serves HTTP
    import uvicorn

__all__ = [
    "ANY_ADDRESS",
    "KEEP_ALIVE",
    "bind",
    "check_allowed_host",
    "names_an_address",
    "quiet_server",
    "serve_until_cancelled",
]

KEEP_ALIVE = 30
"""Seconds an idle kept-alive connection stays open (uvicorn's default is 5 s). httpx, under the SDK's
clients, reuses a pooled connection idle for up to 5 s: with the same 5 s on both sides a client can send a
POST on a connection at the moment the server closes it, and gets a read error for a request it cannot
safely retry. The server keeps its side open longer than any such client's side."""


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


def quiet_server(config: uvicorn.Config) -> uvicorn.Server:
    """A uvicorn server without its own signal handlers: SIGINT and SIGTERM are the command's to handle (uvicorn's
    would turn them into a shutdown that waits for every connection to close)."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None]:
            yield

    return QuietServer(config)


async def serve_until_cancelled(server: uvicorn.Server, sock: socket.socket) -> None:
    """Serve on ``sock`` until cancelled, then stop as uvicorn stops itself: no new connections, the requests in
    flight given the config's ``timeout_graceful_shutdown``, then cancelled.

    (A cancelled ``serve`` would leave its listener accepting connections for an app that is closing under
    them: answers of 500, and a stop held up by them.)
    """
    import anyio

    stopped = anyio.Event()

    async def run() -> None:
        with anyio.CancelScope(shield=True):  # ended by should_exit only
            try:
                await server.serve([sock])
            finally:
                stopped.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            await stopped.wait()  # (it ends by itself only when it fails to start)
        finally:
            server.should_exit = True


_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ALLOWED_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-f:.]+\])(?::(?P<port>[0-9]{{1,5}}))?")


def check_allowed_host(name: str) -> str:
    """One more ``Host`` header value to admit (a load balancer's name): ``NAME`` or ``NAME:PORT``, lower-cased.

    ``NAME`` alone matches what a client sends for the scheme's default port (80, 443); a client that
    names a port sends ``NAME:PORT``. No wildcard: a DNS-rebinding page sends a name its attacker owns,
    and only a list of exact names keeps such a name out.

    Raises:
        ConfigError: Not a host name, an IP address or ``[IPv6]``, with an optional port.
    """
    given = name.strip().lower()
    match = _ALLOWED_HOST.fullmatch(given)
    port = match.group("port") if match else None
    if "*" in given:
        raise ConfigError(
            f"the allowed host {name!r} holds a wildcard; list each name the load balancer is reached by "
            "(a wildcard would admit the names DNS-rebinding pages send)"
        )
    if match is None or (port is not None and not 0 < int(port) < 65536):
        raise ConfigError(
            f"the allowed host {name!r} is not a host name with an optional port; give it as the Host header "
            "clients send, e.g. mcp.example.com or mcp.example.com:8443 (no scheme, no path)"
        )
    return given
