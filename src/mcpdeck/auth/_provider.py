"""The SDK's OAuth client, with what a host needs around it.

The SDK's ``OAuthClientProvider`` does discovery, registration, PKCE, scopes and refresh.
``DeckFlow`` is what mcpdeck adds to any of the SDK's providers built on it (the
authorization-code ``DeckOAuthProvider`` here, the client-credentials ones in ``_machine``):

- persistence the SDK leaves out: the token's expiry (an expired token is refreshed before
  it is sent) and the authorization server's metadata (a refresh goes to its token endpoint);
- one refresh attempt when a token it thought valid is refused, before authorizing again;
- a 401 from a server that publishes no OAuth metadata reported as such (its credentials
  belong in ``headers``), not as a login to do;
- the MCP 2025-03-26 path for a server without protected resource metadata, including an
  authorization server on a path of the server's own origin (see ``_legacy``);
- the SDK's flow errors turned into ``AuthorizationError`` (a failure no retry or other
  transport fixes);
- no cost where nothing is needed (``async_auth_flow``): a server with no stored tokens and
  no configured client gets its requests untouched until it answers 401, and a request
  with a valid token goes out without waiting for the SDK's lock.

``DeckOAuthProvider`` (authorization code) adds:

- a gate: without an interaction it never starts an authorization the user would have to
  finish; a server that needs one fails with "needs authorization: run `mcpdeck auth login`";
- the local callback listener, on a port reserved before registration, so the redirect URI
  registered is the one the browser comes back to (and, next time, the same one again);
- stale registrations cleaned up: a refresh refused with ``invalid_client`` drops the
  registration, so the next login registers afresh;
- configured scopes merged into whatever the server asks for;
- with an interaction, the MCP 2025-03-26 default endpoints (``/authorize``, ``/token``,
  ``/register`` on the server's origin) for a server that publishes no metadata at all.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Literal, TypeVar, cast
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    union_scopes,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata, OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import AnyUrl, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from mcpdeck.auth._callback import CallbackListener, reserve_port
from mcpdeck.auth._errors import (
    AuthorizationError,
    AuthorizationRequiredError,
    AuthorizationTimeoutError,
    login_hint,
)
from mcpdeck.auth._interaction import OAuthInteraction
from mcpdeck.auth._legacy import issuer_location, judge_legacy_issuer, legacy_metadata_url
from mcpdeck.auth._storage import ServerTokenStorage

__all__ = ["CallbackPlan", "DeckClientMetadata", "DeckFlow", "DeckOAuthProvider"]

logger = logging.getLogger(__name__)

_LOOPBACK_HOSTS = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}
_EXPIRED = 1.0
"""A token expiry long past (the SDK reads 0 as "never expires")."""

_Metadata = TypeVar("_Metadata", bound=BaseModel)


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


async def _read_metadata(response: httpx2.Response, model: type[_Metadata]) -> _Metadata | Literal["absent", "unknown"]:
    """What a discovery answer holds: the metadata, ``absent`` (none here), or ``unknown`` (a server error)."""
    if response.status_code >= 500 or response.status_code == 429:
        return "unknown"
    if response.status_code != 200:
        return "absent"
    try:
        return model.model_validate_json(await response.aread())
    except ValueError:
        return "absent"


async def _oauth_error(response: httpx2.Response) -> str | None:
    """The ``error`` code of an OAuth error response, if it has one."""
    try:
        body = json.loads(await response.aread())
    except (ValueError, httpx2.StreamError):
        return None
    error = cast(dict[str, object], body).get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) else None


class DeckFlow(OAuthClientProvider):
    """What mcpdeck adds around one of the SDK's ``OAuthClientProvider`` flows (see the module docstring).

    A subclass calls ``_deck_setup`` after the SDK's ``__init__`` and may override the hooks
    ``_may_use_default_endpoints``, ``_before_authorization``, ``_after_token_request`` and
    ``_end_flow``.
    """

    server: str
    _storage: ServerTokenStorage
    _saved_metadata: OAuthMetadata | None
    _legacy_issuer: str | None
    _passive: bool | None

    def _deck_setup(self, server: str, storage: ServerTokenStorage) -> None:
        self.server = server
        self._storage = storage
        self._saved_metadata = None
        self._legacy_issuer = None
        """The issuer accepted on the MCP 2025-03-26 path when it is a path of the server's origin."""
        self._passive = None
        """Whether requests go out untouched until the server asks for authorization (None: not known yet)."""

    # ----- hooks ------------------------------------------------------------------------------

    def _may_use_default_endpoints(self) -> bool:
        """Whether a server that publishes no OAuth metadata gets the MCP 2025-03-26 default endpoints."""
        return False

    def _may_pass_through(self) -> bool:
        """Whether, with no stored tokens, requests may go out untouched until the server asks for authorization."""
        return False

    async def _before_authorization(self, response: httpx2.Response) -> bool:
        """The request needs authorization (``response`` is its 401 or 403); False ends the flow with it."""
        return True

    async def _after_token_request(self, grant: str, response: httpx2.Response) -> None:
        """A token request with ``grant`` (other than a refresh) was answered."""

    def _end_flow(self) -> None:
        """The flow of one request ended (however it ended)."""

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

    def _expected_issuer(self) -> str:
        """The SDK's expected issuer, except on the 2025-03-26 path with an issuer accepted by ``_legacy``."""
        if self.context.auth_server_url is None and self._legacy_issuer is not None:
            return self._legacy_issuer
        return super()._expected_issuer()

    # ----- the flow -------------------------------------------------------------------------

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, entered only when a request needs it.

        The SDK's flow holds its lock from before a request is sent until its response
        arrives, so an HTTP client with that auth has one request in flight at a time. Two
        kinds of request skip it:

        - Passive (no stored tokens, no configured client; decided at the first request):
          the request goes out as it is, which is all the SDK's flow would do with it.
        - A valid token at hand (see ``_token_at_hand``): the request goes out with it.

        A 401 (or a 403 ``insufficient_scope``) then enters the SDK's flow, under its lock,
        with the answer already known: if the flow would send the request just as it went,
        it gets that answer instead of a second round trip, so the wire sees what it sees
        without the shortcut. Refreshes and authorizations still happen only under the lock,
        one at a time; see ``_token_at_hand`` for why reading the token outside it is safe.
        """
        if self._passive is None:
            await self._settle()
        known: httpx2.Response | None = None
        sent: str | None = None
        if self._passive or self._token_at_hand():
            if not self._passive:
                self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
                self._add_auth_header(request)
            sent = request.headers.get("authorization")
            response = yield request
            if not self._needs_login(response):
                return
            self._passive = False  # the server asks for authorization: the SDK's flow from now on
            known = response
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            if known is not None and outgoing is request and request.headers.get("authorization") == sent:
                outgoing = await flow.asend(known)  # the request as it went: its answer is known
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _settle(self) -> None:
        """At the first request: load what is stored, and decide whether requests pass untouched."""
        async with self.context.lock:
            if not self._initialized:
                await self._initialize()
            if self._passive is None:
                self._passive = self.context.current_tokens is None and self._may_pass_through()

    def _token_at_hand(self) -> bool:
        """Whether a request may go out with the current token without taking the SDK's lock.

        The lock keeps two things to one at a time: loading from storage, and changing the
        tokens (a refresh, whose refresh token may be single-use, or an authorization). This
        path does neither: it needs the tokens loaded, a token not expired, and nobody in
        the flow right now (during a refresh or a login, requests wait for its outcome as
        they always did). It only reads ``current_tokens``, with no ``await`` between the
        check and the header, so it sends a token the flow considered good at that instant.
        If the server refuses it, the request enters the flow under the lock: a token
        refreshed meanwhile is used (one refresh for all), else the flow judges the refusal
        as if the request had been sent under the lock (``async_auth_flow``).
        """
        context = self.context
        return self._initialized and not context.lock.locked() and context.is_token_valid()

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, watched: discovery checked first, one refresh on a refused token, cleanup."""
        retried = False
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
                        elif grant is not None:
                            await self._after_token_request(grant, response)
                        elif outgoing is request and self._needs_login(response):
                            if not (retried or refreshed) and self._sent_refreshable_token():
                                retried = restart = True  # the token was refused early: refresh it, once
                                self.context.token_expiry_time = _EXPIRED
                                break
                            context = self.context
                            if response.status_code == 401 and (
                                context.oauth_metadata is None or context.protected_resource_metadata is None
                            ):
                                # Where is the authorization server? Asked before the SDK's flow goes on,
                                # to tell "no OAuth here" from a login, and to judge a 2025-03-26 issuer.
                                found: ProtectedResourceMetadata | Literal["absent", "unknown"] = "absent"
                                for url in build_protected_resource_metadata_discovery_urls(
                                    extract_resource_metadata_from_www_auth(response), context.server_url
                                ):
                                    answer = yield create_oauth_metadata_request(url)
                                    found = await _read_metadata(answer, ProtectedResourceMetadata)
                                    if found != "absent":
                                        break
                                if found == "absent":  # no protected resource metadata: MCP 2025-03-26
                                    answer = yield create_oauth_metadata_request(
                                        legacy_metadata_url(context.server_url)
                                    )
                                    legacy = await _read_metadata(answer, OAuthMetadata)
                                    self._legacy_issuer = None
                                    if isinstance(legacy, OAuthMetadata):
                                        issuer = str(legacy.issuer)
                                        verdict = judge_legacy_issuer(context.server_url, legacy)
                                        if verdict in ("cross-origin", "malformed"):
                                            raise self._refused_issuer(issuer, verdict)
                                        if verdict == "same-origin":
                                            own = yield create_oauth_metadata_request(issuer_location(issuer))
                                            self._legacy_issuer = await self._confirm_legacy_issuer(issuer, own)
                                    elif legacy == "absent" and not self._may_use_default_endpoints():
                                        raise self._no_oauth(request)
                            if not await self._before_authorization(response):
                                return
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
            self._end_flow()
        await self._remember_discovery()

    async def _confirm_legacy_issuer(self, issuer: str, own: httpx2.Response) -> str:
        """Judge a same-origin issuer by what its own RFC 8414 location says (see ``_legacy``)."""
        found = await _read_metadata(own, OAuthMetadata)
        where = issuer_location(issuer)
        if found == "unknown":
            raise AuthorizationError(
                self.server, f"cannot check the authorization server {issuer}: HTTP {own.status_code} from {where}"
            )
        if found == "absent":
            logger.info(
                "server %r: no protected resource metadata (MCP 2025-03-26); accepting the authorization server "
                "issuer %s, on the server's own origin, though nothing is published at %s",
                self.server,
                issuer,
                where,
            )
            return issuer
        if str(found.issuer) != issuer:
            raise AuthorizationError(
                self.server,
                f"the authorization server metadata names the issuer {issuer}, but the metadata at {where} "
                f"names {found.issuer} (RFC 8414 §3.3); not authorizing",
            )
        logger.info("server %r: authorization server %s confirmed at %s", self.server, issuer, where)
        return issuer

    def _refused_issuer(self, issuer: str, verdict: str) -> AuthorizationError:
        where = legacy_metadata_url(self.context.server_url)
        why = "is not an issuer URL" if verdict == "malformed" else "is on another origin than the server"
        return AuthorizationError(
            self.server,
            f"the authorization server metadata at {where} names the issuer {issuer}, which {why} "
            "(RFC 8414 §3.3); not authorizing",
        )

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

    def _failure(self, error: OAuthFlowError) -> AuthorizationError:
        text = " ".join(str(error).split())[:400]
        hint = self._stale_hint() if self.context.client_info is not None else ""
        if isinstance(error, OAuthRegistrationError) and self.context.oauth_metadata is None:
            hint += (
                "; the server publishes no OAuth metadata, so this was the MCP 2025-03-26 default endpoint; "
                'if the server wants other credentials, give them in its "headers"'
            )
        return AuthorizationError(self.server, f"authorization failed: {text}{hint}")

    def _stale_hint(self) -> str:
        if self._storage.configured_client is not None:
            return ""
        return (
            "; if the authorization server said it does not know the client, "
            f"run `mcpdeck auth logout {self.server}` and log in again"
        )


class DeckOAuthProvider(DeckFlow):
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
        self._deck_setup(server, storage)
        self._interaction = interaction
        self._plan = callback
        self._reserved: socket.socket | None = None
        self._listener: CallbackListener | None = None
        self._reused_registration = False  # this login goes ahead with a registration from an earlier run

    # ----- hooks ------------------------------------------------------------------------------

    def _may_use_default_endpoints(self) -> bool:
        # MCP 2025-03-26: without metadata, /authorize, /token and /register on the server's origin.
        # Only when someone is there to authorize: without, "no OAuth here" is the likelier story.
        return self._interaction is not None

    def _may_pass_through(self) -> bool:
        # A pre-registered client keeps the SDK's flow from the first request (as configured
        # machine grants do); without one there is nothing to do until the server asks.
        return self._storage.configured_client is None

    async def _before_authorization(self, response: httpx2.Response) -> bool:
        if self._interaction is None:
            if response.status_code == 401:
                raise AuthorizationRequiredError(self.server)
            return False  # a step-up: this request fails with its 403, the session stays
        await self._prepare_redirect()
        return True

    async def _after_token_request(self, grant: str, response: httpx2.Response) -> None:
        if grant != "authorization_code":
            return
        if response.status_code in (400, 401) and self._storage.configured_client is None:
            if await _oauth_error(response) == "invalid_client":
                await self._storage.forget_client()

    def _end_flow(self) -> None:
        self._release()

    def _no_oauth(self, request: httpx2.Request) -> AuthorizationError:
        error = super()._no_oauth(request)
        return AuthorizationError(
            self.server,
            f"{error.reason}, or, if it uses the MCP 2025-03-26 default OAuth endpoints, {login_hint(self.server)}",
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
