"""The protocol era of one server: how to open its next session, and what was learnt about it.

``auto`` lets the SDK probe ``server/discover`` (2026-07-28) and fall back to the
``initialize`` handshake; the probe is bounded where old servers stay silent (stdio, SSE). A
server that did not understand the probe gets the handshake from then on, and what it wrote
about the probe is cut from its log (one line says what happened instead). A stdio server that
closed its pipe on the probe is started again with the handshake (``StartAgain``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Literal

from mcp import Client
from mcp.client._transport import Transport
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpdeck._probe import DISCOVER, PROBE_BOUND, ProbeWatch
from mcpdeck.config import AnyServerConfig, InProcessServerConfig
from mcpdeck.connection._context import ServerContext
from mcpdeck.errors import ServerError

__all__ = ["ClientFactory", "ProtocolEra", "StartAgain"]

logger = logging.getLogger(__name__)

ClientFactory = Callable[[Transport, Literal["auto", "legacy"]], Client]
"""Makes the SDK client of a session on a transport, in a mode."""


class StartAgain(Exception):
    """A stdio server closed its pipe on the modern probe: start it again, with the handshake."""


class _ProbeNoise:
    """What one probe made the server write to its log, and whether it refused the probe."""

    def __init__(self, context: ServerContext):
        self._context = context
        self.log_at: int | None = None  # where the log stood when the probe went out
        self.lines = 0  # lines the server wrote about the probe, left out of its log
        self.refused = False  # the server answered the probe with an error

    def sent(self) -> None:
        self.log_at = self._context.log.size() if self._context.log_path is not None else None

    def refused_now(self) -> None:
        """The server answered the probe with an error: what it wrote meanwhile about it is noise (SDK 1.x
        servers write a long validation report); it goes, and one line says what happened."""
        self.refused = True
        if self.log_at is not None:
            self.lines += self._context.log.cut_since(self.log_at, markers=(DISCOVER, "validat"))


class ProtocolEra:
    """What one server's sessions learnt about its protocol era, kept across sessions.

    Attributes:
        handshake_only: This server does not understand the modern probe.
        knows_probe: It answered the probe once (a closed pipe then is no verdict on it).
    """

    def __init__(self, context: ServerContext):
        self._context = context
        self.handshake_only = False
        self.knows_probe = False

    def reconfigured(self, new: AnyServerConfig) -> None:
        """The server gets ``new`` for a config: unless it still runs the same server, what was learnt goes
        (another server, maybe: probe it afresh)."""
        old = self._context.config
        if isinstance(new, InProcessServerConfig) and isinstance(old, InProcessServerConfig):
            same = new.server is old.server
        else:
            same = type(new) is type(old) and new.target == old.target
        if not same:
            self.handshake_only = self.knows_probe = False

    def protocol(self) -> Literal["auto", "handshake", "modern"]:
        """How to open the next session: the config's ``protocol``, and what was learnt."""
        protocol = self._context.config.protocol
        return "handshake" if protocol == "auto" and self.handshake_only else protocol

    @asynccontextmanager
    async def negotiated(
        self, make_client: ClientFactory, transport: Transport, *, bounded: bool, stdio: bool
    ) -> AsyncGenerator[Client]:
        """A client on ``transport``, its session opened the way ``protocol`` says (see the module docstring).

        Raises:
            StartAgain: A stdio server closed its pipe on the probe.
        """
        protocol = self.protocol()
        if protocol == "handshake":
            async with make_client(transport, "legacy") as client:
                yield client
            return
        noise = _ProbeNoise(self._context)
        probe = ProbeWatch(
            PROBE_BOUND if bounded and protocol == "auto" else None, on_sent=noise.sent, on_refused=noise.refused_now
        )
        entered = False
        try:
            async with make_client(probe.wrap(transport), "auto") as client:
                entered = True
                probe.finish()
                self._settle(client, probe, protocol, noise)
                yield client
        except Exception:
            if entered or self.knows_probe or not (stdio and protocol == "auto" and probe.closed):
                raise
            self.handshake_only = True
            name = self._context.name
            self._context.note(f"[mcpdeck] the server {probe.reason}; starting it again with the initialize handshake")
            logger.info("server %r %s; starting it again with the initialize handshake", name, probe.reason)
            raise StartAgain from None

    def _settle(self, client: Client, probe: ProbeWatch, protocol: str, noise: _ProbeNoise) -> None:
        version = client.protocol_version
        if version in MODERN_PROTOCOL_VERSIONS or probe.understood:
            self.knows_probe = True
        if version in MODERN_PROTOCOL_VERSIONS:
            return
        if protocol == "modern":
            raise ServerError(
                self._context.name,
                f'speaks only the initialize handshake (protocol {version}) but its config says "protocol": '
                '"modern"; set it to "auto" or "handshake"',
            )
        if probe.understood is not False:
            return  # it knows the probe and chose the handshake (or an in-process server): nothing learnt
        if noise.refused:
            # Its stderr reaches the log through a pipe mcpdeck reads: what it wrote about the
            # probe may have landed after the answer. A round trip later it has; cut again.
            noise.refused_now()
        self.handshake_only = True
        left_out = f"; {noise.lines} lines it wrote about it are left out" if noise.lines else ""
        note = (
            f"the server {probe.reason}; connected with the initialize handshake (protocol {version}), "
            f"which it gets from now on{left_out}"
        )
        self._context.note(f"[mcpdeck] {note}")
        logger.info("server %r: %s", self._context.name, note)
