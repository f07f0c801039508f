"""The Profiles page in Chromium against a real ``mcpdeck serve``: make a profile from the dialog,
see what it serves, have an MCP client on its endpoint see the edit, be told why a bad one is
refused, delete it; the History page naming the gateway client of each call."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect

from tests.console.conftest import Console
from tests.helpers import WAIT, stdio_server


def _tools_through_the_gateway(console: Console, profile: str) -> list[str]:
    """The tool names an SDK client lists at ``/mcp/<profile>`` (with the serve token)."""

    async def listing() -> list[str]:
        with anyio.fail_after(WAIT):
            headers = {"Authorization": f"Bearer {console.token}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(f"{console.url}/mcp/{profile}", http_client=http)) as client,
            ):
                return sorted(tool.name for tool in (await client.list_tools()).tools)

    with ThreadPoolExecutor(1) as thread:  # (Playwright's sync API holds this thread's event loop)
        return thread.submit(anyio.run, listing).result()


def _call_through_the_gateway(console: Console, client_name: str) -> None:
    """One ``mcp__basic__echo`` call at ``/mcp`` by an SDK client named ``client_name`` (with the serve token)."""

    async def call() -> None:
        with anyio.fail_after(WAIT):
            headers = {"Authorization": f"Bearer {console.token}"}
            info = types.Implementation(name=client_name, version="0.1.0")
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(f"{console.url}/mcp", http_client=http), client_info=info) as client,
            ):
                result = await client.call_tool("mcp__basic__echo", {"text": "from the gateway"})
                assert not result.is_error, result

    with ThreadPoolExecutor(1) as thread:
        thread.submit(anyio.run, call).result()


def test_the_history_page_names_the_gateway_client_that_made_each_call(console_for: Callable[..., Console]) -> None:
    """docs/gateway.md: every call is in the history with the client it came from; the console's History page,
    open all day, shows it as ``mcpdeck history`` does."""
    console = console_for({"basic": stdio_server("basic")}, permissions={"allow": ["mcp__basic__echo"]})
    page = console.open("#/history")
    expect(page.get_by_text("No tool calls match.")).to_be_visible()
    expect(page.get_by_role("columnheader", name="Client")).to_have_count(0)  # no gateway calls: no column

    _call_through_the_gateway(console, "claude-ai")
    page.get_by_role("button", name="Refresh").click()
    row = page.locator("table.history tbody tr", has_text="mcp__basic__echo")
    expect(row).to_have_count(1)
    expect(page.get_by_role("columnheader", name="Client")).to_be_visible()
    expect(row.locator("td.client")).to_have_text("claude-ai 0.1.0")
    assert console.errors == []


def test_make_edit_and_delete_a_profile(console_for: Callable[..., Console]) -> None:
    console = console_for({"basic": stdio_server("basic"), "other": stdio_server("basic")})
    page = console.open("#/profiles")
    expect(page.get_by_text("No profiles yet.")).to_be_visible()

    page.get_by_role("button", name="New profile").first.click()
    dialog = page.get_by_role("dialog", name="New profile")
    own = dialog.get_by_role("checkbox", name=re.compile("their own names"))
    expect(own).to_be_disabled()  # only for one server
    dialog.get_by_role("textbox", name="Name").fill("two words")
    dialog.get_by_role("checkbox", name="All servers").uncheck()
    dialog.get_by_role("checkbox", name="basic").check()
    expect(own).to_be_enabled()
    dialog.get_by_label("Only these tools").fill("e*\nadd")
    dialog.get_by_label("Never these tools").fill("env")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.get_by_role("alert")).to_contain_text("use only letters, digits")  # said in the dialog
    assert "profiles" not in console.config_file()

    dialog.get_by_role("textbox", name="Name").fill("coding")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    row = page.get_by_role("row", name=re.compile("coding"))
    expect(row).to_contain_text("only e*, add; not env")
    expect(row).to_contain_text("2 tools")
    expect(row).to_contain_text(f"{console.url}/mcp/coding")
    saved: dict[str, Any] = console.config_file()["profiles"]["coding"]
    assert saved == {"servers": ["basic"], "tools": {"include": ["e*", "add"], "exclude": ["env"]}}
    assert _tools_through_the_gateway(console, "coding") == ["mcp__basic__add", "mcp__basic__echo"]

    row.get_by_role("button", name="Edit profile coding").click()
    dialog = page.get_by_role("dialog", name="Edit profile coding")
    expect(dialog.get_by_role("textbox", name="Name")).to_have_js_property("readOnly", True)
    dialog.get_by_role("checkbox", name=re.compile("their own names")).check()
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    expect(row).to_contain_text("their own")
    assert _tools_through_the_gateway(console, "coding") == ["add", "echo"]

    row.get_by_role("button", name="Delete profile coding").click()
    page.get_by_role("dialog", name="Delete profile coding?").get_by_role("button", name="Delete").click()
    expect(page.get_by_text("No profiles yet.")).to_be_visible()
    assert console.config_file()["profiles"] == {}
    # The one refused save is the only error the browser logged (Chromium logs every 4xx answer).
    assert [e for e in console.errors if "status of 400" not in e] == [] and len(console.errors) == 1
