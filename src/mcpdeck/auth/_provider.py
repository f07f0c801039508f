"""``DeckOAuthProvider``: the authorization-code flow, a user authorizing in a browser.

Built on ``DeckFlow`` (``_flow``: persistence, one refresh, no-OAuth errors, the 2025-03-26
path), it adds:

- a gate: without an interaction it never starts an authorization the user would have to
  finish; a server that needs one fails with "needs authorization: run `mcpdeck auth login`";
- the local callback listener, on a port reserved before registration, so the redirect URI
  registered is the one the browser comes back to (and, next time, the same one again);
- stale registrations cleaned up: a refresh refused with ``invalid_client`` drops the
  registration, so the next login registers afresh;
- configured scopes merged into whatever the server asks for (``DeckClientMetadata``);
- with an interaction, the MCP 2025-03-26 default endpoints (``/authorize``, ``/token``,
  ``/register`` on the server's origin) for a server that publishes no metadata at all.
"""

from __future__ import annotations

import logging
import socket
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from pydantic import AnyUrl, ConfigDict, Field, ValidationInfo, field_validator

from mcpdeck.auth._callback import CallbackListener, CallbackPlan, reserve_port
from mcpdeck.auth._errors import (
    AuthorizationError,
    AuthorizationRequiredError,
    AuthorizationTimeoutError,
    login_hint,
)
from mcpdeck.auth._flow import DeckFlow, oauth_error
from mcpdeck.auth._interaction import OAuthInteraction
from mcpdeck.auth._storage import ServerTokenStorage

__all__ = ["DeckClientMetadata", "DeckOAuthProvider"]

logger = logging.getLogger(__name__)


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
            if await oauth_error(response) == "invalid_client":
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

    async def authorization_code_grant(self) -> tuple[str, str]:
        if self._interaction is None:
            raise AuthorizationRequiredError(self.server)
        await self._prepare_redirect()
        sock, self._reserved = self._reserved, None
        assert sock is not None
        uri = str(self.context.client_metadata.redirect_uris[0]) if self.context.client_metadata.redirect_uris else ""
        async with CallbackListener.serve(self.server, sock, uri) as listener:
            self._listener = listener
            try:
                return await self.sdk_authorization_code_grant()
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
