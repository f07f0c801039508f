"""MCP 2025-03-26 servers (no protected resource metadata), and the issuer rule mcpdeck applies to them.

The rule (``mcpdeck.auth._legacy``): an issuer on a path of the server's own origin is accepted,
checked at its own RFC 8414 location when something is there; an issuer on another origin is
refused. With protected resource metadata the SDK's strict check is unchanged.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthMetadata

from mcpdeck import Host, ServerState
from mcpdeck.auth import TokenStore
from mcpdeck.auth._legacy import LegacyVerdict, issuer_location, judge_legacy_issuer
from tests.auth.oauth_server import SCOPE, legacy_servers, oauth_servers
from tests.auth.support import SERVER, HeadlessBrowser, host

pytestmark = pytest.mark.anyio


def _metadata(issuer: str) -> OAuthMetadata:
    return OAuthMetadata.model_validate(
        {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token"}
    )


@pytest.mark.parametrize(
    ("issuer", "verdict"),
    [
        ("https://mcp.example.com", "origin"),
        ("https://mcp.example.com/", "origin"),
        ("https://MCP.example.com:443/oauth", "same-origin"),
        ("https://mcp.example.com/tenants/a/", "same-origin"),
        ("http://mcp.example.com/oauth", "cross-origin"),  # another scheme is another origin
        ("https://mcp.example.com:8443/oauth", "cross-origin"),
        ("https://auth.example.com", "cross-origin"),
        ("https://mcp.example.com.evil.test/oauth", "cross-origin"),
    ],
)
def test_how_a_legacy_issuer_is_judged(issuer: str, verdict: LegacyVerdict) -> None:
    assert judge_legacy_issuer("https://mcp.example.com/mcp", _metadata(issuer)) == verdict


def test_an_issuers_own_metadata_location_is_the_rfc_8414_one() -> None:
    assert issuer_location("https://mcp.example.com/oauth") == (
        "https://mcp.example.com/.well-known/oauth-authorization-server/oauth"
    )
    assert issuer_location("https://mcp.example.com/tenants/a/") == (
        "https://mcp.example.com/.well-known/oauth-authorization-server/tenants/a"
    )


async def test_an_issuer_on_a_path_of_the_servers_origin_is_accepted_and_logged(
    store: TokenStore, log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpdeck.auth")
    browser = HeadlessBrowser()
    async with legacy_servers() as setup:
        async with host(setup, store, log_dir, browser) as h:
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
            answer = (await h.call_tool(f"mcp__{SERVER}__whoami")).text()
        (url,) = browser.urls
        assert url.startswith(f"{setup.issuer}/authorize?")  # the endpoints the root document names
        assert SCOPE in answer.split()[1:], answer  # scopes from the metadata: no resource metadata names any
        assert setup.provider.seen.registrations == 1
        assert setup.issuer.endswith("/oauth")
        assert any(
            "accepting the authorization server issuer" in record.getMessage() and setup.issuer in record.getMessage()
            for record in caplog.records
        )

        # a later host reuses the token, and the registration stays bound to that issuer
        async with host(setup, store, log_dir) as h:
            assert h.servers[SERVER].state is ServerState.CONNECTED, h.servers[SERVER].error
        assert setup.provider.seen.authorizations == 1
        (record,) = store.records(SERVER)
        assert record.has_tokens and record.client_source == "registered"


async def test_a_document_at_the_issuers_own_location_confirms_it(
    store: TokenStore, log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpdeck.auth")
    async with legacy_servers(own_location="same") as setup:
        async with host(setup, store, log_dir, HeadlessBrowser()) as h:
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
    assert any("confirmed at" in record.getMessage() for record in caplog.records)


async def test_a_document_at_the_issuers_own_location_naming_another_issuer_is_refused(
    store: TokenStore, log_dir: Path
) -> None:
    async with legacy_servers(own_location="other") as setup:
        async with host(setup, store, log_dir, HeadlessBrowser()) as h:
            status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None and f"names {setup.issuer.rsplit('/', 1)[0]}/elsewhere" in status.error
    assert setup.provider.seen.registrations == 0


async def test_an_issuer_on_another_origin_is_refused(store: TokenStore, log_dir: Path) -> None:
    async with oauth_servers() as foreign, legacy_servers(foreign=foreign) as setup:
        browser = HeadlessBrowser()
        async with host(setup, store, log_dir, browser) as h:
            status = h.servers[SERVER]
        assert status.state is ServerState.FAILED
        assert status.error is not None
        assert f"names the issuer {foreign.issuer}" in status.error and "on another origin" in status.error
        assert browser.urls == []  # nothing was authorized, nothing registered, anywhere
        assert foreign.provider.seen.registrations == 0 and setup.provider.seen.registrations == 0


async def test_with_protected_resource_metadata_the_issuer_check_stays_strict(store: TokenStore, log_dir: Path) -> None:
    # The authorization server's metadata names "<its URL>/oauth": same origin, but the resource
    # named "<its URL>", and RFC 8414 §3.3 holds on this path exactly as the SDK applies it.
    async with oauth_servers(metadata_issuer_path="/oauth") as setup:
        browser = HeadlessBrowser()
        async with host(setup, store, log_dir, browser) as h:
            status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None and "issuer mismatch" in status.error
    assert browser.urls == [] and setup.provider.seen.registrations == 0


async def test_without_any_metadata_an_interactive_host_uses_the_2025_03_26_default_endpoints(
    store: TokenStore, log_dir: Path
) -> None:
    async with legacy_servers(issuer_path="", publish_metadata=False) as setup:
        async with Host({SERVER: {"type": "http", "url": setup.mcp_url}}, log_dir=log_dir, auth_store=store) as h:
            status = h.servers[SERVER]
        assert status.state is ServerState.FAILED
        assert status.error is not None and "offers no OAuth" in status.error
        assert f"run `mcpdeck auth login {SERVER}`" in status.error

        browser = HeadlessBrowser()
        async with host(setup, store, log_dir, browser) as h:
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
        (url,) = browser.urls
        assert url.startswith(setup.mcp_url.removesuffix("/mcp") + "/authorize?")
        assert setup.provider.seen.registrations == 1 and setup.provider.seen.code_exchanges == 1


async def test_an_interactive_host_says_so_when_the_default_endpoints_are_not_there_either(
    store: TokenStore, log_dir: Path
) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from tests.helpers import serve_asgi

    async def refuse(request: Request) -> Response:
        return PlainTextResponse("sign in first", status_code=401, headers={"WWW-Authenticate": "Bearer"})

    browser = HeadlessBrowser()
    async with serve_asgi(Starlette(routes=[Route("/mcp", refuse, methods=["GET", "POST", "DELETE"])])) as base:
        servers = {SERVER: {"type": "http", "url": f"{base}/mcp"}}
        async with Host(servers, log_dir=log_dir, auth_store=store, oauth_interaction=browser) as h:
            status = h.servers[SERVER]
    assert status.state is ServerState.FAILED and browser.urls == []
    assert status.error is not None and status.error.startswith("authorization failed: Registration failed: 404")
    assert status.error.endswith(
        "the server publishes no OAuth metadata, so this was the MCP 2025-03-26 default endpoint; "
        'if the server wants other credentials, give them in its "headers"'
    )
