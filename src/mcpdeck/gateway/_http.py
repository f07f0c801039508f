"""The gateway over streamable HTTP: ``/mcp`` for the default profile, ``/mcp/<profile>`` for each other.

Clients of the old HTTP+SSE transport (2024-11-05) open ``/mcp/sse`` (or ``/mcp/<profile>/sse``)
and post to the ``messages/`` path beside it, as the SDK's ``SseServerTransport`` serves them.

Every request passes, in order: the path (an unknown profile is 404), the bearer token when
the gateway has tokens (401 without a valid one, compared in constant time; 403 when the
token is bound to another profile; wrong tokens are counted against who sent them, as
``serve``'s guard counts them, and past the limit a sender gets 429 before its token is
compared: ``mcpdeck._http_faces.token_guesses``), then the SDK's transport with its DNS-rebinding
protection (a ``Host`` or ``Origin`` that is not allowed is refused with 4xx) and sessions
(a session opened with one token is not found with another: 404).
Each profile has its own SDK session manager, started in the gateway's task group on first
use. SSE events are kept in memory so a client whose stream dropped can resume it.
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.runner import serve_loop
from mcp.server.sse import SseServerTransport
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from mcpdeck._http_faces.listening import names_an_address
from mcpdeck._http_faces.token_guesses import Guesses
from mcpdeck.errors import ConfigError
from mcpdeck.gateway._event_store import MemoryEventStore
from mcpdeck.gateway._requests import TOKEN_STATE
from mcpdeck.gateway._streamable import GatewaySessionManager

if TYPE_CHECKING:
    from mcpdeck.gateway._gateway import Gateway

__all__ = ["LOOPBACK_HOSTS", "LOOPBACK_ORIGINS", "GatewayApp"]

LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
LEGACY_SSE = ("sse", "messages")
"""Path ends of the old HTTP+SSE transport (so no profile may be called that)."""
RETRY_MS = 1000
"""The reconnect delay the gateway suggests in its SSE priming events."""


def _holder(token_name: str) -> AuthenticatedUser:
    """The holder of a named token, as the SDK's transports compare them: a session (streamable HTTP's
    ``Mcp-Session-Id``, the old transport's ``session_id``) answers only requests with the token that opened
    it; with another token it does not exist (404 ``Session not found``). The secret stays out of it."""
    return AuthenticatedUser(AccessToken(token=f"mcpdeck-gateway-token:{token_name}", client_id=token_name, scopes=[]))


def _matches(value: str, allowed: list[str]) -> bool:
    """``value`` is one of ``allowed``, where ``name:*`` stands for the name with any port (as the SDK reads them)."""
    return value in allowed or any(a.endswith(":*") and value.startswith(a[:-1]) for a in allowed)


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
        self._managers: dict[str | None, GatewaySessionManager] = {}
        self._sse: dict[str | None, SseServerTransport] = {}
        self._lock = anyio.Lock()
        self._guesses = Guesses()
        self._hosts = gateway.allowed_hosts or LOOPBACK_HOSTS
        self._origins = gateway.allowed_origins or LOOPBACK_ORIGINS
        # Listening on every address, a client elsewhere names the machine by its IP address, which
        # the SDK's lists cannot hold: the gateway checks Host and Origin itself (_rebinding_refusal).
        self._security = TransportSecuritySettings(
            enable_dns_rebinding_protection=not gateway.any_address,
            allowed_hosts=self._hosts,
            allowed_origins=self._origins,
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
        parts = [part for part in path[len(self._prefix) :].split("/") if part]
        legacy = parts[-1] if parts and parts[-1] in LEGACY_SSE else None  # the 2024-11-05 HTTP+SSE transport
        if legacy is not None:
            parts = parts[:-1]
        if len(parts) > 1:
            await _reply(send, 404, f"not found; use {self._prefix} or {self._prefix}/<profile>")
            return
        if self._gateway.any_address and (refused := self._rebinding_refusal(scope)) is not None:
            await _reply(send, *refused)
            return
        rest = parts[0] if parts else ""
        profile: str | None = rest or self._gateway.profile
        token_name: str | None = None
        if self._gateway.tokens:
            found: list[str] = []

            def right() -> bool:
                name = self._check_token(scope)
                found.extend([name] if name is not None else [])
                return name is not None

            presented = any(key == b"authorization" for key, _ in scope["headers"])
            ok, wait = self._guesses.judge(scope.get("client"), scope.get("server"), right) if presented else (False, 0)
            if wait:
                retry = [(b"retry-after", str(int(wait) + 1).encode())]
                await _reply(send, 429, f"too many wrong tokens; try again in {wait:.0f} s", retry)
                return
            if not ok:
                await _reply(
                    send, 401, "a valid bearer token is required", [(b"www-authenticate", b'Bearer realm="mcpdeck"')]
                )
                return
            token_name = found[0]
            bound = self._gateway.tokens[token_name].profile
            if bound is not None:
                if rest and rest != bound:
                    await _reply(send, 403, f"this token is for profile {bound!r} only")
                    return
                profile = bound
        state: dict[str, Any] = dict(scope.get("state") or {})
        state[TOKEN_STATE] = token_name
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

    def _rebinding_refusal(self, scope: Scope) -> tuple[int, str] | None:
        """The SDK's DNS-rebinding check, with IP-address ``Host`` values let in (they cannot be a rebinding)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host, origin = headers.get("host", ""), headers.get("origin")
        server = scope.get("server")
        by_address = server is not None and names_an_address(host, server[1])
        if not (by_address or _matches(host, self._hosts)):
            return 421, "Invalid Host header"
        if origin is not None and not (_matches(origin, self._origins) or (by_address and origin == f"http://{host}")):
            return 403, "Invalid Origin header"
        return None

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
                await self._gateway.task_group.start(self._run, manager)
                self._managers[profile] = manager
        return manager

    @staticmethod
    async def _run(
        manager: GatewaySessionManager, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with manager.run():
            task_status.started()
            await anyio.sleep_forever()
