"""The client_credentials grant (SEP-1046) end to end: a host authorizes itself, no user, no browser."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from mcpdeck import ServerState
from mcpdeck.auth import TokenStore
from tests.auth.oauth_server import SCOPE, MachineClient, OAuthSetup
from tests.auth.support import SERVER, ec_key_pair, host, read_all

pytestmark = pytest.mark.anyio

SECRET = "machine-secret-1f9c2a"


async def whoami(
    setup: OAuthSetup, store: TokenStore, log_dir: Path, environ: Mapping[str, str] | None = None, **oauth: Any
) -> str:
    """Connect without any interaction and ask the server who we are."""
    async with host(setup, store, log_dir, environ=environ, **oauth) as h:
        status = h.servers[SERVER]
        assert status.state is ServerState.CONNECTED, status.error
        return (await h.call_tool(f"mcp__{SERVER}__whoami")).text()


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_a_client_secret_gets_a_token_without_any_interaction(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path, method: Literal["client_secret_basic", "client_secret_post"]
) -> None:
    oauth.provider.machine_clients["svc"] = MachineClient("svc", method=method, secret=SECRET)
    config = {
        "grantType": "client_credentials",
        "clientId": "svc",
        "clientSecret": "${SVC_SECRET}",
        "tokenEndpointAuthMethod": method,
    }
    answer = await whoami(oauth, store, log_dir, environ={"SVC_SECRET": SECRET}, **config)

    assert answer == f"svc {SCOPE}"
    seen = oauth.provider.seen
    assert (seen.client_credentials, seen.registrations, seen.authorizations) == (1, 0, 0)
    (record,) = store.records(SERVER)
    assert record.has_tokens and not record.refreshable and record.expires_at is not None
    assert SECRET not in read_all(store.directory)  # the configured client is never written down

    # a later host uses the stored token; once the server stops taking it, a new grant, silently
    assert await whoami(oauth, store, log_dir, environ={"SVC_SECRET": SECRET}, **config) == answer
    assert seen.client_credentials == 1
    oauth.provider.expire_access_tokens()
    assert await whoami(oauth, store, log_dir, environ={"SVC_SECRET": SECRET}, **config) == answer
    assert seen.client_credentials == 2 and seen.registrations == 0


@pytest.mark.parametrize("where", ["privateKey", "privateKeyFile"])
async def test_private_key_jwt_signs_an_assertion_for_the_authorization_server(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path, tmp_path: Path, where: str
) -> None:
    private, public = ec_key_pair()
    oauth.provider.machine_clients["signer"] = MachineClient("signer", method="private_key_jwt", public_key=public)
    key_file = tmp_path / "signer.pem"
    key_file.write_text(private)
    config = {
        "grantType": "client_credentials",
        "clientId": "signer",
        "signingAlgorithm": "ES256",
        **({"privateKey": "${SIGNER_KEY}"} if where == "privateKey" else {"privateKeyFile": str(key_file)}),
    }
    assert await whoami(oauth, store, log_dir, environ={"SIGNER_KEY": private}, **config) == f"signer {SCOPE}"

    (claims,) = oauth.provider.assertions  # RFC 7523 §3, as SEP-1046 asks for it
    assert claims["iss"] == claims["sub"] == "signer"
    assert claims["aud"] == oauth.issuer  # the authorization server's issuer
    assert 0 < claims["exp"] - claims["iat"] <= 300 and claims["jti"]
    assert claims["exp"] > time.time()
    key_body = private.splitlines()[1]
    assert key_body not in read_all(store.directory)


async def test_a_refused_client_secret_fails_the_server_with_the_reason_and_without_the_secret(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    oauth.provider.machine_clients["svc"] = MachineClient("svc", secret="the-right-one")
    config: dict[str, Any] = {"grantType": "client_credentials", "clientId": "svc", "clientSecret": SECRET}
    async with host(oauth, store, log_dir, **config) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None and "authorization failed" in status.error and "invalid_client" in status.error
    assert "auth login" not in status.error and SECRET not in status.error
    assert oauth.provider.seen.refused_token_requests == 1


async def test_with_oauth_issuer_the_credentials_only_go_to_that_authorization_server(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    oauth.provider.machine_clients["svc"] = MachineClient("svc", secret=SECRET)
    config: dict[str, Any] = {"grantType": "client_credentials", "clientId": "svc", "clientSecret": SECRET}

    async with host(oauth, store, log_dir, issuer="https://login.example.com", **config) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error == (
        "authorization failed: Authorization server metadata issuer mismatch: "
        f"{oauth.issuer} != https://login.example.com"
    )
    seen = oauth.provider.seen
    assert seen.client_credentials == seen.refused_token_requests == 0  # the secret was never sent

    assert await whoami(oauth, store, log_dir, issuer=oauth.issuer, **config) == f"svc {SCOPE}"
