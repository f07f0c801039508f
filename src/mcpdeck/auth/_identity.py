"""Enterprise-managed authorization (SEP-990): the user's ID token, traded for an MCP access token.

Two legs, no browser:

1. At the enterprise identity provider's token endpoint, an RFC 8693 token exchange: the user's
   ID token (``subject_token``) for an Identity Assertion Authorization Grant (ID-JAG,
   ``urn:ietf:params:oauth:token-type:id-jag``) whose audience is the MCP server's authorization
   server (its issuer) and whose resource is the MCP server (its exact URL).
2. At that authorization server, the RFC 7523 jwt-bearer grant with the ID-JAG as ``assertion``:
   the SDK's ``IdentityAssertionOAuthProvider``, which fetches the authorization server's metadata
   from the issuer's own RFC 8414 location (issuer checked strictly, token endpoint on the issuer's
   origin) and authenticates with the client secret.

Which authorization server: ``oauth.issuer`` when configured (then the MCP server is never asked).
Otherwise the one the MCP server's protected resource metadata (RFC 9728) names, with the same
resource check the SDK's authorization-code flow makes; the identity provider still decides, by
its policy, whether it issues an ID-JAG for that audience at all.
"""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Literal, cast
from urllib.parse import quote, urlsplit

import httpx2
from mcp.client.auth import OAuthFlowError, TokenStorage
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from mcpdeck._sdk.oauth import RedirectFollowingAuth
from mcpdeck.auth._errors import AuthorizationError
from mcpdeck.auth._storage import ConfiguredClient, ServerTokenStorage

__all__ = ["ID_JAG_TOKEN_TYPE", "IdJagExchange", "IdentityAssertionAuth", "secure_url"]

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
_TIMEOUT = 30.0
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def secure_url(url: str) -> bool:
    """Whether ``url`` may carry a credential: https, or http to a loopback address."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    return parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK


def _oauth_error_text(response: httpx2.Response) -> str:
    """``HTTP 400 invalid_grant: description`` from an OAuth error answer (never its other content)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        fields = cast(dict[str, object], body)
        error, description = fields.get("error"), fields.get("error_description")
        if isinstance(error, str):
            text = f"HTTP {response.status_code} {error}"
            return f"{text}: {description}"[:300] if isinstance(description, str) else text
    return f"HTTP {response.status_code}"


@dataclass
class IdJagExchange:
    """Leg 1: the RFC 8693 token exchange at the identity provider (the SDK's ``assertion_provider``).

    Called with the authorization server's issuer (the ID-JAG's audience) and the MCP server's
    resource identifier; returns the ID-JAG. The ID token and secret are sent to the identity
    provider's token endpoint only.
    """

    server: str
    issuer: str
    client_id: str
    id_token: str = field(repr=False)
    client_secret: str | None = field(default=None, repr=False)
    method: Literal["client_secret_basic", "client_secret_post", "none"] = "none"
    token_endpoint: str | None = None
    scope: str | None = None

    async def __call__(self, audience: str, resource: str) -> str:
        async with httpx2.AsyncClient(timeout=_TIMEOUT, follow_redirects=False) as http:
            endpoint = self.token_endpoint or await self._discover(http)
            self.token_endpoint = endpoint
            data = {
                "grant_type": TOKEN_EXCHANGE_GRANT,
                "requested_token_type": ID_JAG_TOKEN_TYPE,
                "audience": audience,
                "resource": resource,
                "subject_token": self.id_token,
                "subject_token_type": ID_TOKEN_TYPE,
            }
            if self.scope:
                data["scope"] = self.scope
            headers = {"Accept": "application/json"}
            if self.method == "client_secret_basic" and self.client_secret is not None:
                pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
                headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
            else:
                data["client_id"] = self.client_id
                if self.method == "client_secret_post" and self.client_secret is not None:
                    data["client_secret"] = self.client_secret
            try:
                response = await http.post(endpoint, data=data, headers=headers)
            except httpx2.HTTPError as error:
                raise self._error(f"cannot reach its token endpoint {endpoint}: {type(error).__name__}") from None
        if response.status_code != 200:
            raise self._error(f"it refused the token exchange ({_oauth_error_text(response)})")
        try:
            answer = response.json()
        except ValueError:
            answer = None
        fields = cast(dict[str, object], answer) if isinstance(answer, dict) else {}
        grant, kind = fields.get("access_token"), fields.get("issued_token_type")
        if not isinstance(grant, str) or not grant:
            raise self._error("its token exchange answer holds no access_token")
        if kind != ID_JAG_TOKEN_TYPE:
            raise self._error(f"it issued a {kind!r}, not an ID-JAG ({ID_JAG_TOKEN_TYPE})")
        return grant

    async def _discover(self, http: httpx2.AsyncClient) -> str:
        """The identity provider's token endpoint, from its metadata (RFC 8414 or OpenID Connect Discovery)."""
        for url in build_oauth_authorization_server_metadata_discovery_urls(self.issuer, self.issuer):
            try:
                response = await http.get(url, headers={"Accept": "application/json"})
            except httpx2.HTTPError as error:
                raise self._error(f"cannot reach {url}: {type(error).__name__}") from None
            if response.status_code != 200:
                continue
            try:
                metadata = OAuthMetadata.model_validate_json(response.content)
            except ValueError:
                continue
            if not issuers_match(str(metadata.issuer), self.issuer):
                raise self._error(f"the metadata at {url} names the issuer {metadata.issuer} (RFC 8414 §3.3)")
            endpoint = str(metadata.token_endpoint)
            if not secure_url(endpoint):
                raise self._error(f"its token endpoint {endpoint} is not https; not sending it the ID token")
            return endpoint
        raise self._error("it publishes no metadata naming its token endpoint; set identityProvider.tokenEndpoint")

    def _error(self, what: str) -> AuthorizationError:
        return AuthorizationError(self.server, f"identity provider {self.issuer}: {what}")


class _RemainingLifetime:
    """The token storage as the SDK's identity-assertion provider sees it: a stored token's
    ``expires_in`` is what is left of it (the SDK counts it from when it reads it)."""

    def __init__(self, storage: ServerTokenStorage):
        self._storage = storage

    async def get_tokens(self) -> OAuthToken | None:
        tokens = await self._storage.get_tokens()
        expires_at = await self._storage.expires_at()
        if tokens is None or expires_at is None:
            return tokens
        return tokens.model_copy(update={"expires_in": max(int(expires_at - time.time()), 0)})

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._storage.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        return None


def _needs_authorization(response: httpx2.Response) -> bool:
    if response.status_code == 401:
        return True
    return response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"


class IdentityAssertionAuth(RedirectFollowingAuth):
    """``httpx2.Auth`` of one server with ``oauth.grantType: "identity_assertion"``.

    Build it with ``mcpdeck.auth.build_auth``. Wraps the SDK's ``IdentityAssertionOAuthProvider``,
    made once the authorization server is known (at once with ``oauth.issuer``, else from the
    MCP server's protected resource metadata at its first 401).
    """

    requires_response_body = True

    def __init__(
        self,
        client: ConfiguredClient,
        *,
        secret: str,
        method: Literal["client_secret_basic", "client_secret_post"],
        exchange: IdJagExchange,
    ):
        self.server = client.server
        self._client = client
        self._storage: TokenStorage = _RemainingLifetime(client.storage)
        self._secret = secret
        self._method: Literal["client_secret_basic", "client_secret_post"] = method
        self._exchange = exchange
        self._provider = self._build(client.issuer) if client.issuer is not None else None

    def _build(self, issuer: str) -> IdentityAssertionOAuthProvider:
        return IdentityAssertionOAuthProvider(
            server_url=self._client.url,
            storage=self._storage,
            client_id=self._client.client_id,
            client_secret=self._secret,
            issuer=issuer,
            assertion_provider=self._exchange,
            scope=self._client.scope,
            token_endpoint_auth_method=self._method,
        )

    async def flow_of(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        try:
            provider = self._provider
            first: httpx2.Response | None = None
            if provider is None:
                first = yield request
                if not _needs_authorization(first):
                    return
                issuer = None
                for url in build_protected_resource_metadata_discovery_urls(
                    extract_resource_metadata_from_www_auth(first), self._client.url
                ):
                    answer = yield create_oauth_metadata_request(url)
                    if answer.status_code >= 500 or answer.status_code == 429:
                        raise AuthorizationError(
                            self.server, f"protected resource metadata request failed: HTTP {answer.status_code}"
                        )
                    metadata = await handle_protected_resource_response(answer)
                    if metadata is not None:
                        self._check_resource(str(metadata.resource))
                        issuer = str(metadata.authorization_servers[0])
                        break
                if issuer is None:
                    raise AuthorizationError(
                        self.server,
                        "the server publishes no protected resource metadata (RFC 9728) naming its authorization "
                        "server; set oauth.issuer",
                    )
                provider = self._provider = self._provider or self._build(issuer)
            flow = provider.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                if first is not None and outgoing is request and "authorization" not in request.headers:
                    response = first  # it would send the request just as it went: its answer is known
                else:
                    response = yield outgoing
                while True:
                    outgoing = await flow.asend(response)
                    response = yield outgoing
            except StopAsyncIteration:
                pass
            finally:
                await flow.aclose()
        except OAuthFlowError as error:
            text = " ".join(str(error).split())[:400]
            raise AuthorizationError(self.server, f"authorization failed: {text}") from error

    def _check_resource(self, resource: str) -> None:
        """RFC 9728 §3.3 / RFC 8707: the metadata must be about this server (as the SDK checks it)."""
        expected = resource_url_from_server_url(self._client.url)
        if not check_resource_allowed(requested_resource=expected, configured_resource=resource):
            raise AuthorizationError(
                self.server, f"the protected resource metadata is for {resource}, not {expected}; not authorizing"
            )
