"""A real OAuth authorization server and a protected MCP server on 127.0.0.1, for tests.

The authorization server is the SDK's own (``create_auth_routes``: RFC 8414 metadata,
dynamic registration, authorize, token with PKCE, revoke) over an in-memory provider that
tests can steer: approve or deny, forget every client, expire access tokens. The MCP server
is an ``MCPServer`` on another port that requires a bearer token issued for it (RFC 8707
resource) with the ``mcp:tools`` scope, and publishes RFC 9728 protected resource metadata
pointing at the authorization server.
"""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.applications import Starlette
from starlette.types import ASGIApp

SCOPE = "mcp:tools"
EXTRA_SCOPE = "mcp:admin"


@dataclass
class Counters:
    """What the authorization server has seen."""

    registrations: int = 0
    authorizations: int = 0
    denials: int = 0
    code_exchanges: int = 0
    refreshes: int = 0
    rejected_tokens: int = 0


@dataclass
class MemoryProvider:
    """An in-memory ``OAuthAuthorizationServerProvider`` that tests steer."""

    resource: str = ""
    deny: bool = False
    access_ttl: int = 3600
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict[str, OAuthClientInformationFull])
    codes: dict[str, AuthorizationCode] = field(default_factory=dict[str, AuthorizationCode])
    access_tokens: dict[str, AccessToken] = field(default_factory=dict[str, AccessToken])
    refresh_tokens: dict[str, RefreshToken] = field(default_factory=dict[str, RefreshToken])
    seen: Counters = field(default_factory=Counters)
    issued: set[str] = field(default_factory=set[str])
    """Every token and client secret ever issued."""

    # ----- what tests do -----------------------------------------------------------------

    def forget_clients(self) -> None:
        """Lose every client registration and token (an authorization server reset)."""
        self.clients.clear()
        self.codes.clear()
        self.access_tokens.clear()
        self.refresh_tokens.clear()

    def expire_access_tokens(self) -> None:
        """Every access token issued so far is expired from now on (refresh tokens stay good)."""
        for token in self.access_tokens.values():
            token.expires_at = int(time.time()) - 1

    # ----- the provider ------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.seen.registrations += 1
        self.clients[client_info.client_id] = client_info
        if client_info.client_secret:
            self.issued.add(client_info.client_secret)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if self.deny:
            self.seen.denials += 1
            return construct_redirect_uri(
                str(params.redirect_uri),
                error="access_denied",
                error_description="The user said no",
                state=params.state,
            )
        self.seen.authorizations += 1
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.seen.code_exchanges += 1
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        token = self.refresh_tokens.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.seen.refreshes += 1
        self.refresh_tokens.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access_tokens.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            self.seen.rejected_tokens += 1
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access_tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError(error="unsupported_grant_type")

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        self.issued |= {access, refresh}
        expires_at = int(time.time()) + self.access_ttl
        self.access_tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires_at, resource=resource
        )
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, expires_in=self.access_ttl, scope=" ".join(scopes), refresh_token=refresh
        )


class _Verifier:
    def __init__(self, provider: MemoryProvider):
        self._provider = provider

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self._provider.load_access_token(token)


def _bound() -> tuple[socket.socket, str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


def _protected_mcp_server(settings: AuthSettings, provider: MemoryProvider) -> MCPServer:
    server = MCPServer("secure", version="1.0.0", token_verifier=_Verifier(provider), auth=settings)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def whoami() -> str:
        """The client id and scopes of the token this call came with."""
        token = get_access_token()
        return f"{token.client_id} {' '.join(token.scopes)}" if token else "anonymous"

    return server


@dataclass
class OAuthSetup:
    """The running pair.

    Attributes:
        provider: The authorization server's state (steer it, read its counters).
        issuer: The authorization server's URL.
        mcp_url: The protected MCP endpoint.
    """

    provider: MemoryProvider
    issuer: str
    mcp_url: str


@asynccontextmanager
async def _serve(sock: socket.socket, app: ASGIApp) -> AsyncGenerator[None]:
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2))
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:
                yield
            finally:
                server.should_exit = True


@asynccontextmanager
async def oauth_servers(*, registration: bool = True, sse: bool = False) -> AsyncGenerator[OAuthSetup]:
    """An authorization server and a protected MCP server (streamable HTTP, or SSE), each on its own port."""
    as_sock, as_url = _bound()
    rs_sock, rs_url = _bound()
    mcp_url = f"{rs_url}/sse" if sse else f"{rs_url}/mcp"
    provider = MemoryProvider(resource=mcp_url)
    settings = AuthSettings(
        issuer_url=as_url,  # pyright: ignore[reportArgumentType]
        resource_server_url=mcp_url,  # pyright: ignore[reportArgumentType]
        required_scopes=[SCOPE],
        validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(
            enabled=registration, valid_scopes=[SCOPE, EXTRA_SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    auth_app = Starlette(
        routes=create_auth_routes(
            provider,
            settings.issuer_url,
            client_registration_options=settings.client_registration_options,
            revocation_options=settings.revocation_options,
        )
    )
    server = _protected_mcp_server(settings, provider)
    mcp_app = server.sse_app() if sse else server.streamable_http_app()
    async with _serve(as_sock, auth_app), _serve(rs_sock, mcp_app):
        yield OAuthSetup(provider=provider, issuer=as_url, mcp_url=mcp_url)


__all__ = ["EXTRA_SCOPE", "SCOPE", "Counters", "MemoryProvider", "OAuthSetup", "oauth_servers"]
