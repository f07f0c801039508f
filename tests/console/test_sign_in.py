"""Signing in to a server that asks for OAuth, from the console, in Chromium: a real authorization
server and protected MCP server, a real ``mcpdeck serve``; the sign-in page opens in a tab of the
same browser, comes back to mcpdeck's listener, and the server connects with the new tokens."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from playwright.sync_api import expect

from tests.auth.oauth_server import OAuthSetup, oauth_servers
from tests.console.conftest import Console


@pytest.fixture
def oauth() -> Iterator[OAuthSetup]:
    """An authorization server and a protected MCP server, served from a thread of their own."""
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(oauth_servers()) as setup:
        yield setup


def test_a_server_that_asks_for_a_login_is_signed_in_from_its_row(
    console_for: Callable[[dict[str, Any]], Console], oauth: OAuthSetup
) -> None:
    console = console_for({"secure": {"type": "http", "url": oauth.mcp_url}})
    page = console.open()
    row = page.locator("tr[data-name=secure]")
    expect(row.locator(".status")).to_have_attribute("data-state", "failed")
    expect(row.get_by_text("This server asks you to sign in.")).to_be_visible()

    with page.context.expect_page() as opened:
        row.get_by_role("button", name="Sign in").click()
    tab = opened.value
    # The tab went to the authorization server, which sent it back to mcpdeck's listener; the
    # console closes it once the server has connected.
    tab.wait_for_event("close")
    expect(page.locator("#toasts")).to_contain_text(re.compile(r"Signed in to secure .*: \d+ tools\."))
    expect(page.get_by_role("dialog", name="Sign in to secure")).to_have_count(0)
    expect(row.locator(".status")).to_have_attribute("data-state", "connected")
    expect(row.get_by_text("This server asks you to sign in.")).to_have_count(0)
    assert int(row.locator("td.num a").inner_text()) >= 2
    assert (oauth.provider.seen.authorizations, oauth.provider.seen.code_exchanges) == (1, 1)
    assert console.errors == []
