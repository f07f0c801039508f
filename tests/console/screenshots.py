"""Take the screenshots of docs/console.md: ``python -m tests.console.screenshots [docs/img]``.

A real ``mcpdeck serve`` with the test servers (one of them broken, one disabled) and
Debian's Chromium at 1280x800, as in the browser tests.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from anyio.from_thread import start_blocking_portal
from playwright.sync_api import Page, expect, sync_playwright

from tests.auth.oauth_server import oauth_servers
from tests.console.conftest import CHROMIUM, CHROMIUM_ARGS, sign_in, start_serve, stop_serve
from tests.helpers import stdio_server
from tests.llm.scripted import Call, Reply, Step, serve_scripted_in_thread

CHAT: list[Step] = [
    Reply(text="I will add them with the basic server's tool.", tool_calls=[Call("mcp__basic__add", {"a": 2, "b": 3})]),
    lambda request: Reply(text=f"2 + 3 = {request.tool_results[0][1]}.", chunks=5),
]


def shoot(page: Page, folder: Path, name: str) -> None:
    page.wait_for_timeout(300)  # let transitions end
    page.screenshot(path=str(folder / f"console-{name}.png"))
    print(f"wrote {folder / f'console-{name}.png'}")


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(oauth_servers()) as oauth,
        serve_scripted_in_thread("openai", CHAT) as llm,
    ):
        servers = _servers()
        servers["secure"] = {"type": "http", "url": oauth.mcp_url}
        providers = {"scripted": {"type": "openai", "baseUrl": llm.base_url, "apiKey": "test-key"}}
        _shoot_all(folder, servers, providers=providers, model="scripted:demo-model")


def _servers() -> dict[str, Any]:
    # Started directly (not through the test suite's fork server), so the commands shown are real ones.
    return {
        "basic": stdio_server("basic", direct=True, env={"API_TOKEN": "s3cret-token-value-42", "PLAIN": "x"}),
        "features": stdio_server("features", direct=True),
        "notes": stdio_server("features", direct=True),
        "github": {"command": "github-mcp-server", "args": ["stdio"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "remote": {
            "type": "http",
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer abcdef123456"},
        },
        "archive": {**stdio_server("basic", direct=True), "disabled": True},
    }


def _shoot_all(folder: Path, servers: dict[str, Any], **extra: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        serving = start_serve(Path(tmp), servers, **extra)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.emulate_media(color_scheme="light")
                sign_in(page, serving.url, serving.token)
                page.goto(f"{serving.url}/#/servers")
                expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
                expect(page.locator("tr[data-name=notes] .status")).to_have_attribute("data-state", "connected")
                page.locator("tr[data-name=features]").get_by_role("button", name="Test").click()
                expect(page.locator("tr[data-name=features] .note")).to_contain_text("Test passed")
                shoot(page, folder, "servers")

                page.locator("tr[data-name=basic]").get_by_role("button", name="Edit").click()
                dialog = page.get_by_role("dialog")
                dialog.get_by_role("button", name="Test").click()
                expect(dialog.get_by_text("Connected:")).to_be_visible()
                shoot(page, folder, "edit")
                page.keyboard.press("Escape")

                page.get_by_role("button", name="Paste JSON").click()
                dialog = page.get_by_role("dialog")
                dialog.get_by_role("textbox").fill(
                    '{\n  "mcpServers": {\n    "memory": {"command": "npx", "args": ["-y", '
                    '"@modelcontextprotocol/server-memory"]},\n    "fetch": {"command": "uvx", "args": '
                    '["mcp-server-fetch"]},\n    "docs": {"url": "https://example.com/mcp"}\n  }\n}'
                )
                dialog.get_by_role("button", name="Read it").click()
                shoot(page, folder, "paste")
                page.keyboard.press("Escape")

                page.goto(f"{serving.url}/#/tools/mcp__basic__slow_progress")
                panel = page.locator(".panel")
                panel.get_by_label("Steps").fill("5")
                panel.get_by_label("Delay").fill("0.6")
                panel.get_by_role("button", name="Call").click()
                expect(panel.locator(".progress-text")).to_contain_text("step 2 of 5")
                shoot(page, folder, "tools-progress")
                expect(panel.locator(".result")).to_be_visible()

                page.goto(f"{serving.url}/#/tools/mcp__basic__structured")
                panel.get_by_label("city").fill("Bergen")
                panel.get_by_role("button", name="Call").click()
                expect(panel.locator(".result")).to_contain_text("Bergen")
                shoot(page, folder, "tools")

                page.goto(f"{serving.url}/#/resources")
                page.get_by_role("button", name="features://logo").first.click()
                page.get_by_role("tab", name="Templates").click()
                page.get_by_role("button", name="note://{id}").first.click()
                page.locator(".panel").get_by_label("id", exact=True).fill("42")
                page.locator(".panel").get_by_role("button", name="Read").click()
                expect(page.locator(".panel")).to_contain_text("note 42 (from the template)")
                shoot(page, folder, "resources")

                page.goto(f"{serving.url}/#/prompts")
                page.get_by_role("button", name="mcp__features__review").click()
                page.locator(".panel").get_by_label("code").fill("def add(a, b): return a - b")
                page.locator(".panel").get_by_label("language").fill("python")
                page.locator(".panel").get_by_role("button", name="Get messages").click()
                expect(page.locator(".panel .message")).to_be_visible()
                shoot(page, folder, "prompts")

                page.goto(f"{serving.url}/#/logs/basic")
                expect(page.get_by_role("log")).to_contain_text("mcpdeck starting basic")
                shoot(page, folder, "logs")

                page.goto(f"{serving.url}/#/history")
                expect(page.locator("table.history")).to_be_visible()
                page.locator("table.history").get_by_role("button").first.click()
                shoot(page, folder, "history")

                page.goto(f"{serving.url}/#/chat")
                page.get_by_role("button", name="New chat").click()
                message = page.get_by_label("Message")
                message.fill("What is 2 + 3? Use a tool.")
                message.press("Enter")
                dialog = page.get_by_role("dialog", name="Allow this tool call?")
                expect(dialog).to_be_visible()
                shoot(page, folder, "chat-approval")
                dialog.get_by_role("button", name="Allow once").click()
                expect(page.get_by_role("log", name="Conversation")).to_contain_text("2 + 3 = 5.")
                shoot(page, folder, "chat")

                page.goto(f"{serving.url}/#/traffic/basic")
                call = page.locator("tr.msg.out", has_text="tools/call").last  # the chat's call of add
                call.click()
                expect(page.locator("pre.traffic-body").first).to_contain_text('"name": "add"')
                page.locator("pre.traffic-body").first.scroll_into_view_if_needed()
                shoot(page, folder, "traffic")

                page.goto(f"{serving.url}/#/metrics")  # the calls the pages above made
                expect(page.locator(".metric-card[data-server=basic] canvas")).to_have_count(3)
                shoot(page, folder, "metrics")

                page.emulate_media(color_scheme="dark")
                page.goto(f"{serving.url}/#/servers")
                expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
                shoot(page, folder, "dark")
                browser.close()
        finally:
            stop_serve(serving)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img"))
