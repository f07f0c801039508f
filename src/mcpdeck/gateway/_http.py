"""The gateway over streamable HTTP: ``/mcp`` for the default profile, ``/mcp/<profile>`` for each other.

Every request passes, in order: the path (an unknown profile is 404), the bearer token when
the gateway has tokens (401 without a valid one, compared in constant time; 403 when the
token is bound to another profile), then the SDK's transport with its DNS-rebinding
protection (a ``Host`` or ``Origin`` that is not allowed is refused with 4xx) and sessions.
Each profile has its own SDK session manager, started in the gateway's task group on first
use. SSE events are kept in memory so a client whose stream dropped can resume it.
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from mcpdeck.errors import ConfigError
from mcpdeck.gateway._event_store import MemoryEventStore
from mcpdeck.gateway._server import TOKEN_STATE

if TYPE_CHECKING:
    from mcpdeck.gateway._gateway import Gateway

__all__ = ["LOOPBACK_HOSTS", "LOOPBACK_ORIGINS", "GatewayApp"]

LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
RETRY_MS = 1000
"""The reconnect delay the gateway suggests in its SSE priming events."""


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


class GatewayApp:
    """An ASGI app; the gateway must be open (``async with gateway``) while it serves."""

    def __init__(self, gateway: Gateway, prefix: str = "/mcp"):
        self._gateway = gateway
        self._prefix = prefix.rstrip("/")
        self._managers: dict[str | None, StreamableHTTPSessionManager] = {}
        self._lock = anyio.Lock()
        self._security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=gateway.allowed_hosts or LOOPBACK_HOSTS,
            allowed_origins=gateway.allowed_origins or LOOPBACK_ORIGINS,
        )

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
        rest = path[len(self._prefix) :].strip("/")
        if "/" in rest:
            await _reply(send, 404, f"not found; use {self._prefix} or {self._prefix}/<profile>")
            return
        profile: str | None = rest or self._gateway.profile
        token_name: str | None = None
        if self._gateway.tokens:
            token_name = self._check_token(scope)
            if token_name is None:
                await _reply(
                    send, 401, "a valid bearer token is required", [(b"www-authenticate", b'Bearer realm="mcpdeck"')]
                )
                return
            bound = self._gateway.tokens[token_name].profile
            if bound is not None:
                if rest and rest != bound:
                    await _reply(send, 403, f"this token is for profile {bound!r} only")
                    return
                profile = bound
        try:
            manager = await self._manager(profile)
        except ConfigError as error:
            await _reply(send, 404, str(error))
            return
        state: dict[str, Any] = dict(scope.get("state") or {})
        state[TOKEN_STATE] = token_name
        await manager.handle_request({**scope, "state": state}, receive, send)

    def _check_token(self, scope: Scope) -> str | None:
        """The name of the token the request carries, or None; every token is compared, in constant time."""
        given = b""
        for key, value in scope["headers"]:
            if key == b"authorization" and value[:7].lower() == b"bearer ":
                given = value[7:].strip()
        found: str | None = None
        for name, token in self._gateway.tokens.items():
            if hmac.compare_digest(given, token.secret.encode()) and given:
                found = name
        return found

    async def _manager(self, profile: str | None) -> StreamableHTTPSessionManager:
        manager = self._managers.get(profile)
        if manager is not None:
            return manager
        async with self._lock:
            manager = self._managers.get(profile)
            if manager is None:
                server = self._gateway.server(profile)
                manager = StreamableHTTPSessionManager(
                    server, event_store=MemoryEventStore(), retry_interval=RETRY_MS, security_settings=self._security
                )
                await self._gateway.task_group.start(self._run, manager)
                self._managers[profile] = manager
        return manager

    @staticmethod
    async def _run(
        manager: StreamableHTTPSessionManager, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()
