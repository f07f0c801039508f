"""The pages with tables at 900, 1360 and 1920 px: nothing needs scrolling sideways, no name
(a server's, a tool's, a profile's) is broken inside a word or centred, a row's actions stay on
screen (on one line from 1360 px); what the tables say is right: a failed server's tool count
is no link, a command line is quoted as a shell reads it, the History page counts every call;
and a toolbar stays where it was drawn when the page's first answer comes in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, expect

from tests.console.conftest import Console
from tests.helpers import stdio_server
from tests.servers.basic import LONG_TOOL

SERVER = "quarterly-reports-archive_eu-west-1"
PROFILE = "coding-assistant_read-only_tools"
WIDTHS = (900, 1360, 1920)
CALLS = 55  # more than the History page's first page (50)

# Every element of <main> that can scroll sideways and would have to; every place a name is split
# inside a word (a line break after a character that is not _ - . / : or a space) or centred.
LAYOUT_PROBLEMS = """(names) => {
  const problems = [];
  const main = document.querySelector('main');
  const where = (el) => `<${el.tagName.toLowerCase()} class="${el.className}">`;
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth) {
    problems.push(`the page scrolls sideways: ${page.scrollWidth} > ${page.clientWidth}`);
  }
  for (const el of main.querySelectorAll('*')) {
    const style = getComputedStyle(el);
    if (['auto', 'scroll'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${where(el)} scrolls sideways: ${el.scrollWidth} > ${el.clientWidth}`);
    }
  }
  for (const name of names) {
    for (const el of main.querySelectorAll('*')) {
      if (!el.textContent.includes(name) || [...el.children].some((c) => c.textContent.includes(name))) continue;
      if (!el.getClientRects().length) continue; // not shown (a closed <details>, a hidden row)
      const chars = [];
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.data.length; i++) chars.push([node, i]);
      }
      const text = chars.map(([node, i]) => node.data[i]).join('');
      for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
        let top = null;
        for (let k = 0; k < name.length; k++) {
          const [node, i] = chars[at + k];
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const rect = range.getClientRects()[0];
          if (!rect) continue;
          if (top !== null && rect.top > top + 2 && !/[_\\-./:\\s]/.test(name[k - 1])) {
            problems.push(`${name} is split after "${name.slice(0, k)}" in ${where(el)}`);
          }
          top = rect.top;
        }
        if (getComputedStyle(el).textAlign === 'center') {
          problems.push(`${name} is centred in ${where(el)}`);
        }
      }
    }
  }
  return problems;
}"""

# A server row's action buttons: [left, top, right] of each.
ACTIONS = """(row) => [...row.querySelectorAll('.row-actions button')].map((b) => {
  const r = b.getBoundingClientRect();
  return [r.left, r.top, r.right];
})"""


def setup(console: Console) -> tuple[Page, list[str]]:
    """The console with its servers up, a profile, and the calls; the names to look for."""
    page = console.open()
    expect(page.locator(f"tr[data-name={SERVER}] .status")).to_have_attribute("data-state", "connected")
    tools = page.evaluate(
        f"async () => (await (await fetch('/api/tools?server={SERVER}', {{headers: "
        "{authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})).json())"
    )
    long_tool = next(t["name"] for t in tools if t["tool"] == LONG_TOOL)
    echo = f"mcp__{SERVER}__echo"
    assert len(long_tool) == 64  # cut to the longest a catalog name may be, a hash at its end
    answers = page.evaluate(
        """async ([echo, long, count]) => {
          const call = async (name, args) => (await fetch(`/api/tools/${name}/call`, {method: 'POST',
            headers: {'content-type': 'application/json',
                      authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')},
            body: JSON.stringify({arguments: args})})).status;
          const answers = [await call(long, {})];
          for (let i = 0; i < count; i++) answers.push(await call(echo, {text: `call ${i}`}));
          return answers;
        }""",
        [echo, long_tool, CALLS],
    )
    assert answers == [200] * (CALLS + 1)
    status = page.evaluate(
        """async ([name, server]) => (await fetch(`/api/profiles/${name}`, {method: 'PUT',
          headers: {'content-type': 'application/json',
                    authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')},
          body: JSON.stringify({servers: [server]})})).status""",
        [PROFILE, SERVER],
    )
    assert status == 200
    return page, [SERVER, PROFILE, long_tool, echo]


def show(page: Page, console: Console, route: str) -> None:
    """Open a page and wait for its table (or list) to be filled."""
    page.goto(f"{console.url}/#/{route}")
    if route == "servers":
        expect(page.locator(f"tr[data-name={SERVER}] .status")).to_have_attribute("data-state", "connected")
    elif route == "tools":
        expect(page.locator(".list-item")).not_to_have_count(0)
    elif route == "history":
        expect(page.locator("table.history tbody tr")).to_have_count(50)
    elif route == "profiles":
        expect(page.locator("table.profiles tbody tr")).to_have_count(1)
        page.locator("table.profiles summary").click()  # its tools, by name
        expect(page.locator("table.profiles details li").first).to_be_visible()
    else:
        expect(page.locator("table.traffic tr.msg").first).to_be_visible()


def test_tables_fit_at_900_1360_and_1920_px_and_names_are_not_broken_mid_word(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    console = console_for(
        {
            SERVER: stdio_server("basic"),
            "nosuch": {"command": "mcpdeck-test-no-such-command", "args": ["--note", "two words", "it's"]},
            "off": {**stdio_server("basic"), "disabled": True},
        }
    )
    page, names = setup(console)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for route in ("servers", "tools", "history", "profiles", f"traffic/{SERVER}"):
            show(page, console, route)
            problems = page.evaluate(LAYOUT_PROBLEMS, names)
            assert problems == [], f"{route} at {width} px: {problems}"
            if route != "servers":
                continue
            for row in page.locator("table.servers tbody tr").all():
                buttons = row.evaluate(ACTIONS)
                assert len(buttons) == 5
                assert all(0 <= left and right <= width for left, _, right in buttons), f"off screen at {width} px"
                if width >= 1360:  # room for one line: Remove does not wrap under the others
                    assert len({top for _, top, _ in buttons}) == 1, f"the actions wrap at {width} px"
    assert console.errors == []


def test_what_the_tables_say(console_for: Callable[[dict[str, Any]], Console]) -> None:
    console = console_for(
        {
            SERVER: stdio_server("basic"),
            "nosuch": {"command": "mcpdeck-test-no-such-command", "args": ["--note", "two words", "it's"]},
        }
    )
    page, _ = setup(console)
    show(page, console, "servers")
    # A failed server has no tools to show: its count is no link; a connected one's is.
    failed = page.locator("tr[data-name=nosuch]")
    expect(failed.locator(".status")).to_have_attribute("data-state", "failed")
    expect(failed.locator("td.num a")).to_be_hidden()
    expect(failed.locator("td.num")).to_have_text("—")
    expect(page.locator(f"tr[data-name={SERVER}] td.num a")).to_have_text("13")
    # Its command line as a shell would read it back.
    expect(failed.locator(".target")).to_have_text("mcpdeck-test-no-such-command --note 'two words' 'it'\"'\"'s'")

    # The History page counts every call, not the page the limit shows.
    show(page, console, "history")
    expect(page.get_by_text(f"the newest 50 of {CALLS + 1} calls")).to_be_visible()
    page.get_by_label("How many").select_option("200")
    expect(page.locator("table.history tbody tr")).to_have_count(CALLS + 1)
    expect(page.get_by_text(f"{CALLS + 1} calls ·")).to_be_visible()
    assert console.errors == []


# Each toolbar control (by its label) and where it is: [left, top].
TOOLBAR = """() => Object.fromEntries([...document.querySelectorAll('main .toolbar :is(input, select, button)')].map(
(el) => {
  const box = el.getBoundingClientRect();
  return [el.getAttribute('aria-label') || el.labels?.[0]?.textContent || el.textContent, [box.left, box.top]];
}))"""

# Where each of the toolbar's controls is when the page is first drawn, before its first answer comes in.
WATCH_TOOLBAR = f"""
window.firstSeen = {{}};
new MutationObserver(() => {{
  for (const [key, at] of Object.entries(({TOOLBAR})())) if (!(key in window.firstSeen)) window.firstSeen[key] = at;
}}).observe(document, {{ subtree: true, childList: true }});
"""


def test_the_servers_toolbar_stays_put_when_the_switched_off_banner_shows(
    console_for: Callable[..., Console],
) -> None:
    # The banner comes with the first answer; above the toolbar, it moved it down (54 px) under a click.
    console = console_for({"basic": stdio_server("basic")}, mcpEnabled=False)
    console.page.add_init_script(WATCH_TOOLBAR)
    page = console.open("#/servers")
    expect(page.get_by_role("alert")).to_contain_text("All servers are switched off")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "stopped")
    now = page.evaluate(TOOLBAR)
    assert len(now) == 6  # the filter, the grouping, the four bulk actions
    assert now == page.evaluate("window.firstSeen")
    assert console.errors == []


def test_the_traffic_and_logs_toolbars_stay_put_when_the_server_picker_fills_in(
    console_for: Callable[..., Console],
) -> None:
    # The picker is the toolbar's first control and was as wide as its longest name, which came in with
    # GET /servers: the controls beside it moved sideways (187 px for this name) under a click.
    console = console_for({SERVER: stdio_server("basic")})
    console.page.add_init_script(WATCH_TOOLBAR)
    page = console.open("#/servers")
    expect(page.locator(f"tr[data-name={SERVER}] .status")).to_have_attribute("data-state", "connected")
    for route, count in ((f"traffic/{SERVER}", 5), (f"logs/{SERVER}", 4)):
        page.goto(f"{console.url}/#/{route}")
        page.reload()  # a fresh document: the watch starts again
        expect(page.get_by_label("Server", exact=True)).to_have_value(SERVER)
        now = page.evaluate(TOOLBAR)
        assert len(now) == count, now
        assert now == page.evaluate("window.firstSeen"), route
    assert console.errors == []
