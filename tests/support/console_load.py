"""The console under load (50 servers of 40 tools): the servers, and what a page measures (first render,
keystrokes, a status change), for ``tests/console/test_load.py`` and ``python -m bench.console``."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.mcpserver import MCPServer
from playwright.sync_api import Page, expect

from mcpdeck import Host
from tests.console.conftest import InProcess

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


@dataclass(frozen=True)
class LoadFigures:
    """Milliseconds measured in the page."""

    servers_render: float
    servers_keystroke: float
    status: float
    tools_render: float
    tools_keystroke: float
    tools_keystroke_median: float

    def __str__(self) -> str:
        return (
            f"servers first render {self.servers_render:.0f} ms, tools first render {self.tools_render:.0f} ms, "
            f"filter keystroke worst {self.servers_keystroke:.1f} ms (servers) / {self.tools_keystroke:.1f} ms "
            f"(tools), median {self.tools_keystroke_median:.1f} ms (tools), status event to screen {self.status:.1f} ms"
        )


def measure(page: Page, served: InProcess) -> LoadFigures:
    """Load the console of ``served`` (the 50 servers of ``fifty``) in ``page``; check what it shows, time it."""
    # Servers: first render, timed from the start of a fresh load of the page.
    page.goto(f"{served.url}/#/servers")
    page.reload()
    rendered = page.wait_for_function(
        f"() => document.querySelectorAll('tr[data-name]').length === {SERVERS} && performance.now()", polling="raf"
    ).json_value()
    expect(page.locator(".summary")).to_contain_text(
        f"{SERVERS} servers ({SERVERS} connected) · {SERVERS * TOOLS} tools"
    )

    # Servers: filtering, keystroke by keystroke.
    typed = page.evaluate(_TYPE, ["input[aria-label='Filter servers']", "srv4", "tr[data-name]"])
    assert typed["shown"][-1] == 10  # srv40 ... srv49
    worst_servers = max(typed["times"])
    page.fill("input[aria-label='Filter servers']", "")

    # A status change: the page's own event stream and the row, timed against a second listener.
    delta = page.evaluate(
        """async () => {
          const { EventStream } = await import('/console/api.js');  // EventSource cannot send the session header
          const auth = { authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session') };
          const status = document.querySelector('tr[data-name=srv07] .status');
          const painted = new Promise((resolve) => {
            new MutationObserver(() => {
              if (status.dataset.state === 'stopped') requestAnimationFrame(() => resolve(performance.now()));
            }).observe(status, { attributes: true });
          });
          const arrived = new Promise((resolve) => {
            const source = new EventStream('/api/events');
            source.addEventListener('ServerStatusChanged', (m) => {
              const e = JSON.parse(m.data);
              if (e.server === 'srv07' && e.state === 'stopped') { resolve(performance.now()); source.close(); }
            });
            source.onopen = () => fetch('/api/servers/srv07/disconnect', { method: 'POST', headers: auth });
          });
          const late = new Promise((_, reject) =>
            setTimeout(() => reject(new Error('no status change within 10 s')), 10000));
          const [a, p] = await Promise.race([Promise.all([arrived, painted]), late]);
          return p - a;
        }"""
    )
    expect(page.locator("tr[data-name=srv07] .state-text")).to_have_text("stopped")

    # Tools: first render of 2000, then filtering.
    page.goto(f"{served.url}/#/tools")
    page.reload()  # timed from a fresh load
    tools_rendered = page.wait_for_function(
        f"() => document.querySelectorAll('.list-item[data-name]').length === {(SERVERS - 1) * TOOLS}"
        " && performance.now()",
        polling="raf",
    ).json_value()
    typed_tools = page.evaluate(_TYPE, ["input[aria-label='Search tools']", "srv12 alpha", ".list-item[data-name]"])
    assert typed_tools["shown"][-1] == TOOLS // 2
    times = sorted(typed_tools["times"])
    return LoadFigures(rendered, worst_servers, delta, tools_rendered, times[-1], times[len(times) // 2])
