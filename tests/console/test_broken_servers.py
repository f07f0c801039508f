"""Broken servers in a real browser: one that never answers ``initialize`` must not hold the
page back (the add dialog closes once the entry is saved, the rest stays usable), and a long
error, folded to three lines, opens in full from the keyboard."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from playwright.sync_api import expect

from tests.console.conftest import Console
from tests.helpers import ROOT


def test_adding_a_server_that_hangs_closes_the_dialog_once_saved(
    console_for: Callable[[dict[str, Any]], Console],
) -> None:
    console = console_for({})
    page = console.open()
    expect(page.get_by_text("No servers yet.")).to_be_visible()
    page.get_by_role("button", name="Add server").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_label("Name", exact=True).fill("hangs")
    dialog.get_by_label("Command").fill(sys.executable)
    dialog.get_by_label("Arguments").fill("-m\ntests.servers.hang")
    dialog.get_by_label("Working folder").fill(str(ROOT))
    dialog.get_by_role("button", name="Add & connect").click()

    # It never answers (startup timeout 30 s, twice the wait here): the dialog closes once saved.
    row = page.locator("tr[data-name=hangs]")
    expect(row.locator(".status")).to_have_text("connecting")
    expect(dialog).to_be_hidden()
    expect(page.locator(".toast", has_text=re.compile(r"hangs: saved, connecting"))).to_be_visible()
    assert "hangs" in console.config_file()["mcpServers"]
    # The page is free meanwhile: the server can be removed while it still connects.
    row.get_by_role("button", name="Remove").click()
    page.get_by_role("dialog", name="Remove hangs?").get_by_role("button", name="Remove").click()
    expect(row).to_have_count(0)


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
