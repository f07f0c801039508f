"""OAuth end to end: a host against a real authorization server and a protected MCP server."""

from __future__ import annotations

import logging
import os
import socket
import stat
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp.shared.auth import OAuthClientInformationFull

from mcpdeck import ServerState
from mcpdeck.auth import BrowserInteraction, FunctionInteraction, TokenStore, parse_callback
from tests.auth.oauth_server import EXTRA_SCOPE, SCOPE, OAuthSetup, oauth_servers
from tests.auth.support import SERVER, HeadlessBrowser, host

pytestmark = pytest.mark.anyio

LOGIN_HINT = f"needs authorization: run `mcpdeck auth login {SERVER}`"


async def login(setup: OAuthSetup, store: TokenStore, log_dir: Path, browser: HeadlessBrowser | None = None) -> None:
    """Authorize through the headless browser; the server must end up connected."""
    async with host(setup, store, log_dir, browser or HeadlessBrowser()) as h:
        status = h.servers[SERVER]
        assert status.state is ServerState.CONNECTED, status.error


async def whoami(setup: OAuthSetup, store: TokenStore, log_dir: Path) -> str:
    """Connect without any interaction and ask the server who we are."""
    async with host(setup, store, log_dir) as h:
        status = h.servers[SERVER]
        assert status.state is ServerState.CONNECTED, status.error
        return (await h.call_tool(f"mcp__{SERVER}__whoami")).text()


async def test_login_discovers_registers_and_authorizes_with_pkce(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    browser = HeadlessBrowser(stray=True)
    async with host(oauth, store, log_dir, browser) as h:
        status = h.servers[SERVER]
        assert status.state is ServerState.CONNECTED, status.error
        answer = (await h.call_tool(f"mcp__{SERVER}__whoami")).text()

    (url,) = browser.urls
    query = parse_qs(urlsplit(url).query)
    assert url.startswith(f"{oauth.issuer}/authorize?")  # found through RFC 9728 + RFC 8414 discovery
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) >= 43
    assert query["resource"] == [oauth.mcp_url]  # RFC 8707
    redirect = query["redirect_uri"][0]
    assert redirect.startswith("http://127.0.0.1:") and redirect.endswith("/callback")

    (client_id,) = oauth.provider.clients  # dynamic registration
    assert answer == f"{client_id} {SCOPE}"
    assert oauth.provider.seen.registrations == 1 and oauth.provider.seen.code_exchanges == 1
    assert [str(uri) for uri in oauth.provider.clients[client_id].redirect_uris or []] == [redirect]

    # the listener turned away an answer with the wrong state, then took the real one
    (stray_status, stray_page), (status_code, page) = browser.pages
    assert stray_status == 400 and "does not belong" in stray_page
    assert status_code == 200 and "You can close this tab" in page


async def test_tokens_persist_privately_and_a_later_host_reuses_them_without_asking(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    await login(oauth, store, log_dir)
    seen = oauth.provider.seen
    assert (seen.registrations, seen.authorizations) == (1, 1)

    (record,) = store.records(SERVER)
    assert record.has_tokens and record.refreshable and record.scopes == [SCOPE]
    assert record.client_source == "registered" and record.url == oauth.mcp_url
    assert stat.S_IMODE(record.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(record.path.parent.stat().st_mode) == 0o700

    client_id = record.client_id
    assert await whoami(oauth, store, log_dir) == f"{client_id} {SCOPE}"
    assert (seen.registrations, seen.authorizations, seen.refreshes) == (1, 1, 0)


async def test_an_access_token_past_its_expiry_is_refreshed_before_it_is_sent(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    await login(oauth, store, log_dir)
    storage = store.storage(SERVER, oauth.mcp_url)
    tokens = await storage.get_tokens()
    assert tokens is not None
    oauth.provider.expire_access_tokens()
    await storage.set_tokens(tokens.model_copy(update={"expires_in": -60}))  # its lifetime ran out a minute ago
    assert store.records(SERVER)[0].expired

    assert (await whoami(oauth, store, log_dir)).endswith(SCOPE)
    seen = oauth.provider.seen
    assert seen.refreshes == 1
    assert seen.rejected_tokens == 0  # refreshed first: the expired token was never sent
    refreshed = await storage.get_tokens()
    assert refreshed is not None and refreshed.access_token != tokens.access_token
    assert not store.records(SERVER)[0].expired


async def test_a_token_the_server_refuses_is_refreshed_once_without_asking(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    await login(oauth, store, log_dir)
    oauth.provider.expire_access_tokens()  # expired early: the host still thinks it is good

    assert (await whoami(oauth, store, log_dir)).endswith(SCOPE)
    seen = oauth.provider.seen
    assert seen.rejected_tokens >= 1 and seen.refreshes == 1 and seen.authorizations == 1


async def test_a_refused_refresh_means_a_login_is_needed_and_the_dead_tokens_are_dropped(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    await login(oauth, store, log_dir)
    oauth.provider.expire_access_tokens()
    oauth.provider.refresh_tokens.clear()

    async with host(oauth, store, log_dir) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error == LOGIN_HINT
    (record,) = store.records(SERVER)
    assert not record.has_tokens and record.client_id is not None  # the registration is still good


async def test_a_host_without_interaction_never_starts_a_login(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    async with host(oauth, store, log_dir) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error == LOGIN_HINT
    assert oauth.provider.seen.registrations == 0  # nothing registered behind the user's back
    assert store.records() == []


async def test_a_refused_authorization_fails_the_server_with_a_clear_reason(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    oauth.provider.deny = True
    browser = HeadlessBrowser()
    async with host(oauth, store, log_dir, browser) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None
    assert "authorization was refused (access_denied: The user said no)" in status.error
    assert f"mcpdeck auth login {SERVER}" in status.error
    assert oauth.provider.seen.denials == 1
    ((code, page),) = browser.pages
    assert code == 200 and "Authorization failed" in page and "You can close this tab" in page
    (record,) = store.records(SERVER)
    assert not record.has_tokens


async def test_no_answer_from_the_browser_times_out_with_a_clear_error(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    class NobodyThere(BrowserInteraction):
        async def redirect(self, server: str, authorization_url: str) -> None:
            pass  # the user never opens the link

    async with host(oauth, store, log_dir, NobodyThere(open_browser=False, timeout=0.2)) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None and "no answer from the browser within 0.2 s" in status.error


async def test_a_stale_registration_is_cleared_by_logout_and_login_works_again(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    await login(oauth, store, log_dir)
    oauth.provider.forget_clients()  # the authorization server was reset

    async with host(oauth, store.for_login(SERVER), log_dir, HeadlessBrowser()) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None and "not found" in status.error

    assert store.clear(SERVER) == 1  # `mcpdeck auth logout secure`
    await login(oauth, store.for_login(SERVER), log_dir)
    assert oauth.provider.seen.registrations == 2
    assert (await whoami(oauth, store, log_dir)).endswith(SCOPE)


async def test_a_registration_the_server_no_longer_knows_is_dropped_on_refresh(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    await login(oauth, store, log_dir)
    oauth.provider.forget_clients()

    async with host(oauth, store, log_dir) as h:
        status = h.servers[SERVER]
    assert status.error == LOGIN_HINT
    (record,) = store.records(SERVER)
    assert record.client_id is None and not record.has_tokens  # refresh said invalid_client: registration gone

    await login(oauth, store, log_dir)  # so a plain login registers afresh, no logout needed
    assert oauth.provider.seen.registrations == 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_pre_registered_client_credentials_skip_registration(store: TokenStore, log_dir: Path) -> None:
    port = _free_port()
    secret = "pre-registered-secret-value"
    async with oauth_servers(registration=False) as setup:
        setup.provider.clients["deck"] = OAuthClientInformationFull(
            client_id="deck",
            client_secret=secret,
            token_endpoint_auth_method="client_secret_post",
            redirect_uris=[f"http://127.0.0.1:{port}/callback"],  # pyright: ignore[reportArgumentType]
            scope=SCOPE,
        )
        oauth = {
            "clientId": "deck",
            "clientSecret": "${DECK_SECRET}",
            "tokenEndpointAuthMethod": "client_secret_post",
            "callbackPort": port,
        }
        servers = {SERVER: {"type": "http", "url": setup.mcp_url, "oauth": oauth}}
        from mcpdeck import Host

        environ = {**os.environ, "DECK_SECRET": secret}
        async with Host(
            servers, log_dir=log_dir, auth_store=store, oauth_interaction=HeadlessBrowser(), environ=environ
        ) as h:
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await h.call_tool(f"mcp__{SERVER}__whoami")).text() == f"deck {SCOPE}"
        assert setup.provider.seen.registrations == 0
    (record,) = store.records(SERVER)
    assert record.has_tokens
    assert secret not in record.path.read_text()  # a configured secret stays in the config's environment


async def test_configured_scopes_are_asked_for_besides_the_servers(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    async with host(oauth, store, log_dir, HeadlessBrowser(), scopes=[EXTRA_SCOPE]) as h:
        assert (await h.call_tool(f"mcp__{SERVER}__whoami")).text().split()[1:] == [SCOPE, EXTRA_SCOPE]


async def test_an_interaction_can_be_a_plain_function_reading_the_redirect(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    async def authorize(server: str, url: str) -> tuple[str, str | None]:
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(url)
        answer = parse_callback(server, response.headers["location"])
        return answer.code, answer.state

    async with host(oauth, store, log_dir, FunctionInteraction(authorize)) as h:
        assert h.servers[SERVER].state is ServerState.CONNECTED, h.servers[SERVER].error


async def test_oauth_false_leaves_a_401_to_the_user(oauth: OAuthSetup, store: TokenStore, log_dir: Path) -> None:
    from mcpdeck import Host

    servers = {SERVER: {"type": "http", "url": oauth.mcp_url, "oauth": False}}
    async with Host(servers, log_dir=log_dir, auth_store=store, oauth_interaction=HeadlessBrowser()) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error is not None and "HTTP 401" in status.error and "auth login" not in status.error
    assert oauth.provider.seen.registrations == 0


def _read_all(folder: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in folder.rglob("*") if path.is_file())


async def test_no_token_or_secret_reaches_the_logs(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await login(oauth, store, log_dir)
    oauth.provider.expire_access_tokens()
    await whoami(oauth, store, log_dir)  # a refresh too
    secrets = oauth.provider.issued
    assert len(secrets) == 5  # two access tokens, two refresh tokens, a client secret
    logged = caplog.text + _read_all(log_dir)
    assert not [value for value in secrets if value in logged]


async def test_a_url_change_starts_afresh(oauth: OAuthSetup, store: TokenStore, log_dir: Path) -> None:
    await login(oauth, store, log_dir)
    moved = f"{oauth.mcp_url}?tenant=2"  # another URL: another resource as far as tokens go
    assert store.path(SERVER, moved) != store.path(SERVER, oauth.mcp_url)
    assert await store.storage(SERVER, moved).get_client_info() is None
    assert await store.storage(SERVER, moved).get_tokens() is None


async def test_without_a_type_an_authorization_problem_does_not_fall_back_to_sse(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    from mcpdeck import Host

    async with Host({SERVER: {"url": oauth.mcp_url}}, log_dir=log_dir, auth_store=store) as h:
        status = h.servers[SERVER]
    assert status.state is ServerState.FAILED and status.error == LOGIN_HINT


async def test_a_401_from_a_server_without_oauth_says_to_configure_credentials(
    store: TokenStore, log_dir: Path
) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from mcpdeck import Host
    from tests.helpers import serve_asgi

    async def refuse(request: Request) -> Response:
        return PlainTextResponse("sign in first", status_code=401, headers={"WWW-Authenticate": "Bearer"})

    async with serve_asgi(Starlette(routes=[Route("/mcp", refuse, methods=["GET", "POST", "DELETE"])])) as base:
        async with Host({SERVER: {"url": f"{base}/mcp"}}, log_dir=log_dir, auth_store=store) as h:
            status = h.servers[SERVER]
    assert status.state is ServerState.FAILED
    assert status.error == (
        f"HTTP 401 from {base}/mcp: the server wants credentials but offers no OAuth; "
        'give them in its "headers" (e.g. "Authorization": "Bearer ${TOKEN}"), '
        f"or, if it uses the MCP 2025-03-26 default OAuth endpoints, run `mcpdeck auth login {SERVER}`"
    )


async def test_an_interactive_host_re_registers_when_the_server_forgot_the_client(
    oauth: OAuthSetup, store: TokenStore, log_dir: Path
) -> None:
    await login(oauth, store, log_dir)
    oauth.provider.forget_clients()
    oauth.provider.seen.authorizations = 0
    await login(oauth, store, log_dir)  # refresh: invalid_client -> registration dropped -> register, authorize
    assert oauth.provider.seen.registrations == 2 and oauth.provider.seen.authorizations == 1


async def test_the_legacy_sse_transport_is_authorized_the_same_way(store: TokenStore, log_dir: Path) -> None:
    from mcpdeck import Host

    async with oauth_servers(sse=True) as setup:
        servers = {SERVER: {"type": "sse", "url": setup.mcp_url}}
        async with Host(servers, log_dir=log_dir, auth_store=store) as h:
            assert h.servers[SERVER].error == LOGIN_HINT
        async with Host(servers, log_dir=log_dir, auth_store=store, oauth_interaction=HeadlessBrowser()) as h:
            status = h.servers[SERVER]
            assert status.state is ServerState.CONNECTED, status.error
            assert (await h.call_tool(f"mcp__{SERVER}__whoami")).text().endswith(SCOPE)
        async with Host(servers, log_dir=log_dir, auth_store=store) as h:
            assert h.servers[SERVER].state is ServerState.CONNECTED
