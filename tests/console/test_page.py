"""The console page itself: what a hostile server sends stays text, the page's headers,
themes, and the keyboard (focus styles, dialogs that keep focus and close on Esc)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, Literal

import httpx2
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from playwright.sync_api import BrowserContext, Page, expect
from pydantic import BaseModel, Field

from mcpdeck import Host
from tests.console.conftest import InProcess, sign_in, watch_errors
from tests.servers.basic import PNG
from tests.servers.basic import build_server as build_basic

HOSTILE = '<img src=x onerror="window.pwned = 1">'


def hostile_server() -> MCPServer:
    server = MCPServer("evil", version="6.6.6")

    def trap(note: str = "") -> list[types.ContentBlock]:
        return [
            types.TextContent(type="text", text='<script>window.pwned = 2</script><b onclick="window.pwned = 3">b</b>'),
            types.ImageContent(
                type="image",
                data=base64.b64encode(b"<svg onload='window.pwned=4'/>").decode(),
                mime_type="image/svg+xml",
            ),
            types.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
            types.ResourceLink(type="resource_link", uri="javascript:window.pwned=5", name=HOSTILE),
            types.ResourceLink(type="resource_link", uri="https://example.com/report?id=1", name="report"),
        ]

    server.add_tool(
        trap,
        name="trap",
        description=f"Looks harmless. {HOSTILE}",
        title=HOSTILE,
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
    )
    return server


class Address(BaseModel):
    street: str
    city: str = "Oslo"


class Order(BaseModel):
    """A nested input: an object, a list of objects, an enum, defaults."""

    customer: str
    size: Literal["small", "medium", "large"] = "medium"
    quantity: int = Field(default=1, ge=1)
    rush: bool = False
    ship_to: Address
    tags: list[str] = Field(default_factory=list[str])


def forms_server() -> MCPServer:
    server = MCPServer("forms", version="1.0")

    def order(order: Order) -> str:
        """Echo the order it got, as JSON."""
        return json.dumps(order.model_dump(), sort_keys=True)

    server.add_tool(order, name="order")
    return server


async def two_servers(host: Host) -> None:
    await host.add_server("evil", hostile_server(), save=False)
    await host.add_server("basic", build_basic(), save=False)
    await host.add_server("forms", forms_server(), save=False)


def open_console(browser: BrowserContext, served: InProcess, route: str) -> tuple[Page, list[str]]:
    page = browser.new_page()
    errors = watch_errors(page)
    sign_in(page, served.url, served.token)
    page.goto(f"{served.url}/{route}")
    return page, errors


def test_what_a_server_sends_is_shown_as_text_never_run(
    browser: BrowserContext, in_process: Callable[[Callable[[Host], Any]], InProcess]
) -> None:
    served = in_process(two_servers)
    page, errors = open_console(browser, served, "#/tools/mcp__evil__trap")
    panel = page.locator(".panel")
    expect(panel.get_by_text(f"Looks harmless. {HOSTILE}")).to_be_visible()  # as text
    expect(page.locator(".list-item[data-name=mcp__evil__trap] .desc")).to_have_text(HOSTILE)
    expect(panel.locator(".badge.read-only")).to_have_text("read-only")
    expect(panel.locator(".badge.open-world")).to_have_text("open-world")
    assert panel.locator(".badge.destructive").count() == 0
    panel.get_by_role("button", name="Call").click()
    result = panel.locator(".result")
    expect(result).to_contain_text("<script>window.pwned = 2</script>")
    assert result.locator("script, b").count() == 0
    expect(result).to_contain_text("An image of type image/svg+xml (not shown")
    images = result.locator("img")
    expect(images).to_have_count(1)  # the PNG only, as a data: URL
    assert (images.get_attribute("src") or "").startswith("data:image/png;base64,")
    expect(result).to_contain_text("javascript:window.pwned=5")  # shown, not a link
    assert result.locator("a[href^='javascript']").count() == 0
    link = result.get_by_role("link", name="https://example.com/report?id=1")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(link).to_have_attribute("target", "_blank")
    assert page.evaluate("window.pwned") is None
    assert errors == []


def test_a_form_is_built_from_a_nested_schema_and_calls_the_tool(
    browser: BrowserContext, in_process: Callable[[Callable[[Host], Any]], InProcess]
) -> None:
    served = in_process(two_servers)
    page, errors = open_console(browser, served, "#/tools/mcp__forms__order")
    panel = page.locator(".panel")
    order = panel.locator("fieldset[data-arg=order]")
    expect(order.locator(":scope > legend")).to_contain_text("*")  # required
    expect(order.get_by_label("size")).to_have_value("1")  # the default, medium (index 1)
    expect(order.get_by_label("quantity")).to_have_value("1")
    panel.get_by_role("button", name="Call").click()
    # What is missing is said at its field, the summary under the form only counts.
    expect(order.locator("[data-arg=customer] .field-error")).to_have_text("required")
    expect(order.get_by_label("customer")).to_have_attribute("aria-invalid", "true")
    expect(panel.get_by_role("alert")).to_contain_text("need a fix (marked above)")
    order.get_by_label("customer").fill("Ada")
    order.get_by_label("size").select_option(label="large")
    order.get_by_label("street").fill("Storgata 1")
    order.get_by_role("button", name="Add an item to tags").click()
    order.get_by_label("tags item 1").fill("gift")

    # JSON mode shows the same arguments, takes an edit, and the form comes back with it.
    panel.get_by_role("button", name="JSON").click()
    arguments = json.loads(panel.get_by_label("Arguments as JSON").input_value())
    assert arguments == {
        "order": {
            "customer": "Ada",
            "size": "large",
            "quantity": 1,
            "rush": False,
            "ship_to": {"street": "Storgata 1", "city": "Oslo"},
            "tags": ["gift"],
        }
    }
    arguments["order"]["quantity"] = 3
    panel.get_by_label("Arguments as JSON").fill(json.dumps(arguments))
    panel.get_by_role("button", name="JSON").click()
    expect(order.get_by_label("quantity")).to_have_value("3")
    panel.get_by_role("button", name="Call").click()
    expected = {**arguments["order"]}
    expect(panel.locator(".result")).to_contain_text(json.dumps(expected, sort_keys=True))
    assert errors == []


def test_the_page_is_served_with_a_strict_policy(in_process: Callable[[Callable[[Host], Any]], InProcess]) -> None:
    served = in_process(two_servers)
    with httpx2.Client(base_url=served.url, headers={"Authorization": f"Bearer {served.token}"}) as client:
        page = client.get("/")
        assert page.status_code == 200
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy
        script = client.get("/console/app.js")
        assert script.status_code == 200
        assert script.headers["content-type"].startswith("text/javascript")
        for bad in ("/console/..%2Fserver%2F_console.py", "/console/nope.js", "/console/__init__.py"):
            assert client.get(bad).status_code == 404, bad
    with httpx2.Client(base_url=served.url) as anonymous:  # the page and its code, with no data, sign a tab in
        assert anonymous.get("/").status_code == 200
        assert anonymous.get("/console/app.js").status_code == 200
        assert anonymous.get("/api/servers").status_code == 401


def test_themes_and_the_keyboard(
    browser: BrowserContext, in_process: Callable[[Callable[[Host], Any]], InProcess]
) -> None:
    served = in_process(two_servers)
    page, errors = open_console(browser, served, "#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")

    # The theme toggle: auto -> light -> dark, remembered.
    toggle = page.locator("#theme")
    background = "getComputedStyle(document.body).backgroundColor"
    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    light = page.evaluate(background)
    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert page.evaluate(background) != light
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")

    # Tab reaches the page's controls, with a visible focus ring.
    page.keyboard.press("Tab")  # the skip link
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert "mcpdeck" in focused
    add = page.get_by_role("button", name="Add server")
    add.focus()
    outline = add.evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline != "none"

    # A dialog keeps focus inside and closes on Esc, giving focus back.
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Add a server")
    expect(dialog).to_be_visible()
    for _ in range(30):
        page.keyboard.press("Tab")
        assert dialog.evaluate("(d) => d.contains(document.activeElement)")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert page.evaluate("document.activeElement.textContent") == "Add server"

    # A status change does not move the row's other cells.
    row = page.locator("tr[data-name=basic]")
    before = row.locator("td.name").bounding_box()
    page.evaluate(
        "() => fetch('/api/servers/basic/disconnect', {method: 'POST', headers: "
        "{authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})"
    )
    expect(row.locator(".status")).to_have_attribute("data-state", "stopped")
    assert row.locator("td.name").bounding_box() == before
    assert errors == []
