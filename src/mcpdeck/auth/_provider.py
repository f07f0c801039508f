"""The SDK's OAuth client, with what a host needs around it.

The SDK's ``OAuthClientProvider`` does discovery, registration, PKCE, scopes and refresh.
``DeckOAuthProvider`` adds:

- a gate: without an interaction it never starts an authorization the user would have to
  finish; a server that needs one fails with "needs authorization: run `mcpdeck auth login`";
- the local callback listener, on a port reserved before registration, so the redirect URI
  registered is the one the browser comes back to (and, next time, the same one again);
- persistence the SDK leaves out: the token's expiry (an expired token is refreshed before
  it is sent) and the authorization server's metadata (a refresh goes to its token endpoint);
- one refresh attempt when a token it thought valid is refused, before asking for a login;
- stale registrations cleaned up: a refresh refused with ``invalid_client`` drops the
  registration, so the next login registers afresh;
- configured scopes merged into whatever the server asks for;
- a 401 from a server that publishes no OAuth metadata reported as such (its credentials
  belong in ``headers``), not as a login to do.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import cast
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    union_scopes,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata, OAuthMetadata, ProtectedResourceMetadata
from pydantic import AnyUrl, ConfigDict, Field, ValidationInfo, field_validator

from mcpdeck.auth._callback import CallbackListener, reserve_port
from mcpdeck.auth._errors import AuthorizationError, AuthorizationRequiredError, AuthorizationTimeoutError
from mcpdeck.auth._interaction import OAuthInteraction
from mcpdeck.auth._storage import ServerTokenStorage

__all__ = ["CallbackPlan", "DeckClientMetadata", "DeckOAuthProvider"]

logger = logging.getLogger(__name__)

_LOOPBACK_HOSTS = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}
_EXPIRED = 1.0
"""A token expiry long past (the SDK reads 0 as "never expires")."""


class DeckClientMetadata(OAuthClientMetadata):
    """The client metadata mcpdeck registers with; configured scopes join every scope it asks for."""

    model_config = ConfigDict(validate_assignment=True)

    extra_scopes: list[str] = Field(default_factory=list[str], exclude=True)
    """Scopes from the config, added to the scopes the server asks for."""

    @field_validator("scope")
    @classmethod
    def _with_configured_scopes(cls, value: str | None, info: ValidationInfo) -> str | None:
        extra: list[str] = info.data.get("extra_scopes") or []
        return union_scopes(value, " ".join(extra) or None)


@dataclass(frozen=True)
class CallbackPlan:
    """Where the local callback listener listens.

    Attributes:
        bind_host: The address to bind (``127.0.0.1`` or ``::1``).
        uri_host: The host as written in the redirect URI (``127.0.0.1``, ``localhost``, ``[::1]``).
        port: The port; None for "any free one" (or the one the stored registration uses).
        path: The callback path.
    """

    bind_host: str = "127.0.0.1"
    uri_host: str = "127.0.0.1"
    port: int | None = None
    path: str = "/callback"

    def uri(self, port: int) -> str:
        """The redirect URI for a listener on ``port``."""
        return f"http://{self.uri_host}:{port}{self.path}"

    def matches(self, uri: str) -> int | None:
        """The port of ``uri`` if it is a redirect URI this plan could listen for, else None."""
        parts = urlsplit(uri)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            return None
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        if host != self.uri_host or (parts.path or "/") != self.path:
            return None
        if self.port is not None and parts.port != self.port:
            return None
        return parts.port

    @classmethod
    def parse(cls, redirect_uri: str) -> CallbackPlan:
        """The plan for a configured loopback redirect URI.

        Raises:
            ValueError: It is not ``http://`` on 127.0.0.1, localhost or [::1] with a port.
        """
        parts = urlsplit(redirect_uri)
        host = parts.hostname or ""
        if parts.scheme != "http" or host not in _LOOPBACK_HOSTS or parts.port is None:
            raise ValueError("must be http:// on 127.0.0.1, localhost or [::1] with a port")
        uri_host = f"[{host}]" if ":" in host else host
        return cls(_LOOPBACK_HOSTS[host], uri_host, parts.port, parts.path or "/")


def _grant_of(request: httpx2.Request) -> str | None:
    """The ``grant_type`` of a token request (None for anything else)."""
    if request.method != "POST" or not request.headers.get("content-type", "").startswith(
        "application/x-www-form-urlencoded"
    ):
        return None
    values = parse_qs(request.content.decode("utf-8", errors="replace")).get("grant_type")
    return values[0] if values else None


async def _offers_oauth(response: httpx2.Response) -> bool | None:
    """What a discovery answer says: True (OAuth metadata), False (none here), None (can't tell: a server error)."""
    if response.status_code >= 500 or response.status_code == 429:
        return None
    if response.status_code != 200:
        return False
    body = await response.aread()
    for model in (ProtectedResourceMetadata, OAuthMetadata):
        try:
            model.model_validate_json(body)
        except ValueError:
            continue
        return True
    return False


async def _oauth_error(response: httpx2.Response) -> str | None:
    """The ``error`` code of an OAuth error response, if it has one."""
    try:
        body = json.loads(await response.aread())
    except (ValueError, httpx2.StreamError):
        return None
    error = cast(dict[str, object], body).get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) else None


class DeckOAuthProvider(OAuthClientProvider):
    """``OAuthClientProvider`` for one server of a host. Build it with ``mcpdeck.auth.build_auth``."""

    def __init__(
        self,
        server: str,
        url: str,
        *,
        storage: ServerTokenStorage,
        client_metadata: DeckClientMetadata,
        interaction: OAuthInteraction | None,
        callback: CallbackPlan,
        client_metadata_url: str | None = None,
    ):
        super().__init__(
            url,
            client_metadata,
            storage,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=client_metadata_url,
        )
        self.server = server
        self._storage = storage
        self._interaction = interaction
        self._plan = callback
        self._reserved: socket.socket | None = None
        self._listener: CallbackListener | None = None
        self._saved_metadata: OAuthMetadata | None = None
        self._reused_registration = False  # this login goes ahead with a registration from an earlier run

    # ----- state the SDK does not keep ----------------------------------------------------

    async def _initialize(self) -> None:
        await super()._initialize()
        context = self.context
        if context.current_tokens is not None:
            expires_at = await self._storage.expires_at()
            if expires_at is not None:
                context.token_expiry_time = max(expires_at, _EXPIRED)
        if context.oauth_metadata is None:
            metadata, resource = await self._storage.discovery()
            if metadata is not None:
                context.oauth_metadata = self._saved_metadata = metadata
                context.auth_server_url = str(resource.authorization_servers[0]) if resource else None
                context.protected_resource_metadata = resource

    async def _remember_discovery(self) -> None:
        context = self.context
        metadata = context.oauth_metadata
        if metadata is None or metadata is self._saved_metadata or context.current_tokens is None:
            return
        self._saved_metadata = metadata
        await self._storage.save_discovery(metadata, context.protected_resource_metadata)

    # ----- the flow -------------------------------------------------------------------------

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, watched: gate, listener, one refresh on a refused token, cleanup."""
        retried = reserved = False
        try:
            while True:
                restart = refreshed = False
                flow = super()._auth_flow(request)
                try:
                    outgoing = await flow.__anext__()
                    while True:
                        response = yield outgoing
                        grant = _grant_of(outgoing) if outgoing is not request else None
                        if grant == "refresh_token":
                            refreshed = True
                            await self._after_refresh(response)
                        elif grant == "authorization_code":
                            await self._after_code_exchange(response)
                        elif outgoing is request and self._needs_login(response):
                            if not (retried or refreshed) and self._sent_refreshable_token():
                                retried = restart = True  # the token was refused early: refresh it, once
                                self.context.token_expiry_time = _EXPIRED
                                break
                            if response.status_code == 401 and self.context.oauth_metadata is None:
                                offered = True
                                for url in self._discovery_urls(response):
                                    offered = await _offers_oauth((yield create_oauth_metadata_request(url)))
                                    if offered is not False:
                                        break
                                if offered is False:
                                    raise self._no_oauth(request)
                            if self._interaction is None:
                                if response.status_code == 401:
                                    raise AuthorizationRequiredError(self.server)
                                return  # a step-up: this request fails with its 403, the session stays
                            reserved = await self._prepare_redirect() or reserved
                        try:
                            outgoing = await flow.asend(response)
                        except StopAsyncIteration:
                            break
                finally:
                    await flow.aclose()
                if not restart:
                    break
        except OAuthFlowError as error:
            raise self._failure(error) from error
        finally:
            if reserved:
                self._release()
        await self._remember_discovery()

    def _discovery_urls(self, response: httpx2.Response) -> list[str]:
        """Where protected resource metadata (RFC 9728), or legacy authorization server metadata, would be."""
        server_url = self.context.server_url
        urls = build_protected_resource_metadata_discovery_urls(
            extract_resource_metadata_from_www_auth(response), server_url
        )
        parts = urlsplit(server_url)
        return [*urls, f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server"]

    def _no_oauth(self, request: httpx2.Request) -> AuthorizationError:
        return AuthorizationError(
            self.server,
            f"HTTP 401 from {request.url.copy_with(query=None)}: the server wants credentials but offers no OAuth; "
            'give them in its "headers" (e.g. "Authorization": "Bearer ${TOKEN}")',
        )

    def _needs_login(self, response: httpx2.Response) -> bool:
        if response.status_code == 401:
            return True
        return response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope"

    def _sent_refreshable_token(self) -> bool:
        context = self.context
        return context.is_token_valid() and context.can_refresh_token()

    async def _after_refresh(self, response: httpx2.Response) -> None:
        if response.status_code not in (400, 401):
            return
        error = await _oauth_error(response)
        logger.info("server %r: the token refresh was refused (%s)", self.server, error or response.status_code)
        if error == "invalid_client" and self._storage.configured_client is None:
            self.context.client_info = None  # a login now registers afresh
            await self._storage.forget_client()
        else:
            await self._storage.forget_tokens()

    async def _after_code_exchange(self, response: httpx2.Response) -> None:
        if response.status_code in (400, 401) and self._storage.configured_client is None:
            if await _oauth_error(response) == "invalid_client":
                await self._storage.forget_client()

    def _failure(self, error: OAuthFlowError) -> AuthorizationError:
        text = " ".join(str(error).split())[:400]
        hint = self._stale_hint() if self.context.client_info is not None else ""
        return AuthorizationError(self.server, f"authorization failed: {text}{hint}")

    def _stale_hint(self) -> str:
        if self._storage.configured_client is not None:
            return ""
        return (
            "; if the authorization server said it does not know the client, "
            f"run `mcpdeck auth logout {self.server}` and log in again"
        )

    # ----- the hand-off ----------------------------------------------------------------------

    async def _prepare_redirect(self) -> bool:
        """Reserve the callback port and set the redirect URI, before the SDK registers a client.

        Returns whether a port was reserved now (the caller then releases it if it is not used).
        """
        if self._reserved is not None:
            return False
        plan = self._plan
        client = self.context.client_info
        dynamic = client is not None and self._storage.configured_client is None
        registered = [str(uri) for uri in (client.redirect_uris or [])] if client is not None else []
        ports = [port for uri in registered if (port := plan.matches(uri)) is not None]
        port = plan.port if plan.port is not None else (ports[0] if ports else 0)
        try:
            sock = reserve_port(plan.bind_host, port)
        except OSError as error:
            if plan.port is not None or not port:
                where = f"{plan.bind_host}:{port}"
                raise AuthorizationError(
                    self.server,
                    f"cannot listen on {where} for the browser's answer ({error.strerror}); "
                    "free that port or set another oauth.callbackPort",
                ) from error
            sock = reserve_port(plan.bind_host, 0)  # the registration's port is taken: register again
        self._reserved = sock
        uri = plan.uri(sock.getsockname()[1])
        if dynamic and uri not in registered:
            logger.info("server %r: the stored registration does not cover %s; registering again", self.server, uri)
            self.context.client_info = None
            await self._storage.forget_client()
        self._reused_registration = dynamic and self.context.client_info is not None
        self.context.client_metadata.redirect_uris = [AnyUrl(uri)]
        return True

    def _release(self) -> None:
        if self._reserved is not None:
            self._reserved.close()
            self._reserved = None

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        if self._interaction is None:
            raise AuthorizationRequiredError(self.server)
        await self._prepare_redirect()
        sock, self._reserved = self._reserved, None
        assert sock is not None
        uri = str(self.context.client_metadata.redirect_uris[0]) if self.context.client_metadata.redirect_uris else ""
        async with CallbackListener.serve(self.server, sock, uri) as listener:
            self._listener = listener
            try:
                return await super()._perform_authorization_code_grant()
            except AuthorizationTimeoutError as error:
                if not self._reused_registration:
                    raise
                # The browser may be showing the authorization server's "unknown client" page.
                raise AuthorizationTimeoutError(self.server, error.reason + self._stale_hint()) from error
            finally:
                self._listener = None

    async def _redirect(self, authorization_url: str) -> None:
        assert self._interaction is not None and self._listener is not None
        self._listener.expect(parse_qs(urlsplit(authorization_url).query).get("state", [None])[0])
        await self._interaction.redirect(self.server, authorization_url)

    async def _callback(self) -> AuthorizationCodeResult:
        assert self._interaction is not None and self._listener is not None
        return await self._interaction.callback(self.server, self._listener)
