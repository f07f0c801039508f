"""A user's first session, in Chromium against a real ``mcpdeck serve``: add a stdio server from
the form, see it connect, call a tool with progress, edit it (name locked, secret kept),
reconnect, read its log, remove it; and add servers by pasting JSON."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.console.conftest import Console
from tests.helpers import ROOT, stdio_server

SECRET = "console-secret-value-77"


def api_json(page: Page, path: str) -> Any:
    """GET an API path from inside the page (its session, its origin)."""
    return page.evaluate(
        "async (path) => (await fetch('/api' + path, {headers: "
        "{authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})).json()",
        path,
    )


def test_add_call_edit_reconnect_logs_remove(console_for: Callable[[dict[str, Any]], Console]) -> None:
    console = console_for({})
    page = console.open()
    expect(page.get_by_text("No servers yet.")).to_be_visible()

    # Add a stdio server from the form, test it first, then save.
    page.get_by_role("button", name="Add server").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_label("Name", exact=True).fill("basic")
    expect(dialog.get_by_label("Transport")).to_have_value("stdio")
    dialog.get_by_label("Command").fill(sys.executable)
    dialog.get_by_label("Arguments").fill("-m\ntests.servers.basic")
    dialog.get_by_label("Working folder").fill(str(ROOT))
    dialog.get_by_role("button", name="Add variable").click()
    dialog.get_by_label("Variable name").fill("API_TOKEN")
    value = dialog.get_by_label("Variable value")
    value.fill(SECRET)
    expect(value).to_have_attribute("type", "password")  # masked while typed
    dialog.get_by_role("button", name="Show").click()
    expect(value).to_have_attribute("type", "text")  # revealed on demand
    dialog.get_by_role("button", name="Test", exact=True).click()
    expect(dialog.get_by_text(re.compile(r"Connected: \d+ tools"))).to_be_visible()
    assert console.config_file()["mcpServers"] == {}  # a test saves nothing
    dialog.get_by_role("button", name="Add & connect").click()
    expect(dialog).to_be_hidden()

    # Green dot, tool count.
    row = page.locator("tr[data-name=basic]")
    status = row.locator(".status")
    expect(status).to_have_attribute("data-state", "connected")
    expect(status).to_contain_text("connected")
    green = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--ok').trim()")
    dot = row.locator(".dot").evaluate("el => getComputedStyle(el).backgroundColor")
    assert dot == page.evaluate(
        "(c) => { const e = document.createElement('i'); e.style.color = c; document.body.append(e);"
        " const v = getComputedStyle(e).color; e.remove(); return v; }",
        green,
    )
    saved = console.config_file()["mcpServers"]["basic"]
    assert saved["env"] == {"API_TOKEN": SECRET}
    assert SECRET not in page.content()  # the page never got the secret back

    # Tools listed; call one from its form and watch its progress.
    row.get_by_role("link", name="tools of basic").click()
    item = page.locator(".list-item[data-name=mcp__basic__slow_progress]")
    expect(item).to_be_visible()
    expect(page.locator(".list-item[data-name=mcp__basic__echo]")).to_be_visible()
    item.click()
    panel = page.locator(".panel")
    expect(panel.get_by_role("heading", name="mcp__basic__slow_progress")).to_be_visible()
    panel.get_by_label("Steps").fill("4")
    panel.get_by_label("Delay").fill("0.4")
    panel.get_by_role("button", name="Call").click()
    expect(panel.locator(".progress-text")).to_contain_text(re.compile(r"step [1-3] of 4"))
    expect(panel.locator("progress")).to_be_visible()
    expect(panel.locator(".result")).to_contain_text("done after 4 steps")
    expect(panel.locator("progress")).to_be_hidden()

    # Edit: the name is locked, the stored secret stays masked and is kept.
    page.get_by_role("link", name="Servers").click()
    row.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit basic")
    name = dialog.get_by_label("Name", exact=True)
    expect(name).to_have_js_property("readOnly", True)
    masked = dialog.get_by_label("Variable value")
    assert SECRET not in masked.input_value()
    assert "****" in masked.input_value()
    dialog.get_by_label("Request timeout (seconds)").fill("45")
    pid_before = api_json(page, "/servers/basic")["status"]["pid"]
    dialog.get_by_role("button", name="Save & reconnect").click()
    expect(dialog).to_be_hidden()
    expect(status).to_have_attribute("data-state", "connected")
    saved = console.config_file()["mcpServers"]["basic"]
    assert saved["timeout"] == 45
    assert saved["env"] == {"API_TOKEN": SECRET}  # the masked value meant "keep"
    pid_edited = api_json(page, "/servers/basic")["status"]["pid"]
    assert pid_edited != pid_before  # saved and reconnected: a new process

    # Reconnect from the row.
    row.get_by_role("button", name="Reconnect").click()
    page.wait_for_function(
        "async (old) => { const r = await (await fetch('/api/servers/basic', {headers: "
        "{authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})).json();"
        " return r.status.state === 'connected' && r.status.pid !== old; }",
        arg=pid_edited,
    )
    expect(status).to_have_attribute("data-state", "connected")

    # Its log, live.
    row.get_by_role("button", name="Logs").click()
    expect(page).to_have_url(re.compile(r"#/logs/basic$"))
    log = page.get_by_role("log")
    expect(log).to_contain_text("mcpdeck starting basic")
    starts = log.locator(".line", has_text="mcpdeck starting basic")
    in_file = sum("mcpdeck starting basic" in line for line in api_json(page, "/servers/basic/logs?lines=0")["lines"])
    expect(starts).to_have_count(in_file)
    page.evaluate(
        "() => fetch('/api/servers/basic/reconnect', {method: 'POST', headers: "
        "{authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}})"
    )
    # Followed live: the page shows every start the file has once the reconnect is in it
    # (compared with the file, not a fixed count: a start may land between the two reads).
    expect(log.locator(".line", has_text="mcpdeck starting basic").nth(in_file)).to_be_visible()
    now = sum("mcpdeck starting basic" in line for line in api_json(page, "/servers/basic/logs?lines=0")["lines"])
    expect(starts).to_have_count(now)

    # Remove, after a confirmation.
    page.get_by_role("link", name="Servers").click()
    row.get_by_role("button", name="Remove").click()
    confirm = page.get_by_role("dialog", name="Remove basic?")
    confirm.get_by_role("button", name="Cancel").click()
    expect(row).to_be_visible()
    row.get_by_role("button", name="Remove").click()
    page.get_by_role("dialog", name="Remove basic?").get_by_role("button", name="Remove").click()
    expect(row).to_have_count(0)
    assert "basic" not in console.config_file()["mcpServers"]

    # The call is in the history, filtered by outcome and name.
    page.get_by_role("link", name="History").click()
    calls = page.locator("table.history tbody tr")
    expect(calls.filter(has_text="mcp__basic__slow_progress")).to_have_count(1)
    expect(calls.filter(has_text="mcp__basic__slow_progress").locator("td").nth(3)).to_have_text("ok")
    page.get_by_label("Only calls with this outcome").select_option("error")
    expect(page.get_by_text("No tool calls match.")).to_be_visible()
    page.get_by_label("Only calls with this outcome").select_option("")
    page.get_by_label("Tool name contains").fill("slow")
    expect(calls).to_have_count(1)
    calls.get_by_role("button", name="mcp__basic__slow_progress").click()
    expect(page.locator(".tree")).to_contain_text("steps: 4")
    assert console.errors == []


def test_servers_are_added_by_pasting_json(console_for: Callable[[dict[str, Any]], Console]) -> None:
    console = console_for({})
    page = console.open()
    snippet = {"mcpServers": {"alpha": stdio_server("basic"), "beta": stdio_server("features")}}
    page.get_by_role("button", name="Paste JSON").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_role("textbox").fill(json.dumps(snippet, indent=2))
    dialog.get_by_role("button", name="Read it").click()
    expect(dialog.get_by_role("checkbox", name="Add alpha")).to_be_checked()
    dialog.get_by_role("button", name="Add selected").click()
    expect(dialog).to_be_hidden()
    for name in ("alpha", "beta"):
        expect(page.locator(f"tr[data-name={name}] .status")).to_have_attribute("data-state", "connected")
    assert set(console.config_file()["mcpServers"]) == {"alpha", "beta"}

    # A bare {"name": {...}} with one server opens in the form, to check before adding.
    page.get_by_role("button", name="Paste JSON").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_role("textbox").fill(json.dumps({"gamma": stdio_server("basic")}))
    dialog.get_by_role("button", name="Read it").click()
    dialog.get_by_role("button", name="Open in the form").click()
    expect(dialog.get_by_label("Name", exact=True)).to_have_value("gamma")
    expect(dialog.get_by_label("Command")).to_have_value(sys.executable)
    dialog.get_by_role("button", name="Add & connect").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("tr[data-name=gamma] .status")).to_have_attribute("data-state", "connected")

    # Broken JSON says what is wrong.
    page.get_by_role("button", name="Paste JSON").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_role("textbox").fill('{"mcpServers": {"x": ')
    dialog.get_by_role("button", name="Read it").click()
    expect(dialog.get_by_role("alert")).to_contain_text("That is not JSON")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert console.errors == []


def test_resources_and_prompts_with_completions_and_live_updates(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    console = console_for({"features": stdio_server("features")})
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=features] .status")).to_have_attribute("data-state", "connected")

    # A prompt: its argument completed by the server, then its messages.
    page.get_by_role("link", name="Prompts").click()
    page.get_by_role("button", name=re.compile("mcp__features__review")).click()
    panel = page.locator(".panel")
    language = panel.get_by_label("language")
    language.fill("p")
    options = panel.locator("datalist option")
    expect(options).to_have_count(3)  # python, pascal, perl
    assert sorted(o.get_attribute("value") or "" for o in options.all()) == ["pascal", "perl", "python"]
    language.fill("perl")
    panel.get_by_label("code").fill("print 1")
    panel.get_by_role("button", name="Get messages").click()
    expect(panel.locator(".message")).to_contain_text("Review this perl code: print 1")

    # A resource template: its argument completed, then read.
    page.get_by_role("link", name="Resources").click()
    page.get_by_role("tab", name="Templates").click()
    page.get_by_role("button", name="note://{id}").click()
    viewer = page.locator(".panel")
    ident = viewer.get_by_label("id", exact=True)
    ident.fill("s")
    expect(viewer.locator("datalist option")).to_have_count(1)
    expect(viewer.locator("datalist option")).to_have_attribute("value", "second")
    ident.fill("42")
    expect(viewer.locator("code", has_text="note://42")).to_be_visible()
    viewer.get_by_role("button", name="Read").click()
    expect(viewer).to_contain_text("note 42 (from the template)")

    # A subscribed resource is read again when its server says it changed.
    page.get_by_role("tab", name="Resources").click()
    page.get_by_role("button", name="features://info").click()
    expect(viewer).to_contain_text("the features server")
    viewer.get_by_role("button", name="Subscribe to changes").click()
    expect(viewer.get_by_role("button", name="Unsubscribe")).to_be_visible()
    page.evaluate(
        "() => fetch('/api/tools/mcp__features__touch/call', {method: 'POST', headers: {'content-type':"
        " 'application/json', authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')},"
        " body: JSON.stringify({arguments: {uri: 'features://info'}})})"
    )
    expect(viewer).to_contain_text("updated at")
    assert console.errors == []


def test_servers_are_imported_from_another_app_after_a_preview(
    console_for: Callable[[dict[str, Any]], Console], tmp_path: Path
) -> None:
    cursor = tmp_path / "cursor-mcp.json"
    cursor.write_text(json.dumps({"mcpServers": {"from-cursor": stdio_server("basic"), "broken": {"args": []}}}))
    console = console_for({})
    page = console.open()
    page.get_by_role("button", name="Import…").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_label("From", exact=True).select_option("cursor")
    dialog.get_by_label("Config file").fill(str(cursor))
    dialog.get_by_role("button", name="Preview").click()
    expect(dialog.get_by_text(f"From {cursor}: 1 server.")).to_be_visible()
    expect(dialog.get_by_text("Skipped:")).to_be_visible()  # the entry without a command says why
    assert console.config_file()["mcpServers"] == {}  # a preview changes nothing
    dialog.get_by_role("button", name="Import selected").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("tr[data-name=from-cursor] .status")).to_have_attribute("data-state", "connected")
    assert list(console.config_file()["mcpServers"]) == ["from-cursor"]
    assert console.errors == []


def test_bulk_actions_grouping_and_the_enable_switch(console_for: Callable[[dict[str, Any]], Console]) -> None:
    console = console_for(
        {"one": stdio_server("basic"), "two": stdio_server("basic"), "bad": {"command": "/no/such/x"}}
    )
    page = console.open()
    rows = {name: page.locator(f"tr[data-name={name}]") for name in ("one", "two", "bad")}
    for name in ("one", "two"):
        expect(rows[name].locator(".status")).to_have_attribute("data-state", "connected")
    expect(rows["bad"].locator(".status")).to_have_attribute("data-state", "failed")
    expect(rows["bad"].locator(".error-text")).to_contain_text("/no/such/x")

    # Group by status: failing servers first.
    page.get_by_label("Group servers").select_option("state")
    groups = page.locator("tr.group")
    expect(groups).to_have_text(["failed (1)", "connected (2)"])
    page.get_by_label("Group servers").select_option("none")
    expect(groups).to_have_count(0)

    # Bulk: select two, disable both, enable both.
    bulk = page.get_by_role("group", name="Selected servers")
    expect(bulk.get_by_role("button", name="Disable")).to_be_disabled()
    page.get_by_label("Select one").check()
    page.get_by_label("Select two").check()
    bulk.get_by_role("button", name="Disable").click()
    for name in ("one", "two"):
        expect(rows[name].locator(".status")).to_have_attribute("data-state", "disabled")
        expect(page.get_by_role("switch", name=f"Enable {name}")).not_to_be_checked()
    assert all(console.config_file()["mcpServers"][n].get("disabled") is True for n in ("one", "two"))
    bulk.get_by_role("button", name="Enable").click()
    for name in ("one", "two"):
        expect(rows[name].locator(".status")).to_have_attribute("data-state", "connected")

    # The row's switch, and the filter.
    page.get_by_role("switch", name="Enable two").uncheck()
    expect(rows["two"].locator(".status")).to_have_attribute("data-state", "disabled")
    page.get_by_label("Filter servers").fill("disab")
    expect(rows["two"]).to_be_visible()
    expect(rows["one"]).to_be_hidden()
    assert console.errors == []
