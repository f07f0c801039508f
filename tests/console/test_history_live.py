"""The History page's live list in Chromium against a real ``mcpdeck serve``: calls made while the user is on
the list (the pointer over it, keyboard focus in it) wait above it ("2 newer calls — show") and leave every row
where it was; the button, or moving off the list, brings them in; a filter still applies at once."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
from playwright.sync_api import Page, expect

from tests.console.conftest import Console
from tests.helpers import WAIT, stdio_server

# The page's own API, read from inside it: how many calls the server's history holds.
TOTAL = """async (n) => (await (await fetch('/api/history/calls?limit=50', {headers:
  {authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})).json()).total === n"""

# The newest call in the server's history has ended well.
ENDED = """async () => (await (await fetch('/api/history/calls?limit=1', {headers:
  {authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})).json()).toolCalls[0]?.status === 'ok'"""


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
    # Said once to a screen reader, not at each count
    expect(page.locator(".calls-head [aria-live=polite]")).to_have_text("Newer calls wait above the list")
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


def test_a_call_that_ends_while_the_user_is_on_the_list_waits_too(console_for: Callable[..., Console]) -> None:
    console = console_for({"basic": stdio_server("basic")})
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
    _call(console, "before")
    page.get_by_role("link", name="History").click()
    rows = page.locator("table.history tbody tr")
    expect(rows).to_have_count(1)
    auth = {"Authorization": f"Bearer {console.token}"}
    with httpx2.Client(base_url=console.url, headers=auth, timeout=WAIT) as http, ThreadPoolExecutor(1) as pool:
        slow = pool.submit(
            http.post, "/api/tools/mcp__basic__slow_progress/call", json={"arguments": {"steps": 5, "delay": 0.5}}
        )
        running = rows.filter(has_text="mcp__basic__slow_progress")
        expect(running.locator("td").nth(3)).to_have_text("running")  # in at once: the pointer is off the list
        running.locator("td").first.hover()  # within the call's 2.5 s
        assert not page.evaluate(ENDED)
        assert slow.result(timeout=WAIT).status_code == 200
    page.wait_for_function(ENDED)
    expect(page.locator(".calls-newer button")).to_have_text("1 call updated — show")
    expect(running.locator("td").nth(3)).to_have_text("running")
    page.get_by_role("heading", name="History").hover()
    expect(running.locator("td").nth(3)).to_have_text("ok")
    assert console.errors == [], console.errors


def test_a_filter_applies_at_once_while_calls_keep_coming(console_for: Callable[..., Console]) -> None:
    """Calls end every few milliseconds (a busy gateway): the list is still read, and a filter still applies."""
    console = console_for({"basic": stdio_server("basic")})
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
    _call(console, "first")
    page.get_by_role("link", name="History").click()
    rows = page.locator("table.history tbody tr")
    expect(rows).to_have_count(1)
    stop = threading.Event()

    def busy() -> None:
        n = 0
        while not stop.is_set():
            _call(console, f"busy {n}")
            n += 1

    with ThreadPoolExecutor(1) as pool:
        calls = pool.submit(busy)
        try:
            expect(rows.nth(5)).to_be_visible()  # read while the calls keep coming
            rows.nth(0).locator("td").first.hover()
            expect(page.locator(".calls-newer button")).to_contain_text("newer call")
            page.get_by_label("Tool name contains").fill("nothing like it")
            expect(page.get_by_text("No tool calls match.")).to_be_visible()
        finally:
            stop.set()
            calls.result(timeout=WAIT)
    assert console.errors == [], console.errors


def _opened(console: Console, calls: int) -> Page:
    """The History page with ``calls`` calls made before it opened."""
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
    for n in range(calls):
        _call(console, f"call {n}")
    page.get_by_role("link", name="History").click()
    expect(page.locator("table.history tbody tr")).to_have_count(calls)
    return page


def test_the_call_shown_under_the_list_stays_put_while_the_pointer_goes_to_it(
    console_for: Callable[..., Console],
) -> None:
    """The list and the call shown under it hold together: moving from the held list to the call's details does
    not bring the newer calls in above them (which pushed the details down 97 px under the pointer)."""
    console = console_for({"basic": stdio_server("basic")})
    page = _opened(console, 3)
    rows = page.locator("table.history tbody tr")
    rows.nth(1).get_by_role("button").click()
    heading = page.locator("h3", has_text="mcp__basic__echo")
    expect(heading).to_be_visible()
    for n in (3, 4, 5):
        _call(console, f"call {n}")
    _in_history(page, 6)
    newer = page.locator(".calls-newer button")
    expect(newer).to_have_text("3 newer calls — show")
    before = heading.bounding_box()
    assert before is not None
    page.mouse.move(before["x"] + 5, before["y"] + before["height"] / 2)
    _call(console, "call 6")
    _in_history(page, 7)
    expect(newer).to_have_text("4 newer calls — show")
    expect(rows).to_have_count(3)
    assert heading.bounding_box() == before
    page.get_by_role("heading", name="History").hover()  # off both: the newer calls come in
    expect(rows).to_have_count(7)
    assert console.errors == [], console.errors


def test_a_screen_reader_is_told_once_that_newer_calls_wait_not_at_each_count(
    console_for: Callable[..., Console],
) -> None:
    console = console_for({"basic": stdio_server("basic")})
    page = _opened(console, 1)
    page.locator("table.history tbody tr").first.locator("td").first.hover()
    page.evaluate("""() => { window.said = []; for (const region of document.querySelectorAll('[aria-live]'))
      new MutationObserver(() => window.said.push(region.textContent))
        .observe(region, {subtree: true, childList: true, characterData: true}); }""")
    for n in range(1, 6):
        _call(console, f"more {n}")
        _in_history(page, n + 1)
        expect(page.locator(".calls-newer button")).to_have_text(f"{n} newer call{'' if n == 1 else 's'} — show")
    assert page.evaluate("window.said") == ["Newer calls wait above the list"]


def test_the_newer_calls_line_stays_below_the_top_bar_when_the_window_narrows(
    console_for: Callable[..., Console],
) -> None:
    """Scrolled down, the line sticks under the top bar; a narrower window wraps the bar's links (taller bar)
    while the list is held, and the line follows it instead of staying under the bar."""
    console = console_for({"basic": stdio_server("basic")})
    page = _opened(console, 30)
    page.mouse.move(5, 600)
    page.mouse.wheel(0, 500)
    page.wait_for_function("() => window.scrollY > 0")
    page.set_viewport_size({"width": 900, "height": 800})
    _call(console, "a newer call")
    _in_history(page, 31)
    newer = page.locator(".calls-newer button")
    expect(newer).to_have_text("1 newer call — show")
    bar, button = page.locator(".top").bounding_box(), newer.bounding_box()
    assert bar is not None and button is not None
    assert button["y"] >= bar["y"] + bar["height"], (bar, button)
    newer.click()
    expect(page.locator("table.history tbody tr")).to_have_count(31)


def _window_scroll_listeners(page: Page) -> int:
    cdp = page.context.new_cdp_session(page)
    try:
        window: Any = cdp.send("Runtime.evaluate", {"expression": "window"})  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        found: Any = cdp.send("DOMDebugger.getEventListeners", {"objectId": window["result"]["objectId"]})  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    finally:
        cdp.detach()
    listeners: list[dict[str, Any]] = found["listeners"]
    return sum(1 for listener in listeners if listener["type"] == "scroll")


def test_visits_to_the_tool_calls_tab_leave_no_listeners_behind(console_for: Callable[..., Console]) -> None:
    console = console_for({"basic": stdio_server("basic")})
    page = _opened(console, 1)
    first = _window_scroll_listeners(page)
    for _ in range(5):
        page.get_by_role("tab", name="Conversations").click()
        page.get_by_role("tab", name="Tool calls").click()
        expect(page.locator("table.history tbody tr")).to_have_count(1)
    assert _window_scroll_listeners(page) == first
