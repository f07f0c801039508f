"""Broken servers in a real browser: one that never answers ``initialize`` is not saved unless
the user says so (as ``mcpdeck add``), a try given up ends, one saved anyway does not hold the page
back (the add dialog closes once the entry is saved, the rest stays usable), and a long error,
folded to three lines, opens in full from the keyboard."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.console.conftest import Console
from tests.helpers import ROOT, WAIT, descendants


def add_hanging_server(page: Page, startup_timeout: str = "") -> Locator:
    """Fill the add dialog for a server that never answers; return the dialog."""
    expect(page.get_by_text("No servers yet.")).to_be_visible()
    page.get_by_role("button", name="Add server").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_label("Name", exact=True).fill("hangs")
    dialog.get_by_label("Command").fill(sys.executable)
    dialog.get_by_label("Arguments").fill("-m\ntests.servers.hang")
    dialog.get_by_label("Working folder").fill(str(ROOT))
    dialog.get_by_label("Startup timeout (seconds)").fill(startup_timeout)
    return dialog


def test_a_server_that_does_not_connect_is_saved_only_when_the_user_says_so(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    console = console_for({})
    page = console.open()
    dialog = add_hanging_server(page, startup_timeout="1")
    dialog.get_by_role("button", name="Add & connect").click()

    # Tried first, as `mcpdeck add` does: it did not connect, so nothing is saved, and the dialog says
    # why, with advice the form can follow (the startup timeout is a field of it).
    report = dialog.locator(".report.bad")
    expect(report).to_contain_text("'hangs' did not connect, so it was not saved: did not finish")
    expect(report).to_contain_text('within 1 s (its "startupTimeout"; raise it if it needs longer)')
    assert "hangs" not in console.config_file()["mcpServers"]
    expect(page.locator("tr[data-name=hangs]")).to_have_count(0)
    expect(page.locator(".toast")).to_have_count(0)  # no "was saved but is failed"

    # The user raises it (the advice) and chooses to save it as it is: the dialog closes once it is
    # saved, while it still connects, so a server that hangs holds nothing back.
    dialog.get_by_label("Startup timeout (seconds)").fill("30")
    dialog.get_by_role("button", name="Save anyway").click()
    row = page.locator("tr[data-name=hangs]")
    expect(row.locator(".status")).to_have_text("connecting")
    expect(dialog).to_be_hidden()
    expect(page.locator(".toast", has_text=re.compile(r"hangs: saved, connecting"))).to_be_visible()
    assert console.config_file()["mcpServers"]["hangs"]["startupTimeout"] == 30
    # The page is free meanwhile: the server can be removed while it still connects.
    row.get_by_role("button", name="Remove").click()
    page.get_by_role("dialog", name="Remove hangs?").get_by_role("button", name="Remove").click()
    expect(row).to_have_count(0)


def until(page: Page, check: Callable[[], object], failure: str) -> None:
    """Wait (at most ``WAIT``) until ``check()`` holds, looking again every 20 ms."""
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, failure
        page.wait_for_timeout(20)


def _hang_processes(pid: int) -> set[int]:
    found: set[int] = set()
    for child in descendants(pid):
        with contextlib.suppress(OSError):
            if b"tests.servers.hang" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.add(child)
    return found


def test_closing_the_dialog_while_a_server_is_tried_ends_the_try_and_saves_nothing(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    console = console_for({})
    assert console.pid is not None
    page = console.open()
    dialog = add_hanging_server(page)  # the default startup timeout: 30 s, twice the longest wait here
    dialog.get_by_role("button", name="Add & connect").click()
    expect(dialog).to_contain_text("Trying hangs first: it is saved once it connects (at most 30 s")
    pid = console.pid
    until(page, lambda: _hang_processes(pid), "the try never started the server")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    until(page, lambda: not _hang_processes(pid), "the try went on after the dialog was closed")
    assert "hangs" not in console.config_file()["mcpServers"]
    expect(page.get_by_text("No servers yet.")).to_be_visible()


def test_a_long_error_opens_in_full_from_the_keyboard(console_for: Callable[[dict[str, Any]], Console]) -> None:
    missing = "no-such-program-" + "x" * 400  # named in the error: more than three lines
    console = console_for({"gone": {"command": missing}})
    page = console.open()
    error = page.locator("tr[data-name=gone] .error-text")
    expect(error).to_contain_text("was not found on PATH")
    clamped = "el => el.scrollHeight > el.clientHeight + 1"
    assert error.evaluate(clamped), "the error should be long enough to be folded"
    expect(error).to_have_attribute("aria-expanded", "false")
    error.focus()
    expect(error).to_be_focused()
    page.keyboard.press("Enter")
    expect(error).to_have_attribute("aria-expanded", "true")
    assert not error.evaluate(clamped)
    page.keyboard.press(" ")
    expect(error).to_have_attribute("aria-expanded", "false")


def test_the_sign_in_button_stays_in_sight_under_a_long_error(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    said = "401: this server needs authorization. " + "It said a great deal more after that. " * 12
    console = console_for({"locked": {"command": "sh", "args": ["-c", f"echo '{said}' >&2; exit 1"]}})
    page = console.open()
    row = page.locator("tr[data-name=locked]")
    expect(row.locator(".error-text")).to_contain_text("needs authorization")
    sign_in = row.get_by_role("button", name="Sign in", exact=True)
    expect(sign_in).to_be_visible()
    # Not merely laid out: the pixel at its middle is the button, not something folded over it.
    hit = sign_in.evaluate(
        "el => { const r = el.getBoundingClientRect();"
        " return el.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)); }"
    )
    assert hit, "the Sign in button is hidden by the folded error"


def test_a_disabled_server_cannot_be_reconnected_and_the_row_says_why(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    console = console_for({"off": {"command": "mcpdeck-test-no-such-command", "disabled": True}})
    page = console.open()
    row = page.locator("tr[data-name=off]")
    expect(row.locator(".status")).to_have_attribute("data-state", "disabled")
    reconnect = row.get_by_role("button", name="Reconnect")
    expect(reconnect).to_be_disabled()
    expect(reconnect).to_have_attribute("title", "off is disabled: turn its switch on to connect it")
    answer = page.evaluate(
        "async () => { const r = await fetch('/api/servers/off/reconnect', {method: 'POST', headers: "
        "{authorization: 'Bearer ' + sessionStorage.getItem('mcpdeck-session')}});"
        " return [r.status, (await r.json()).error.code]; }"
    )
    assert answer == [409, "server-disabled"]
