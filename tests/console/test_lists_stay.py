"""The Tools, Profiles, Resources and Prompts pages read their lists again on the live events (a
server that connects late, one that reconnects, a status change); what they show stays where it was:
a list read again as it was keeps its elements (an open ``<details>``, the selected item), and a server
that connects late is listed after the ones already shown, so no item moves under a click."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
from playwright.sync_api import Locator, Page, expect

from tests.console.conftest import Console
from tests.helpers import WAIT, late_server, release, stdio_server

# Note each answer of the API the page asks for after it has heard live event ``event`` (with the
# console's own api.js, so after the page has heard it too), once the page has done with the answer:
# the page goes on (draws) in the microtasks after the body is read, and a timer runs only after those.
WATCH_READS = """async (event) => {
  const { on } = await import('/console/api.js');
  let heard = false;
  on(event, () => { heard = true; });
  window.reads = [];
  const original = window.fetch;
  window.fetch = async (...args) => {
    const after = heard;
    const response = await original(...args);
    if (!after) return response;
    const text = response.text.bind(response);
    response.text = async () => {
      const body = await text();
      setTimeout(() => window.reads.push(String(args[0])), 0);
      return body;
    };
    return response;
  };
}"""

RECONNECT = """async (name) => {
  const r = await fetch(`/api/servers/${name}/reconnect`, {method: 'POST', headers:
    {authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}});
  return r.status;
}"""


def _read_again(page: Page, *paths: str) -> None:
    """Wait until the page has read (and used) each of ``paths`` of the API after the event ``WATCH_READS`` names."""
    page.wait_for_function(
        "(paths) => paths.every((p) => window.reads.includes(`/api${p}`))", arg=list(paths), timeout=WAIT * 1000
    )


def _release(fifo: Path) -> None:
    with ThreadPoolExecutor(1) as thread:  # (Playwright's sync API holds this thread's event loop)
        thread.submit(anyio.run, release, fifo).result(timeout=WAIT)


def test_a_server_that_connects_late_moves_no_tool_of_the_ones_shown(
    console_for: Callable[..., Console], tmp_path: Path
) -> None:
    """``late`` comes first in the config but connects after the page has listed ``basic``'s tools:
    its tools are listed after them, and a click where ``basic``'s echo was still opens it."""
    fifo = tmp_path / "late.fifo"
    console = console_for({"late": late_server(fifo, "basic"), "basic": stdio_server("basic")})
    page = console.open("#/tools")
    tools = page.get_by_role("list", name="Tools")
    echo = tools.locator('[data-name="mcp__basic__echo"]')
    expect(echo).to_be_visible()
    expect(tools.locator('[data-name^="mcp__late__"]')).to_have_count(0)
    before = echo.bounding_box()
    assert before is not None

    _release(fifo)
    late_echo = tools.locator('[data-name="mcp__late__echo"]')
    expect(late_echo).to_be_visible()  # the late server's tools are in the list
    assert echo.bounding_box() == before
    late_box = late_echo.bounding_box()
    assert late_box is not None and late_box["y"] > before["y"]  # listed after basic's

    page.mouse.click(before["x"] + before["width"] / 2, before["y"] + before["height"] / 2)
    expect(page.locator(".panel h2")).to_have_text("mcp__basic__echo")
    expect(echo).to_have_attribute("aria-current", "true")
    assert console.errors == []


def test_a_reconnect_that_lists_the_same_tools_leaves_the_list_and_the_selected_tool_as_they_are(
    console_for: Callable[..., Console],
) -> None:
    """A reconnect (status events, then ``ToolsChanged`` with the same tools): the page reads the list
    again and touches none of its elements; the tool shown keeps its form and what was typed in it."""
    console = console_for({"basic": stdio_server("basic")})
    page = console.open("#/tools/mcp__basic__echo")
    tools = page.get_by_role("list", name="Tools")
    echo = tools.locator('[data-name="mcp__basic__echo"]')
    expect(echo).to_have_attribute("aria-current", "true")
    text = page.get_by_label("text")
    text.fill("typed before the reconnect")
    echo.evaluate("(el) => { el.marked = 'still here'; }")
    count = tools.locator(".list-item").count()

    page.evaluate(WATCH_READS, "ToolsChanged")
    assert page.evaluate(RECONNECT, "basic") == 200
    _read_again(page, "/tools")

    assert echo.evaluate("(el) => el.marked") == "still here"
    assert tools.evaluate("(list) => [...list.children].every((el) => el.isConnected)")
    expect(tools.locator(".list-item")).to_have_count(count)
    expect(echo).to_have_attribute("aria-current", "true")
    expect(text).to_have_value("typed before the reconnect")
    assert console.errors == []


def test_the_profiles_table_stays_as_it_is_when_a_status_event_changes_nothing(
    console_for: Callable[..., Console],
) -> None:
    """Every status event makes the Profiles page read the profiles again; a table that would be drawn
    as it is keeps its rows, so an opened *N tools* stays open."""
    console = console_for({"basic": stdio_server("basic")}, profiles={"coding": {"servers": ["basic"]}})
    page = console.open("#/profiles")
    row = page.locator("table.profiles tbody tr", has_text="coding")
    served = row.locator("details")
    expect(served.locator("summary")).to_have_text("13 tools")
    served.locator("summary").click()
    expect(served).to_have_attribute("open", "")
    row.evaluate("(el) => { el.marked = 'still here'; }")

    page.evaluate(WATCH_READS, "ServerStatusChanged")
    assert page.evaluate(RECONNECT, "basic") == 200
    _read_again(page, "/profiles", "/servers")

    assert row.evaluate("(el) => el.marked") == "still here"
    expect(served).to_have_attribute("open", "")
    assert console.errors == []


def test_resources_and_prompts_stay_where_they_are_when_a_server_connects_late_or_reconnects(
    console_for: Callable[..., Console], tmp_path: Path
) -> None:
    """The Resources and Prompts pages: ``late`` and ``later`` (first in the config) connect after the
    page has listed ``feat``'s items, which do not move; a reconnect of ``feat`` that lists the same
    leaves the items' elements as they are."""
    late, later = tmp_path / "late.fifo", tmp_path / "later.fifo"
    servers = {"late": late_server(late, "features"), "later": late_server(later, "features")}
    console = console_for({**servers, "feat": stdio_server("features")})
    page = console.open("#/resources")

    def of(server: str) -> Locator:
        return page.locator(".list .list-item").filter(
            has=page.locator(".badge.server", has_text=re.compile(f"^{server}$"))
        )

    about = of("feat").filter(has_text="About")
    expect(about).to_be_visible()
    expect(of("late")).to_have_count(0)
    before = about.bounding_box()
    _release(late)
    expect(of("late").filter(has_text="About")).to_be_visible()
    assert about.bounding_box() == before
    about.evaluate("(el) => { el.marked = 'still here'; }")
    page.evaluate(WATCH_READS, "ResourcesChanged")
    assert page.evaluate(RECONNECT, "feat") == 200
    _read_again(page, "/resources")
    assert about.evaluate("(el) => el.marked") == "still here"

    page.get_by_role("link", name="Prompts").click()
    greet = page.locator(".list .list-item", has_text="mcp__feat__greet")
    expect(greet).to_be_visible()
    expect(page.locator(".list .list-item", has_text="mcp__later__")).to_have_count(0)
    before = greet.bounding_box()
    _release(later)
    expect(page.locator(".list .list-item", has_text="mcp__later__greet")).to_be_visible()
    assert greet.bounding_box() == before
    greet.evaluate("(el) => { el.marked = 'still here'; }")
    page.evaluate(WATCH_READS, "PromptsChanged")
    assert page.evaluate(RECONNECT, "feat") == 200
    _read_again(page, "/prompts")
    assert greet.evaluate("(el) => el.marked") == "still here"
    assert console.errors == []
