"""50 servers with 40 tools each (2000 tools), measured in the page with ``performance.now()``:
first render, filtering per keystroke, and a status change on screen after its event.

The servers are in-process SDK servers, served with the console and API in a thread of the
test process (50 stdio children would measure process start-up, not the page).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from playwright.sync_api import BrowserContext, expect

from mcpdeck import Host
from tests.console.conftest import InProcess, watch_errors

SERVERS = 50
TOOLS = 40
FIRST_RENDER = 1000.0
"""Milliseconds from navigation to every row (or tool) on screen."""
KEYSTROKE = 50.0
"""Milliseconds from a keystroke in the filter to the filtered list painted."""
STATUS = 100.0
"""Milliseconds from a status event reaching a second listener in the page to the row painted.

The console's own stream and that listener are two connections that get the same event at
about the same time, so this can come out slightly negative."""


def many_tools(index: int) -> MCPServer:
    server = MCPServer(f"load{index:02d}", version="1.0")
    for number in range(TOOLS):

        def tool(text: str, count: int = 1) -> str:
            return text * count

        server.add_tool(
            tool,
            name=f"tool_{number:02d}_{'alpha' if number % 2 else 'beta'}",
            description=f"Tool {number} of server {index}: does thing number {number} with some text.",
        )
    return server


async def fifty(host: Host) -> None:
    import anyio

    async with anyio.create_task_group() as tg:
        for index in range(SERVERS):
            tg.start_soon(lambda i=index: host.add_server(f"srv{i:02d}", many_tools(i), save=False))


# Types one character at a time into `input`; after each, waits for the next frame to be painted.
_TYPE = """async ([selector, text, rowSelector]) => {
  const input = document.querySelector(selector);
  const times = [];
  const shown = [];
  for (const ch of text) {
    const start = performance.now();
    input.value += ch;
    input.dispatchEvent(new Event('input', { bubbles: true }));
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    times.push(performance.now() - start);
    const rows = [...document.querySelectorAll(rowSelector)];
    shown.push(rows.filter((el) => !el.hidden && !el.closest('[hidden]')).length);
  }
  return { times, shown };
}"""


def test_fifty_servers_and_two_thousand_tools_stay_quick(
    browser: BrowserContext, in_process: Callable[[Callable[[Host], Any]], InProcess]
) -> None:
    served = in_process(fifty)
    page = browser.new_page()
    errors = watch_errors(page)
    page.goto(f"{served.url}/?token={served.token}")

    # Servers: first render, timed from the start of a fresh load of the page.
    page.goto(f"{served.url}/#/servers")
    page.reload()
    rendered = page.wait_for_function(
        f"() => document.querySelectorAll('tr[data-name]').length === {SERVERS} && performance.now()", polling="raf"
    ).json_value()
    assert rendered < FIRST_RENDER, f"50 servers took {rendered:.0f} ms to render"
    expect(page.locator(".summary")).to_contain_text(
        f"{SERVERS} servers ({SERVERS} connected) · {SERVERS * TOOLS} tools"
    )

    # Servers: filtering, keystroke by keystroke.
    typed = page.evaluate(_TYPE, ["input[aria-label='Filter servers']", "srv4", "tr[data-name]"])
    assert typed["shown"][-1] == 10  # srv40 ... srv49
    worst_servers = max(typed["times"])
    assert worst_servers < KEYSTROKE, f"filtering servers took {typed['times']} ms per keystroke"
    page.fill("input[aria-label='Filter servers']", "")

    # A status change: the page's own event stream and the row, timed against a second listener.
    delta = page.evaluate(
        """async () => {
          const status = document.querySelector('tr[data-name=srv07] .status');
          const painted = new Promise((resolve) => {
            new MutationObserver(() => {
              if (status.dataset.state === 'stopped') requestAnimationFrame(() => resolve(performance.now()));
            }).observe(status, { attributes: true });
          });
          const arrived = new Promise((resolve) => {
            const source = new EventSource('/api/events');
            source.addEventListener('ServerStatusChanged', (m) => {
              const e = JSON.parse(m.data);
              if (e.server === 'srv07' && e.state === 'stopped') { resolve(performance.now()); source.close(); }
            });
            source.onopen = () => fetch('/api/servers/srv07/disconnect', { method: 'POST' });
          });
          const late = new Promise((_, reject) =>
            setTimeout(() => reject(new Error('no status change within 10 s')), 10000));
          const [a, p] = await Promise.race([Promise.all([arrived, painted]), late]);
          return p - a;
        }"""
    )
    assert delta < STATUS, f"the status change took {delta:.1f} ms from event to screen"
    expect(page.locator("tr[data-name=srv07] .state-text")).to_have_text("stopped")

    # Tools: first render of 2000, then filtering.
    page.goto(f"{served.url}/#/tools")
    page.reload()  # timed from a fresh load
    tools_rendered = page.wait_for_function(
        f"() => document.querySelectorAll('.list-item[data-name]').length === {(SERVERS - 1) * TOOLS}"
        " && performance.now()",
        polling="raf",
    ).json_value()
    assert tools_rendered < FIRST_RENDER, f"{(SERVERS - 1) * TOOLS} tools took {tools_rendered:.0f} ms to render"
    typed_tools = page.evaluate(_TYPE, ["input[aria-label='Search tools']", "srv12 alpha", ".list-item[data-name]"])
    assert typed_tools["shown"][-1] == TOOLS // 2
    worst_tools = max(typed_tools["times"])
    assert worst_tools < KEYSTROKE, f"filtering tools took {typed_tools['times']} ms per keystroke"
    print(
        f"\nconsole load: servers first render {rendered:.0f} ms, tools first render {tools_rendered:.0f} ms, "
        f"filter keystroke worst {worst_servers:.1f} ms (servers) / {worst_tools:.1f} ms (tools), "
        f"median {sorted(typed_tools['times'])[len(typed_tools['times']) // 2]:.1f} ms (tools), "
        f"status event to screen {delta:.1f} ms"
    )
    assert errors == []
    page.close()
