"""The SDK's OAuth providers, with every private member of theirs that mcpdeck touches reached here, under
plain names: ``auth`` builds its flows on these two bases and never names an SDK private member itself.

- ``OAuthProviderBase``, on ``mcp.client.auth.OAuthClientProvider`` (and, through ``auth``'s subclasses, the
  client-credentials and private-key JWT providers): the SDK calls its private ``_initialize``,
  ``_expected_issuer``, ``_auth_flow`` and ``_perform_authorization_code_grant``; each is overridden here to
  hand over to a hook a subclass may override (``loaded_from_storage``, ``issuer_expected``, ``flow_of``,
  ``authorization_code_grant``), and the SDK's own versions are reachable as ``sdk_flow`` and
  ``sdk_authorization_code_grant``. What ``auth`` reads or calls of the SDK's private state is here too:
  ``initialized`` (``_initialized``), ``initialize()`` (``_initialize``), ``add_auth_header``
  (``_add_auth_header``).
- ``RedirectFollowingAuth``, on ``RedirectAwareAuth`` (``mcp.shared._httpx_utils``): the base the SDK's own
  OAuth providers use, so the identity-assertion grant follows redirects the way they do; its flow is
  ``flow_of`` (the SDK's abstract ``_auth_flow``).

``tests/test_sdk_contract.py`` checks each of these members on the installed SDK.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared._httpx_utils import RedirectAwareAuth

__all__ = ["OAuthProviderBase", "RedirectAwareAuth", "RedirectFollowingAuth"]


class OAuthProviderBase(OAuthClientProvider):
    """The SDK's ``OAuthClientProvider`` with its private members turned into hooks (see the module)."""

    # ----- what the SDK calls, handed to the hooks --------------------------------------------

    async def _initialize(self) -> None:
        await super()._initialize()
        await self.loaded_from_storage()

    def _expected_issuer(self) -> str:
        return self.issuer_expected(super()._expected_issuer())

    def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return self.flow_of(request)

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        return await self.authorization_code_grant()

    # ----- the hooks -----------------------------------------------------------------------------

    async def loaded_from_storage(self) -> None:
        """The SDK has loaded the stored tokens and client information (once, at the first request)."""

    def issuer_expected(self, sdk_issuer: str) -> str:
        """The issuer the authorization server's metadata must name; ``sdk_issuer`` is the one the SDK expects."""
        return sdk_issuer

    def flow_of(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The flow of one request, under the SDK's lock (default: the SDK's, ``sdk_flow``)."""
        return self.sdk_flow(request)

    async def authorization_code_grant(self) -> tuple[str, str]:
        """The authorization code and its verifier, from the user (default: the SDK's way)."""
        return await self.sdk_authorization_code_grant()

    # ----- the SDK's own, to call -------------------------------------------------------------

    def sdk_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow of one request (``_auth_flow``)."""
        return super()._auth_flow(request)

    async def sdk_authorization_code_grant(self) -> tuple[str, str]:
        """The SDK's authorization code grant (``_perform_authorization_code_grant``): redirect, then callback."""
        return await super()._perform_authorization_code_grant()

    @property
    def initialized(self) -> bool:
        """Whether the stored tokens and client information are loaded (``_initialized``)."""
        return self._initialized

    async def initialize(self) -> None:
        """Load them (``_initialize``, with ``loaded_from_storage`` after); hold ``context.lock``."""
        await self._initialize()

    def add_auth_header(self, request: httpx2.Request) -> None:
        """Put the current access token on ``request`` (``_add_auth_header``)."""
        self._add_auth_header(request)


class RedirectFollowingAuth(RedirectAwareAuth):
    """The SDK's ``RedirectAwareAuth``: the requests of ``flow_of`` other than the one authenticated follow
    redirects within their origin, as the SDK's OAuth providers' requests do."""

    def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return self.flow_of(request)

    @abstractmethod
    def flow_of(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The flow of one request, written as ``httpx2.Auth.async_auth_flow`` would be."""
