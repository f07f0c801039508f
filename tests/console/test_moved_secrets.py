"""The server dialog asks before a new URL takes the stored secrets to another host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Console

STORED = {"Authorization": "Bearer stored-secret-123456"}


def test_a_new_host_gets_the_stored_headers_only_when_the_user_says_so(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    console = console_for({"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": STORED}})
    page = console.open()
    page.locator("tr[data-name=remote]").get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit remote")
    dialog.get_by_label("URL").fill("http://127.0.0.1:10/mcp")

    dialog.get_by_role("button", name="Save & reconnect").click()
    asked = page.get_by_role("dialog", name="Send the stored secrets to the new host?")
    expect(asked).to_contain_text("headers.Authorization")
    expect(asked).to_contain_text("http://127.0.0.1:10")
    asked.get_by_role("button", name="Cancel").click()
    expect(dialog).to_contain_text("Nothing was sent")
    assert console.config_file()["mcpServers"]["remote"]["url"] == "http://127.0.0.1:9/mcp"

    dialog.get_by_role("button", name="Save & reconnect").click()
    page.get_by_role("dialog", name="Send the stored secrets to the new host?").get_by_role(
        "button", name="Send them there"
    ).click()
    expect(dialog).to_be_hidden()
    saved = console.config_file()["mcpServers"]["remote"]
    assert saved["url"] == "http://127.0.0.1:10/mcp"
    assert saved["headers"] == STORED
