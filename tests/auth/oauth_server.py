"""A real OAuth authorization server and a protected MCP server on 127.0.0.1, for tests.

The authorization server is the SDK's own (``create_auth_routes``: RFC 8414 metadata,
dynamic registration, authorize, token with PKCE, revoke, and the SEP-990 jwt-bearer grant)
over an in-memory provider that tests can steer: approve or deny, forget every client, expire
access tokens. Its token endpoint also takes the ``client_credentials`` grant (SEP-1046), with
``client_secret_basic``, ``client_secret_post`` or ``private_key_jwt`` (RFC 7523 §2.2), which
the SDK's server does not have. The MCP server is an ``MCPServer`` on another port that
requires a bearer token issued for it (RFC 8707 resource) with the ``mcp:tools`` scope, and
publishes RFC 9728 protected resource metadata pointing at the authorization server.

``legacy_servers`` is the MCP 2025-03-26 shape instead: no protected resource metadata, the
authorization server on the MCP server's own origin, its metadata at the origin's root.
"""

from __future__ import annotations

import base64
import secrets
import socket
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import unquote

import anyio
import jwt
import uvicorn
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

SCOPE = "mcp:tools"
EXTRA_SCOPE = "mcp:admin"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ID_JAG_TYP = "oauth-id-jag+jwt"
METADATA_PATH = "/.well-known/oauth-authorization-server"


@dataclass
class MachineClient:
    """A client of the ``client_credentials`` grant, registered out of band.

    Attributes:
        client_id: Its id.
        method: How it authenticates at the token endpoint.
        secret: Its secret (``client_secret_basic`` / ``client_secret_post``).
        public_key: The PEM public key its assertions are checked with (``private_key_jwt``).
        algorithm: The JWS algorithm it signs with.
    """

    client_id: str
    method: Literal["client_secret_basic", "client_secret_post", "private_key_jwt"] = "client_secret_basic"
    secret: str | None = None
    public_key: str | None = None
    algorithm: str = "ES256"


@dataclass
class IdJagTrust:
    """What the authorization server trusts ID-JAGs from: the identity provider's issuer and key."""

    issuer: str
    public_key: str


@dataclass
class Counters:
    """What the authorization server has seen."""

    registrations: int = 0
    authorizations: int = 0
    denials: int = 0
    code_exchanges: int = 0
    refreshes: int = 0
    rejected_tokens: int = 0
    client_credentials: int = 0
    identity_assertions: int = 0
    refused_token_requests: int = 0


@dataclass
class MemoryProvider:
    """An in-memory ``OAuthAuthorizationServerProvider`` that tests steer."""

    resource: str = ""
    issuer: str = ""
    deny: bool = False
    access_ttl: int = 3600
    machine_clients: dict[str, MachineClient] = field(default_factory=dict[str, MachineClient])
    """Clients of the client_credentials grant."""
    id_jag_trust: IdJagTrust | None = None
    """Where ID-JAGs come from (None: the jwt-bearer grant is refused)."""
    assertions: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """The claims of every client assertion and ID-JAG accepted."""
    seen_jti: set[str] = field(default_factory=set[str])
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
        """SEP-990 leg 2, checked the way the SDK's docstring asks (signature, typ, aud, sub, jti, client_id)."""
        trust = self.id_jag_trust
        if trust is None:
            raise TokenError(error="unsupported_grant_type")
        try:
            if jwt.get_unverified_header(params.assertion).get("typ") != ID_JAG_TYP:
                raise TokenError(error="invalid_grant", error_description="not an ID-JAG")
            claims: dict[str, Any] = jwt.decode(
                params.assertion,
                trust.public_key,
                algorithms=["ES256"],
                audience=[self.issuer, f"{self.issuer}/"],
                issuer=trust.issuer,
                options={"require": ["exp", "iat", "sub", "jti", "aud", "iss"]},
            )
        except jwt.PyJWTError as error:
            raise TokenError(error="invalid_grant", error_description=str(error)) from None
        if claims.get("client_id") != client.client_id:
            raise TokenError(error="invalid_grant", error_description="the ID-JAG is for another client")
        if claims["jti"] in self.seen_jti:
            raise TokenError(error="invalid_grant", error_description="replayed")
        if claims.get("resource") != self.resource:
            raise TokenError(error="invalid_target", error_description="the ID-JAG is for another resource")
        self.seen_jti.add(claims["jti"])
        self.seen.identity_assertions += 1
        self.assertions.append(claims)
        return self._issue(client.client_id, params.scopes or [SCOPE], claims["resource"], refresh=False)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, *, refresh: bool = True) -> OAuthToken:
        access, refresh_token = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        self.issued.add(access)
        expires_at = int(time.time()) + self.access_ttl
        self.access_tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires_at, resource=resource
        )
        if not refresh:
            return OAuthToken(access_token=access, expires_in=self.access_ttl, scope=" ".join(scopes))
        self.issued.add(refresh_token)
        self.refresh_tokens[refresh_token] = RefreshToken(
            token=refresh_token, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, expires_in=self.access_ttl, scope=" ".join(scopes), refresh_token=refresh_token
        )

    # ----- client_credentials (the SDK's server does not have it) -------------------------

    def client_credentials(self, request: Request, form: dict[str, str]) -> Response:
        """SEP-1046: authenticate the client as it registered, then issue a token (no refresh token)."""
        client = self._authenticate_machine(request, form)
        if client is None:
            self.seen.refused_token_requests += 1
            return _oauth_error("invalid_client", "client authentication failed", 401)
        self.seen.client_credentials += 1
        scopes = form["scope"].split() if form.get("scope") else [SCOPE]
        token = self._issue(client.client_id, scopes, form.get("resource"), refresh=False)
        return PydanticJSONResponse(content=token, headers={"Cache-Control": "no-store"})

    def _authenticate_machine(self, request: Request, form: dict[str, str]) -> MachineClient | None:
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            client = self.machine_clients.get(unquote(client_id))
            if client is None or client.method != "client_secret_basic" or "client_secret" in form:
                return None
            return client if secrets.compare_digest(unquote(secret), client.secret or "") else None
        if form.get("client_assertion_type") == CLIENT_ASSERTION_TYPE:
            assertion = form.get("client_assertion", "")
            try:
                client_id = jwt.decode(assertion, options={"verify_signature": False}).get("iss", "")
                client = self.machine_clients.get(client_id)
                if client is None or client.method != "private_key_jwt" or client.public_key is None:
                    return None
                claims: dict[str, Any] = jwt.decode(
                    assertion,
                    client.public_key,
                    algorithms=[client.algorithm],
                    audience=[self.issuer, f"{self.issuer}/"],
                    issuer=client.client_id,
                    options={"require": ["exp", "iat", "jti", "sub", "aud", "iss"]},
                )
            except jwt.PyJWTError:
                return None
            if claims["sub"] != client.client_id or claims["jti"] in self.seen_jti:
                return None
            self.seen_jti.add(claims["jti"])
            self.assertions.append(claims)
            return client
        client = self.machine_clients.get(form.get("client_id", ""))
        if client is None or client.method != "client_secret_post":
            return None
        return client if secrets.compare_digest(form.get("client_secret", ""), client.secret or "") else None

    def add_id_jag_client(self, client_id: str, secret: str) -> None:
        """A confidential client allowed the jwt-bearer grant (registered out of band)."""
        self.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=None,
            grant_types=[JWT_BEARER_GRANT_TYPE],
            token_endpoint_auth_method="client_secret_basic",
        )


def _oauth_error(error: str, description: str, status: int = 400) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


class _Verifier:
    def __init__(self, provider: MemoryProvider):
        self._provider = provider

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self._provider.load_access_token(token)


def bind_local() -> tuple[socket.socket, str]:
    """A listening socket on an ephemeral port of 127.0.0.1, and its base URL."""
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


@dataclass(frozen=True)
class SeenRequest:
    """One HTTP request as a server got it."""

    method: str
    path: str
    authorization: str | None
    """Its ``Authorization`` header, if it had one."""


class RequestLog:
    """An ASGI wrapper that notes every HTTP request before the app sees it."""

    def __init__(self, app: ASGIApp):
        self._app = app
        self.requests: list[SeenRequest] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers: list[tuple[bytes, bytes]] = scope["headers"]
            authorization = next((value.decode() for name, value in headers if name == b"authorization"), None)
            self.requests.append(SeenRequest(scope["method"], scope["path"], authorization))
        await self._app(scope, receive, send)


@dataclass
class OAuthSetup:
    """The running pair.

    Attributes:
        provider: The authorization server's state (steer it, read its counters).
        issuer: The authorization server's URL.
        mcp_url: The protected MCP endpoint.
        mcp_log: Every request the MCP server's origin got (its metadata included).
    """

    provider: MemoryProvider
    issuer: str
    mcp_url: str
    mcp_log: RequestLog | None = None


@asynccontextmanager
async def serve_app(sock: socket.socket, app: ASGIApp) -> AsyncGenerator[None]:
    """Serve ``app`` on ``sock`` (uvicorn) until the block ends."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2))
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:
                yield
            finally:
                server.should_exit = True


def _auth_routes(
    provider: MemoryProvider, settings: AuthSettings, *, metadata_issuer: str | None = None
) -> list[Route]:
    """The SDK's routes with two changes: the token endpoint also takes ``client_credentials``, and
    the metadata says so (and names ``metadata_issuer`` when given, for tests of the issuer check)."""
    registration = settings.client_registration_options or ClientRegistrationOptions()
    revocation = settings.revocation_options or RevocationOptions()
    sdk_routes = create_auth_routes(
        provider,
        settings.issuer_url,
        client_registration_options=registration,
        revocation_options=revocation,
        identity_assertion_enabled=True,
    )
    metadata = build_metadata(settings.issuer_url, None, registration, revocation, supports_identity_assertion=True)
    metadata.grant_types_supported = [*(metadata.grant_types_supported or []), "client_credentials"]
    metadata.token_endpoint_auth_methods_supported = ["client_secret_basic", "client_secret_post", "private_key_jwt"]
    metadata.token_endpoint_auth_signing_alg_values_supported = ["ES256", "RS256"]
    if metadata_issuer is not None:
        metadata.issuer = AnyHttpUrl(metadata_issuer)
    handler = TokenHandler(provider, ClientAuthenticator(provider), identity_assertion_enabled=True)

    async def token(request: Request) -> Response:
        form = {key: value for key, value in (await request.form()).items() if isinstance(value, str)}
        if form.get("grant_type") == "client_credentials":
            return provider.client_credentials(request, form)
        return await handler.handle(request)

    kept = [route for route in sdk_routes if route.path not in (METADATA_PATH, "/token")]
    return [
        Route(METADATA_PATH, MetadataHandler(metadata).handle, methods=["GET"]),
        Route("/token", token, methods=["POST"]),
        *kept,
    ]


@asynccontextmanager
async def oauth_servers(
    *,
    registration: bool = True,
    sse: bool = False,
    metadata_issuer_path: str | None = None,
    json_response: bool = False,
    more_tools: Callable[[MCPServer], None] | None = None,
) -> AsyncGenerator[OAuthSetup]:
    """An authorization server and a protected MCP server (streamable HTTP, or SSE), each on its own port.

    Args:
        registration: Whether the authorization server offers dynamic client registration.
        sse: Serve the MCP server over the legacy SSE transport.
        metadata_issuer_path: Make the authorization server's metadata name the issuer
            ``<its URL><path>`` instead of its URL (a document that breaks RFC 8414 §3.3).
        json_response: Streamable HTTP answers each POST with a JSON body (sent when the result
            is ready) instead of an SSE stream (whose headers go out at once).
        more_tools: Adds tools to the MCP server (besides ``echo`` and ``whoami``).
    """
    as_sock, as_url = bind_local()
    rs_sock, rs_url = bind_local()
    mcp_url = f"{rs_url}/sse" if sse else f"{rs_url}/mcp"
    provider = MemoryProvider(resource=mcp_url, issuer=as_url)
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
    metadata_issuer = f"{as_url}{metadata_issuer_path}" if metadata_issuer_path is not None else None
    auth_app = Starlette(routes=_auth_routes(provider, settings, metadata_issuer=metadata_issuer))
    server = _protected_mcp_server(settings, provider)
    if more_tools is not None:
        more_tools(server)
    mcp_log = RequestLog(server.sse_app() if sse else server.streamable_http_app(json_response=json_response))
    async with serve_app(as_sock, auth_app), serve_app(rs_sock, mcp_log):
        yield OAuthSetup(provider=provider, issuer=as_url, mcp_url=mcp_url, mcp_log=mcp_log)


OwnLocation = Literal["absent", "same", "other"]
"""What the issuer's own RFC 8414 location serves: nothing, the same document, or one naming another issuer."""


@asynccontextmanager
async def legacy_servers(
    *,
    issuer_path: str = "/oauth",
    own_location: OwnLocation = "absent",
    foreign: OAuthSetup | None = None,
    publish_metadata: bool = True,
) -> AsyncGenerator[OAuthSetup]:
    """An MCP 2025-03-26 server: no protected resource metadata; one origin serves the MCP endpoint
    (``/mcp``), the authorization server's endpoints (under ``issuer_path``) and, at the origin's
    root well-known URL, metadata naming the issuer ``<origin><issuer_path>``.

    Args:
        issuer_path: Where the authorization server lives on the origin (``""``: at its root).
        own_location: What ``/.well-known/oauth-authorization-server<issuer_path>`` serves.
        foreign: Another authorization server: the root document then names it (issuer and
            endpoints on its origin) instead of the one on this origin.
        publish_metadata: Whether there is a root document at all (without, a client can only
            use the 2025-03-26 default endpoints: ``issuer_path`` ``""``).
    """
    sock, origin = bind_local()
    mcp_url = f"{origin}/mcp"
    issuer = f"{origin}{issuer_path}"
    provider = MemoryProvider(resource=mcp_url, issuer=issuer)
    settings = AuthSettings(
        issuer_url=issuer,  # pyright: ignore[reportArgumentType]
        resource_server_url=None,
        required_scopes=[SCOPE],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=[SCOPE, EXTRA_SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    routes = _auth_routes(provider, settings)
    metadata_route = routes[0]
    endpoints = cast(list[BaseRoute], routes[1:])
    routes_here: list[BaseRoute] = [Mount(issuer_path, routes=endpoints)] if issuer_path else endpoints
    if not publish_metadata:
        pass
    elif foreign is not None:
        foreign_metadata = build_metadata(
            AnyHttpUrl(foreign.issuer), None, ClientRegistrationOptions(enabled=True), RevocationOptions()
        )
        routes_here.append(Route(METADATA_PATH, MetadataHandler(foreign_metadata).handle, methods=["GET"]))
    else:
        routes_here.append(Route(METADATA_PATH, metadata_route.endpoint, methods=["GET"]))
    if own_location == "same":
        routes_here.append(Route(f"{METADATA_PATH}{issuer_path}", metadata_route.endpoint, methods=["GET"]))
    elif own_location == "other":
        other = OAuthMetadata.model_validate(
            {
                "issuer": f"{origin}/elsewhere",
                "authorization_endpoint": f"{origin}/elsewhere/authorize",
                "token_endpoint": f"{origin}/elsewhere/token",
            }
        )
        routes_here.append(Route(f"{METADATA_PATH}{issuer_path}", MetadataHandler(other).handle, methods=["GET"]))
    mcp_app = _protected_mcp_server(settings, provider).streamable_http_app()
    auth_app = Starlette(routes=routes_here)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/mcp":
            await auth_app(scope, receive, send)
        else:
            await mcp_app(scope, receive, send)

    async with serve_app(sock, app):
        yield OAuthSetup(provider=provider, issuer=issuer, mcp_url=mcp_url)


__all__ = [
    "EXTRA_SCOPE",
    "SCOPE",
    "Counters",
    "IdJagTrust",
    "MachineClient",
    "MemoryProvider",
    "OAuthSetup",
    "RequestLog",
    "SeenRequest",
    "bind_local",
    "legacy_servers",
    "oauth_servers",
    "serve_app",
]
