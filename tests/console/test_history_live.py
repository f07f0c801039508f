"""The History page's live list in Chromium against a real ``mcpdeck serve``: calls made while the user is on
the list (the pointer over it, keyboard focus in it) wait above it ("2 newer calls — show") and leave every row
where it was; the button, or moving off the list, brings them in; a filter still applies at once."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx2
from playwright.sync_api import Page, expect

from tests.console.conftest import Console
from tests.helpers import WAIT, stdio_server

# The page's own API, read from inside it: how many calls the server's history holds.
TOTAL = """async (n) => (await (await fetch('/api/history/calls?limit=50', {headers:
  {authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})).json()).total === n"""


def _call(console: Console, text: str) -> None:
    """A call made outside the page (as a gateway client's would be): the page only hears of it live."""
    auth = {"Authorization": f"Bearer {console.token}"}
    with httpx2.Client(base_url=console.url, headers=auth, timeout=WAIT) as http:
        answer = http.post("/api/tools/mcp__basic__echo/call", json={"arguments": {"text": text}})
        assert answer.status_code == 200, answer.text


def _in_history(page: Page, n: int) -> None:
    """The server's history holds ``n`` calls (the page's live answer has them too, once it says so)."""
    page.wait_for_function(TOTAL, arg=n)


def test_calls_made_while_the_user_is_on_the_list_wait_above_it(
    console_for: Callable[..., Console], tmp_path: Path
) -> None:
    console = console_for({"basic": stdio_server("basic")})
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
    for n in (1, 2, 3):
        _call(console, f"call {n}")
    page.get_by_role("link", name="History").click()
    rows = page.locator("table.history tbody tr")
    expect(rows).to_have_count(3)
    newer = page.locator(".calls-newer button")
    expect(newer).to_be_hidden()

    # The pointer on a row (about to click it): two calls come in, the rows stay where they are.
    row = rows.nth(1)
    row.locator("td").first.hover()
    before = row.bounding_box()
    _call(console, "call 4")
    _call(console, "call 5")
    _in_history(page, 5)
    expect(newer).to_have_text("2 newer calls — show")  # the page has the newer list, and holds it back
    expect(page.locator(".calls-newer")).to_have_attribute("aria-live", "polite")
    expect(rows).to_have_count(3)
    assert row.bounding_box() == before
    expect(row.get_by_role("button")).to_have_text("mcp__basic__echo")
    shots = Path(os.environ.get("MCPDECK_SCREENSHOTS", tmp_path))
    page.screenshot(path=str(shots / "console-history-newer.png"))

    # The button brings them in (the newest first), and goes.
    newer.click()
    expect(rows).to_have_count(5)
    expect(newer).to_be_hidden()

    # Moving off the list brings them in at once.
    rows.nth(2).locator("td").first.hover()
    _call(console, "call 6")
    _in_history(page, 6)
    expect(newer).to_have_text("1 newer call — show")
    expect(rows).to_have_count(5)
    page.get_by_role("heading", name="History").hover()
    expect(rows).to_have_count(6)
    expect(newer).to_be_hidden()

    # Keyboard focus on a call holds the list too, and stays on that call when it comes in.
    rows.nth(1).get_by_role("button").focus()
    page.keyboard.press("Tab")  # from the keyboard: focus on the next call's button
    focused = rows.nth(2).get_by_role("button")
    expect(focused).to_be_focused()
    before = focused.bounding_box()
    _call(console, "call 7")
    _in_history(page, 7)
    expect(newer).to_have_text("1 newer call — show")
    expect(rows).to_have_count(6)
    assert focused.bounding_box() == before
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    expect(newer).to_be_focused()  # the button sits before the list
    page.keyboard.press("Enter")
    expect(rows).to_have_count(7)
    expect(rows.nth(0).get_by_role("button")).to_be_focused()  # on to the newest call

    # A filter applies at once, the pointer on the list or not.
    rows.nth(3).locator("td").first.hover()
    page.get_by_label("Tool name contains").fill("nothing like it")
    expect(page.get_by_text("No tool calls match.")).to_be_visible()
    page.get_by_label("Tool name contains").fill("")
    expect(rows).to_have_count(7)
    assert console.errors == [], console.errors


def test_calls_made_while_the_list_is_scrolled_down_wait_until_it_is_back_at_the_top(
    console_for: Callable[..., Console], tmp_path: Path
) -> None:
    console = console_for({"basic": stdio_server("basic")})
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
    for n in range(30):  # more than the window holds
        _call(console, f"call {n}")
    page.get_by_role("link", name="History").click()
    rows = page.locator("table.history tbody tr")
    expect(rows).to_have_count(30)
    newer = page.locator(".calls-newer button")

    # Reading older calls, the pointer beside the list (in the page's margin).
    page.mouse.move(5, 600)
    page.mouse.wheel(0, 500)
    page.wait_for_function("() => window.scrollY > 0")
    row = rows.nth(20)
    before = row.bounding_box()
    _call(console, "a newer call")
    _in_history(page, 31)
    expect(newer).to_have_text("1 newer call — show")
    expect(newer).to_be_in_viewport()  # the head stays in sight above the rows
    expect(rows).to_have_count(30)
    assert row.bounding_box() == before
    shots = Path(os.environ.get("MCPDECK_SCREENSHOTS", tmp_path))
    page.screenshot(path=str(shots / "console-history-newer-scrolled.png"))

    # Back at the top, the newer call comes in.
    page.mouse.wheel(0, -2000)
    expect(rows).to_have_count(31)
    expect(newer).to_be_hidden()
    assert console.errors == [], console.errors
