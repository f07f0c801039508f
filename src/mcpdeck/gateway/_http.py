"""The gateway over streamable HTTP: ``/mcp`` for the default profile, ``/mcp/<profile>`` for each other.

Clients of the old HTTP+SSE transport (2024-11-05) open ``/mcp/sse`` (or ``/mcp/<profile>/sse``)
and post to the ``messages/`` path beside it, as the SDK's ``SseServerTransport`` serves them.

``GatewayApp`` is the routes only: it sits behind the one guard of mcpdeck's HTTP faces
(``mcpdeck._http_faces.guard``: Host, Origin, the bearer token and the count of wrong ones, body size), which
``Gateway.asgi()`` puts in front of it (``gateway --port``) and ``serve`` puts in front of its whole
app. Then: the path (an unknown profile is 404), a token bound to another profile (403), and the SDK's
transport with its sessions (a session opened with one token is not found with another: 404).
Each profile has its own SDK session manager, started in the gateway's task group on first
use. SSE events are kept in memory so a client whose stream dropped can resume it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.runner import serve_loop
from mcp.server.sse import SseServerTransport
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from mcpdeck._http_faces.guard import CREDENTIAL
from mcpdeck._sdk.streamable_server import GatewaySessionManager
from mcpdeck.errors import ConfigError
from mcpdeck.gateway._connected_clients import ConnectedClients
from mcpdeck.gateway._event_store import MemoryEventStore
from mcpdeck.gateway._requests import TOKEN_STATE

__all__ = ["GatewayApp", "GatewayToken", "ServedGateway"]

LEGACY_SSE = ("sse", "messages")
"""Path ends of the old HTTP+SSE transport (so no profile may be called that)."""
RETRY_MS = 500
"""The reconnect delay the gateway suggests in its SSE priming events. The SDK's client waits it before each of
its two tries to resume a dropped stream, so it sets both how long a stream may be unreachable and still resume
(about twice this) and how long a handshake-era call whose replica died waits for its error (the same): 500 ms
bridges a hard restart of HAProxy (measured 0.37-0.52 s) and fails a stranded call after ~1 s, not ~2 s
(docs/fleet.md, "Recovery after kill -9")."""


def _holder(token_name: str) -> AuthenticatedUser:
    """The holder of a named token, as the SDK's transports compare them: a session (streamable HTTP's
    ``Mcp-Session-Id``, the old transport's ``session_id``) answers only requests with the token that opened
    it; with another token it does not exist (404 ``Session not found``). The secret stays out of it."""
    return AuthenticatedUser(AccessToken(token=f"mcpdeck-gateway-token:{token_name}", client_id=token_name, scopes=[]))


async def _reply(send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class GatewayToken:
    """A bearer token for the HTTP gateway, optionally bound to one profile.

    Attributes:
        secret: The token clients send (``Authorization: Bearer <secret>``).
        profile: The only profile it opens (also at the bare ``/mcp``); None: every profile.
    """

    secret: str
    profile: str | None = None

    def __repr__(self) -> str:
        return f"GatewayToken(secret='***', profile={self.profile!r})"


class ServedGateway(Protocol):
    """What the HTTP face uses of the gateway that owns it (``Gateway`` is one)."""

    @property
    def profile(self) -> str | None:
        """The profile served at the bare ``/mcp``."""
        ...

    @property
    def tokens(self) -> Mapping[str, GatewayToken]:
        """The named bearer tokens (none: no token, as behind ``serve``'s guard)."""
        ...

    @property
    def replica(self) -> str | None:
        """The replica id session ids begin with."""
        ...

    @property
    def task_group(self) -> TaskGroup:
        """Where the session managers run (raises while the gateway is not open)."""
        ...

    @property
    def closing(self) -> anyio.Event:
        """Set when the gateway closes: the session managers run until then, not until a stop's cancellation."""
        ...

    @property
    def clients(self) -> ConnectedClients:
        """The connected clients (for ``/metrics``: listen streams, clients seen)."""
        ...

    def server(self, profile: str | None) -> Server[Any]:
        """The SDK server of a profile."""
        ...


class GatewayApp:
    """An ASGI app, the gateway's routes (put the guard in front: ``Gateway.asgi()``); the gateway must be open
    (``async with gateway``) while it serves."""

    def __init__(self, gateway: ServedGateway, prefix: str = "/mcp"):
        self._gateway = gateway
        self._prefix = prefix.rstrip("/")
        self._managers: dict[str | None, GatewaySessionManager] = {}
        self._sse: dict[str | None, SseServerTransport] = {}
        self._lock = anyio.Lock()
        # Host and Origin are the guard's: the SDK's own check of them is off (one answer, one place).
        self._security = TransportSecuritySettings(enable_dns_rebinding_protection=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # nothing to start: the gateway's own block runs the managers
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if not (path == self._prefix or path.startswith(self._prefix + "/")):
            await _reply(send, 404, f"not found; the MCP endpoint is {self._prefix or '/'}")
            return
        parts = [part for part in path[len(self._prefix) :].split("/") if part]
        legacy = parts[-1] if parts and parts[-1] in LEGACY_SSE else None  # the 2024-11-05 HTTP+SSE transport
        if legacy is not None:
            parts = parts[:-1]
        if len(parts) > 1:
            await _reply(send, 404, f"not found; use {self._prefix} or {self._prefix}/<profile>")
            return
        rest = parts[0] if parts else ""
        profile: str | None = rest or self._gateway.profile
        # The name of the gateway token the guard took (None: the gateway has none, as behind serve's guard).
        guarded: dict[str, Any] = scope.get("state") or {}
        credential = guarded.get(CREDENTIAL)
        token_name = credential if isinstance(credential, str) and credential in self._gateway.tokens else None
        if token_name is not None:
            bound = self._gateway.tokens[token_name].profile
            if bound is not None:
                if rest and rest != bound:
                    await _reply(send, 403, f"this token is for profile {bound!r} only")
                    return
                profile = bound
        state = {**guarded, TOKEN_STATE: token_name}
        scope = {**scope, "state": state}
        if token_name is not None:  # the SDK's transports keep each session to the credential that opened it
            scope["user"] = _holder(token_name)
        try:
            if legacy is not None:
                await self._legacy(legacy, profile, rest, scope, receive, send)
                return
            manager = await self._manager(profile)
        except ConfigError as error:
            await _reply(send, 404, str(error))
            return
        await manager.handle_request(scope, receive, send)

    async def _legacy(
        self, part: str, profile: str | None, rest: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """The old transport: ``GET .../sse`` opens the stream, ``POST .../messages/`` carries the client's messages."""
        server = self._gateway.server(profile)
        transport = self._sse.get(profile)
        if transport is None:
            endpoint = f"{self._prefix}{'/' + rest if rest else ''}/messages/"
            transport = self._sse[profile] = SseServerTransport(endpoint, security_settings=self._security)
        if part == "messages":
            await transport.handle_post_message(scope, receive, send)
            return
        if scope["method"] != "GET":
            await _reply(send, 405, "open the SSE stream with GET")
            return
        async with transport.connect_sse({**scope, "root_path": ""}, receive, send) as (read_stream, write_stream):
            options = server.create_initialization_options()
            async with server.lifespan(server) as lifespan_state:
                await serve_loop(server, read_stream, write_stream, lifespan_state=lifespan_state, init_options=options)

    def sessions_open(self) -> dict[str, int]:
        """The streamable HTTP sessions open now, by profile (``""``: the gateway's own)."""
        return {profile or "": manager.open_sessions for profile, manager in self._managers.items()}

    def listen_streams_open(self) -> dict[str, int]:
        """The 2026-07-28 clients' ``subscriptions/listen`` streams open now, by profile (``""``: the gateway's own)."""
        return {profile or "": count for profile, count in self._gateway.clients.listening.items()}

    def clients_seen(self) -> int:
        """The clients (token and ``clientInfo``) that made a request in the last minute, of either era."""
        return self._gateway.clients.seen_recently()

    async def _manager(self, profile: str | None) -> GatewaySessionManager:
        manager = self._managers.get(profile)
        if manager is not None:
            return manager
        async with self._lock:
            manager = self._managers.get(profile)
            if manager is None:
                server = self._gateway.server(profile)
                manager = GatewaySessionManager(
                    server, event_store=MemoryEventStore(), retry_interval=RETRY_MS, security_settings=self._security
                )
                manager.replica = self._gateway.replica
                await self._gateway.task_group.start(self._run, manager, self._gateway.closing)
                self._managers[profile] = manager
        return manager

    @staticmethod
    async def _run(
        manager: GatewaySessionManager,
        closing: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run a session manager until the gateway closes. Not one moment before: a stop (SIGTERM cancels the
        ``gateway --port`` process's whole task) lets the HTTP server finish the requests in flight for a grace,
        and each of those still needs the manager; stopped with the rest, it answered them 500 ("Task group is
        not initialized"). The gateway closes once the HTTP server has stopped."""
        with anyio.CancelScope(shield=True):
            async with manager.run():
                task_status.started()
                await closing.wait()
