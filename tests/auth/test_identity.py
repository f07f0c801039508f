"""Enterprise-managed authorization (SEP-990) end to end: an ID token, an ID-JAG, an access token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcpdeck import ServerState
from mcpdeck.auth import TokenStore
from tests.auth.idp_server import ID_JAG, IdentityProvider, IdpClient, identity_provider
from tests.auth.oauth_server import SCOPE, OAuthSetup
from tests.auth.support import SERVER, host, read_all

pytestmark = pytest.mark.anyio

CLIENT, CLIENT_SECRET = "xaa-client", "xaa-secret-7d3e"
"""mcpdeck's client at the MCP server's authorization server (confidential, registered beforehand)."""
IDP_CLIENT = "mcpdeck-at-idp"


@pytest.fixture
async def idp(oauth: OAuthSetup) -> AsyncIterator[IdentityProvider]:
    """An identity provider the authorization server trusts, whose policy lets mcpdeck reach it."""
    async with identity_provider() as provider:
        oauth.provider.id_jag_trust = provider.trust
        oauth.provider.add_id_jag_client(CLIENT, CLIENT_SECRET)
        provider.clients[IDP_CLIENT] = IdpClient(IDP_CLIENT, audiences={oauth.issuer: CLIENT})
        yield provider


def settings(idp: IdentityProvider, **identity_provider: Any) -> dict[str, Any]:
    return {
        "grantType": "identity_assertion",
        "clientId": CLIENT,
        "clientSecret": CLIENT_SECRET,
        "identityProvider": {
            "issuer": idp.issuer,
            "clientId": IDP_CLIENT,
            "idToken": "${ID_TOKEN}",
            **identity_provider,
        },
    }


async def whoami(setup: OAuthSetup, store: TokenStore, log_dir: Path, oauth: dict[str, Any], id_token: str) -> str:
    async with host(setup, store, log_dir, environ={"ID_TOKEN": id_token}, **oauth) as h:
        status = h.servers[SERVER]
        assert status.state is ServerState.CONNECTED, status.error
        return (await h.call_tool(f"mcp__{SERVER}__whoami")).text()


async def test_the_id_token_is_traded_for_an_id_jag_then_for_an_access_token(
    oauth: OAuthSetup, idp: IdentityProvider, store: TokenStore, log_dir: Path
) -> None:
    id_token = idp.id_token(IDP_CLIENT)
    assert await whoami(oauth, store, log_dir, settings(idp), id_token) == f"{CLIENT} {SCOPE}"

    (exchange,) = idp.exchanges  # leg 1, RFC 8693 at the identity provider (its endpoint discovered)
    assert exchange == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": ID_JAG,
        "audience": oauth.issuer,  # the authorization server named by the protected resource metadata
        "resource": oauth.mcp_url,  # the MCP server, exactly
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "client_id": IDP_CLIENT,  # a public client there: no secret configured
    }
    (grant,) = oauth.provider.assertions  # leg 2, RFC 7523 jwt-bearer at the authorization server
    assert grant["sub"] == "alice@example.com" and grant["client_id"] == CLIENT
    assert oauth.provider.seen.identity_assertions == 1 and oauth.provider.seen.registrations == 0
    stored = read_all(store.directory)
    assert id_token not in stored and CLIENT_SECRET not in stored

    # a later host reuses the stored token: no new exchange anywhere
    assert await whoami(oauth, store, log_dir, settings(idp), id_token) == f"{CLIENT} {SCOPE}"
    assert len(idp.exchanges) == 1 and oauth.provider.seen.identity_assertions == 1


async def test_a_configured_issuer_and_token_endpoint_are_used_as_given(
    oauth: OAuthSetup, idp: IdentityProvider, store: TokenStore, log_dir: Path
) -> None:
    idp.clients[IDP_CLIENT].secret = "idp-secret-91a"
    config = {
        **settings(idp, tokenEndpoint=f"{idp.issuer}/token", clientSecret="idp-secret-91a"),
        "issuer": oauth.issuer,
        "scopes": [SCOPE],
    }
    assert await whoami(oauth, store, log_dir, config, idp.id_token(IDP_CLIENT)) == f"{CLIENT} {SCOPE}"
    (exchange,) = idp.exchanges
    assert "client_id" not in exchange  # client_secret_basic: the client is in the Authorization header
    assert exchange["scope"] == SCOPE and exchange["audience"] == oauth.issuer


async def test_an_exchange_the_identity_provider_refuses_fails_the_server_with_its_reason(
    oauth: OAuthSetup, idp: IdentityProvider, store: TokenStore, log_dir: Path
) -> None:
    idp.clients[IDP_CLIENT].audiences.clear()  # its policy no longer covers this authorization server
    id_token = idp.id_token(IDP_CLIENT)
    async with host(oauth, store, log_dir, environ={"ID_TOKEN": id_token}, **settings(idp)) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error == (
        f"identity provider {idp.issuer}: it refused the token exchange "
        f"(HTTP 400 invalid_target: no ID-JAG for {oauth.issuer})"
    )
    assert oauth.provider.seen.identity_assertions == 0


async def test_an_expired_id_token_is_refused_by_the_identity_provider(
    oauth: OAuthSetup, idp: IdentityProvider, store: TokenStore, log_dir: Path
) -> None:
    id_token = idp.id_token(IDP_CLIENT, lifetime=-60)
    async with host(oauth, store, log_dir, environ={"ID_TOKEN": id_token}, **settings(idp)) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None and "invalid_grant" in status.error and id_token not in status.error
