"""The Tools, Resources and History pages as a user meets them, in Chromium against a real ``mcpdeck serve``:
a server's questions asked during a call (a form from server-everything, a page to open, sampling with no
model), a result of megabytes shown at once (cut, "Show all", a download; the same text once) with the
longest main-thread task it cost, forms labelled by argument name with problems at their field, Markdown
and text blobs shown as such, and a call's result in its History details."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import expect

from tests.console.conftest import Console
from tests.helpers import NODE_BIN, stdio_server
from tests.servers.bulky import BLOB_TEXT
from tests.support.console_long_tasks import (
    LONG_FRAMES,
    longest_task_of_a_call,
    open_tool,
)


def test_a_tool_s_questions_are_asked_on_the_tools_page_and_answered(console_for: Callable[..., Console]) -> None:
    servers = {"everything": {"command": str(NODE_BIN / "mcp-server-everything")}, "features": stdio_server("features")}
    console = console_for(servers, {"MCPDECK_MODEL": None})
    page = open_tool(console, "mcp__everything__trigger-elicitation-request")
    panel = page.locator(".panel")
    panel.get_by_role("button", name="Call").click()
    # The form chat shows, built from the schema the server sent, each field under its name.
    dialog = page.get_by_role("dialog", name="A server asks you")
    expect(dialog).to_contain_text("Please provide inputs for the following fields:")
    name = dialog.get_by_label("name", exact=False).first
    expect(dialog.locator("[data-arg=name] label")).to_contain_text("name")
    expect(dialog.locator("[data-arg=name] .hint")).to_contain_text("Your full, legal name")
    dialog.get_by_role("button", name="Submit").click()  # the required name is missing: said at the field
    expect(dialog.locator("[data-arg=name] .field-error")).to_have_text("required")
    name.fill("Ada Lovelace")
    dialog.get_by_role("button", name="Submit").click()
    expect(dialog).to_be_hidden()
    result = panel.locator(".result")
    expect(result).to_contain_text("User provided the requested information!")
    expect(result).to_contain_text("- Name: Ada Lovelace")

    # A page to open (URL mode): where it leads is named; declining is the answer the server gets.
    page = open_tool(console, "mcp__features__ask_url")
    page.locator(".panel").get_by_role("button", name="Call").click()
    dialog = page.get_by_role("dialog", name="Open a page?")
    expect(dialog.locator(".ask-host")).to_contain_text("example.com")
    dialog.get_by_role("button", name="Decline").click()
    expect(page.locator(".panel .result")).to_contain_text("decline")

    # Sampling with no model set up: nothing to ask, and the page says why under the call.
    page = open_tool(console, "mcp__features__summarize")
    panel = page.locator(".panel")
    panel.locator("[data-arg=text] textarea, [data-arg=text] input").fill("a long story")
    panel.get_by_role("button", name="Call").click()
    expect(panel.locator(".call-notes")).to_contain_text("features asked for a model completion (sampling): refused")
    expect(panel.locator(".call-notes")).to_contain_text(
        'no model is set up to answer it: set MCPDECK_MODEL or "model"'
    )
    # The server (asked on its connection, the handshake era) gets the reason, and its answer says it.
    expect(panel.locator(".result")).to_contain_text("sampling failed: no model is set up")
    assert [e for e in console.errors if "status of 40" not in e] == [], console.errors


def test_a_result_of_megabytes_shows_at_once_cut_with_show_all_and_a_download(
    console_for: Callable[..., Console], tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    console = console_for({"bulky": stdio_server("bulky")})
    page = open_tool(console, "mcp__bulky__text")
    longest = longest_task_of_a_call(page, {"kb": str(10 * 1024)})
    frame = max(page.evaluate(LONG_FRAMES), default=0.0)
    # The figures the goal is judged by (under 200 ms), reported and not asserted: a busy machine's own
    # work lands in them too. bench/console_results.py measures them over rounds.
    record_property("longest_task_ms_10mb_text", round(longest))
    record_property("longest_frame_ms_10mb_text", round(frame))
    print(f"10 MB text result: longest main-thread task {longest:.0f} ms, longest frame {frame:.0f} ms")

    result = page.locator(".panel .result")
    lines = 10 * 1024 * 1024 // 67 + 1
    expect(result.locator(".cut-note")).to_contain_text(f"of {lines:,} lines")
    expect(result.locator(".cut-note")).to_contain_text("of 10,485,760 characters")
    # The SDK's structured content {"result": text} repeats the text: shown once.
    expect(result.locator("h3")).to_have_count(0)
    expect(result.locator(".repeat-note")).to_have_text('Structured content: the text above, as "result" (shown once).')
    assert len(result.locator("pre").first.inner_text()) <= 20_000

    with page.expect_download() as saving:
        result.get_by_role("link", name="Download", exact=True).click()
    saved = tmp_path / "saved.txt"
    saving.value.save_as(saved)
    assert saved.stat().st_size == 10 * 1024 * 1024

    result.get_by_role("button", name="Show all").click()
    whole = result.locator(".chunked")
    expect(whole).to_be_visible()
    expect(result.locator(".cut-note")).to_contain_text(f"All {lines:,} lines")
    blocks = whole.locator("pre.chunk").count()
    whole.evaluate("(box) => { box.scrollTop = box.scrollHeight; }")  # more of it comes as the end nears
    expect(whole.locator("pre.chunk")).not_to_have_count(blocks)

    # A structure's JSON text is not shown again beside its tree; its long list is cut, and says so.
    page = open_tool(console, "mcp__bulky__tree")
    longest_task_of_a_call(page, {"mb": "1"})
    result = page.locator(".panel .result")
    expect(result.locator(".repeat-note")).to_contain_text("The text content is the structured content below, as JSON")
    expect(result.locator("pre")).to_have_count(0)
    expect(result.locator("summary", has_text="records:")).to_have_text("records: [9,532]")
    expect(result.locator(".tree .cut-note")).to_have_text("… 9,432 more not sent (Show all, or Download)")
    assert console.errors == [], console.errors


def test_forms_label_arguments_by_name_and_problems_at_the_field_and_history_shows_the_result(
    console_for: Callable[..., Console],
) -> None:
    console = console_for({"bulky": stdio_server("bulky")})
    page = open_tool(console, "mcp__bulky__pick")
    panel = page.locator(".panel")
    size = panel.locator("[data-arg=size]")
    expect(size.locator("label")).to_have_text("size integer")
    expect(size.locator(".hint")).to_have_text("Kb — How big, in kilobytes")  # the schema's title is help
    expect(panel.locator("[data-arg=a] .hint")).to_have_count(0)  # a title that only restates the name ("A")
    panel.get_by_label("a", exact=False).first.fill("7")
    panel.get_by_role("button", name="Call").click()
    expect(panel.locator(".result")).to_contain_text("picked 7, 1 kB, ''")

    panel.locator("[data-arg=a] input").fill("")
    panel.get_by_role("button", name="Call").click()
    problem = panel.locator("[data-arg=a] .field-error")
    expect(problem).to_have_text("required")
    expect(panel.locator("[data-arg=a] input")).to_have_attribute("aria-invalid", "true")
    expect(panel.locator("[data-arg=a] input")).to_be_focused()
    expect(panel.locator(".result")).to_have_count(0)  # the last call's result is not left as if it were this one's

    page.get_by_role("link", name="History").click()
    page.locator("table.history").get_by_role("button", name="mcp__bulky__pick").first.click()
    expect(page.locator(".result")).to_contain_text("picked 7, 1 kB, ''")
    assert [e for e in console.errors if "status of 40" not in e] == [], console.errors


def test_markdown_resources_are_rendered_safely_and_text_blobs_shown_as_text(
    console_for: Callable[..., Console],
) -> None:
    console = console_for({"bulky": stdio_server("bulky")})
    page = console.open("#/resources")
    page.get_by_role("button", name="notes").click()
    shown = page.locator(".panel .markdown")
    expect(shown.get_by_role("heading", name="Release notes")).to_be_visible()
    expect(shown.locator("strong")).to_have_text("2.0")
    expect(shown.locator("table td[data-align=right]")).to_have_text("1")
    link = shown.get_by_role("link", name="the site")
    expect(link).to_have_attribute("href", "https://example.com/notes")
    expect(link).to_have_attribute("target", "_blank")
    # Raw HTML stays text; a javascript: link is no link; nothing ran.
    expect(shown).to_contain_text("<img src=x onerror=\"document.title='pwned'\"> raw HTML stays text")
    expect(shown.locator("img")).to_have_count(0)
    expect(shown.get_by_role("link", name="link that must not run")).to_have_count(0)
    expect(shown.locator("pre code")).to_have_text('print("<b>not bold</b>")')
    expect(shown.locator("b")).to_have_count(0)
    assert "pwned" not in page.title()
    page.locator(".panel").get_by_role("button", name="Source").click()
    expect(page.locator(".panel .md-view pre.content-text")).to_contain_text("# Release notes")

    page.get_by_role("button", name="plain").click()
    expect(page.locator(".panel")).to_contain_text(BLOB_TEXT.splitlines()[1])
    expect(page.locator(".panel")).not_to_contain_text("not shown")
    page.get_by_role("button", name="raw").click()
    expect(page.locator(".panel")).to_contain_text("Binary data, application/octet-stream")
    assert console.errors == [], console.errors


ECHO = """async (text) => (await fetch('/api/tools/mcp__basic__echo/call', {method: 'POST', headers: {'content-type':
  'application/json', authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')},
  body: JSON.stringify({arguments: {text}})})).status"""


def test_a_call_shown_on_the_history_page_stays_while_other_calls_come_in(console_for: Callable[..., Console]) -> None:
    # The page reads its list again as calls start and end (it is open all day); what was shown stays.
    console = console_for({"basic": stdio_server("basic")})
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
    assert page.evaluate(ECHO, "the first call") == 200
    page.get_by_role("link", name="History").click()
    calls = page.locator("table.history tbody tr")
    expect(calls).to_have_count(1)
    calls.get_by_role("button", name="mcp__basic__echo").click()
    shown = page.locator(".tree")
    expect(shown).to_contain_text("the first call")
    assert page.evaluate(ECHO, "another call") == 200
    # The pointer is still on the list (it just clicked there): the new call waits above it, then comes in.
    page.get_by_role("button", name="1 newer call — show").click()
    expect(calls).to_have_count(2)
    expect(shown).to_contain_text("the first call")
    assert console.errors == [], console.errors
