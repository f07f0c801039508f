"""The console's "Sign in": ``POST /api/servers/{name}/sign-in`` against a real authorization server
and a protected MCP server, with a headless browser following the URL the stream hands out."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcpdeck.api._sign_in import _StreamInteraction  # pyright: ignore[reportPrivateUsage]
from mcpdeck.auth import AuthorizationError, TokenStore
from tests.api.conftest import Api, running_api
from tests.auth.oauth_server import OAuthSetup, oauth_servers
from tests.auth.support import SERVER, HeadlessBrowser
from tests.helpers import WAIT, stdio_server

pytestmark = pytest.mark.anyio


async def events_of(response: httpx2.Response) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The server-sent events of ``response``, as (kind, data)."""
    kind = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            kind = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield kind, json.loads(line.removeprefix("data: "))


@pytest.fixture
async def oauth() -> AsyncIterator[OAuthSetup]:
    async with oauth_servers() as setup:
        yield setup


@pytest.fixture
async def api(tmp_path: Path, oauth: OAuthSetup) -> AsyncIterator[Api]:
    servers = {SERVER: {"type": "http", "url": oauth.mcp_url}, "local": stdio_server("basic")}
    store = TokenStore(tmp_path / "auth")
    async with running_api(tmp_path, servers, in_process=False, auth_store=store) as running:
        yield running


async def test_a_server_that_needs_a_login_is_signed_in_from_the_api_and_reconnected(api: Api) -> None:
    before = (await api.client.get(f"/api/servers/{SERVER}")).json()["status"]
    assert before["state"] == "failed" and "auth login" in before["error"]
    browser = HeadlessBrowser()
    seen: list[str] = []
    with anyio.fail_after(WAIT * 2):
        async with api.client.stream("POST", f"/api/servers/{SERVER}/sign-in") as response:
            assert response.status_code == 200
            async for kind, data in events_of(response):
                seen.append(kind)
                if kind == "authorize":
                    assert data["url"].startswith("http://127.0.0.1:")
                    await browser.redirect(SERVER, data["url"])
                elif kind == "signed-in":
                    assert data["authorized"] is True and data["tools"] >= 1
                    assert data["status"]["state"] == "connected"
                elif kind == "error":
                    pytest.fail(data["message"])
    assert seen == ["authorize", "signed-in"]
    assert browser.pages and browser.pages[-1][0] == 200
    after = (await api.client.get(f"/api/servers/{SERVER}")).json()["status"]
    assert after["state"] == "connected" and after["toolCount"] >= 1
    called = await api.client.post(f"/api/tools/mcp__{SERVER}__echo/call", json={"arguments": {"text": "hi"}})
    assert called.status_code == 200, called.text
    assert called.json()["isError"] is False
    assert api.ctx.sign_ins == {}


async def test_a_second_sign_in_replaces_one_still_waiting(api: Api) -> None:
    with anyio.fail_after(WAIT * 2):
        async with api.client.stream("POST", f"/api/servers/{SERVER}/sign-in") as first:
            first_events = events_of(first)
            kind, _ = await anext(first_events)
            assert kind == "authorize"
            browser = HeadlessBrowser()
            async with api.client.stream("POST", f"/api/servers/{SERVER}/sign-in") as second:
                # The first stream ends without an answer: its sign-in was cancelled.
                assert [kind async for kind, _ in first_events] == []
                async for kind, data in events_of(second):
                    if kind == "authorize":
                        await browser.redirect(SERVER, data["url"])
                    elif kind == "signed-in":
                        assert data["status"]["state"] == "connected"
                        break
                    else:
                        pytest.fail(f"{kind}: {data}")
    assert (await api.client.get(f"/api/servers/{SERVER}")).json()["status"]["state"] == "connected"


async def test_sign_in_is_refused_for_a_stdio_server_and_an_unknown_one(api: Api) -> None:
    local = await api.client.post("/api/servers/local/sign-in")
    assert local.status_code == 400
    assert "'local' is a stdio server; OAuth is for remote (http/sse) servers" in local.json()["error"]["message"]
    unknown = await api.client.post("/api/servers/nope/sign-in")
    assert unknown.status_code == 404


async def test_an_authorization_url_that_is_not_a_web_page_is_never_handed_to_the_console() -> None:
    send, receive = anyio.create_memory_object_stream[tuple[str, dict[str, Any]]](1)
    with send, receive:
        interaction = _StreamInteraction(send, timeout=1)
        with pytest.raises(AuthorizationError, match="not an http"):
            await interaction.redirect("evil", "javascript:alert(document.cookie)")
        await interaction.redirect("fine", "https://auth.example/authorize?x=1")
        sent = receive.receive_nowait()
        assert sent == ("authorize", {"server": "fine", "url": "https://auth.example/authorize?x=1"})
        with pytest.raises(anyio.WouldBlock):
            receive.receive_nowait()
