"""``DeckFlow``: what mcpdeck adds around any of the SDK's ``OAuthClientProvider`` flows.

The SDK's ``OAuthClientProvider`` does discovery, registration, PKCE, scopes and refresh.
``DeckFlow`` is the base of mcpdeck's providers (the authorization-code ``DeckOAuthProvider``
in ``_provider``, the client-credentials ones in ``_machine``), and adds:

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
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from typing import Literal, TypeVar, cast
from urllib.parse import parse_qs

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import BaseModel

from mcpdeck._sdk.oauth import OAuthProviderBase
from mcpdeck.auth._errors import AuthorizationError
from mcpdeck.auth._legacy import issuer_location, judge_legacy_issuer, legacy_metadata_url
from mcpdeck.auth._storage import ServerTokenStorage

__all__ = ["DeckFlow", "oauth_error"]

logger = logging.getLogger(__name__)

_EXPIRED = 1.0
"""A token expiry long past (the SDK reads 0 as "never expires")."""

_Metadata = TypeVar("_Metadata", bound=BaseModel)


def _grant_of(request: httpx2.Request) -> str | None:
    """The ``grant_type`` of a token request (None for anything else)."""
    if request.method != "POST" or not request.headers.get("content-type", "").startswith(
        "application/x-www-form-urlencoded"
    ):
        return None
    values = parse_qs(request.content.decode("utf-8", errors="replace")).get("grant_type")
    return values[0] if values else None


async def _resume(
    flow: AsyncGenerator[httpx2.Request, httpx2.Response], response: httpx2.Response
) -> httpx2.Request | None:
    """The next request of ``flow`` once ``response`` is its answer; None when the flow has ended."""
    try:
        return await flow.asend(response)
    except StopAsyncIteration:
        return None


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


async def oauth_error(response: httpx2.Response) -> str | None:
    """The ``error`` code of an OAuth error response, if it has one."""
    try:
        body = json.loads(await response.aread())
    except (ValueError, httpx2.StreamError):
        return None
    error = cast(dict[str, object], body).get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) else None


class DeckFlow(OAuthProviderBase):
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

    async def loaded_from_storage(self) -> None:
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

    def issuer_expected(self, sdk_issuer: str) -> str:
        """The SDK's expected issuer, except on the 2025-03-26 path with an issuer accepted by ``_legacy``."""
        if self.context.auth_server_url is None and self._legacy_issuer is not None:
            return self._legacy_issuer
        return sdk_issuer

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
                self.add_auth_header(request)
            response = yield request
            if not self._needs_login(response):
                return
            sent = request.headers.get("authorization")  # (as it went: nothing changes a request once sent)
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
            if not self.initialized:
                await self.initialize()
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
        return self.initialized and not context.lock.locked() and context.is_token_valid()

    async def flow_of(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow, watched: discovery checked first, one refresh on a refused token, cleanup."""
        retried = False
        try:
            while True:
                restart = refreshed = False
                flow = self.sdk_flow(request)
                try:
                    outgoing = await anext(flow, None)
                    while outgoing is not None:
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
                            if self._should_locate(response):
                                locate = self._locate_authorization_server(request, response)
                                try:
                                    asked = await anext(locate, None)
                                    while asked is not None:
                                        asked = await _resume(locate, (yield asked))
                                finally:
                                    await locate.aclose()
                            if not await self._before_authorization(response):
                                return
                        outgoing = await _resume(flow, response)
                finally:
                    await flow.aclose()
                if not restart:
                    break
        except OAuthFlowError as error:
            raise self._failure(error) from error
        finally:
            self._end_flow()
        await self._remember_discovery()

    def _should_locate(self, response: httpx2.Response) -> bool:
        """Whether a 401 must first find out where the authorization server is (its metadata is not known)."""
        context = self.context
        return response.status_code == 401 and (
            context.oauth_metadata is None or context.protected_resource_metadata is None
        )

    async def _locate_authorization_server(
        self, request: httpx2.Request, response: httpx2.Response
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Where is the authorization server? Asked before the SDK's flow goes on after a 401.

        Tells "no OAuth here" from a login, and judges the issuer of an MCP 2025-03-26 server
        (one without protected resource metadata); a refused issuer or no OAuth at all raises.
        """
        context = self.context
        found: ProtectedResourceMetadata | Literal["absent", "unknown"] = "absent"
        for url in build_protected_resource_metadata_discovery_urls(
            extract_resource_metadata_from_www_auth(response), context.server_url
        ):
            answer = yield create_oauth_metadata_request(url)
            found = await _read_metadata(answer, ProtectedResourceMetadata)
            if found != "absent":
                return
        # No protected resource metadata: MCP 2025-03-26, the authorization server's metadata on the server's origin.
        answer = yield create_oauth_metadata_request(legacy_metadata_url(context.server_url))
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
        error = await oauth_error(response)
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
