"""The server dialog's form can follow every piece of advice an error gives: each config key an
error message tells the user to change (found in mcpdeck's own sources) can be changed in the form,
and the change is what gets saved."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from mcpdeck.config import RemoteServerConfig, StdioServerConfig
from tests.console.conftest import Console
from tests.helpers import ROOT, stdio_server

SOURCES = ROOT / "src" / "mcpdeck"
# How the errors word advice about a key: `raise "timeout" in its config`, `(its "startupTimeout"; raise
# it ...)`, `its config says "protocol": "modern"; set it to ...`, `set oauth.issuer`, `needs oauth.clientId`.
QUOTED = re.compile(r'\b(?:raise|its|says|set|give|check)\s+\\?"([A-Za-z]+)\\?"')
OAUTH = re.compile(r"\boauth\.[A-Za-z{]")
FIELDS = {"startupTimeout", "timeout", "maxMessageSize", "protocol"}
"""Advice keys with a field of their own (``data-key`` on the control)."""
AS_JSON = {"oauth"}
"""Advice keys edited in "Other settings (JSON)": oauth's sub-keys (``oauth.issuer`` ...)."""
BASIC = {"command", "args", "env", "cwd", "url", "type", "headers"}
"""What a server is: the form's first fields (the flows in test_flow.py fill them)."""
SECRET = "client-secret-value-31"


def config_keys() -> set[str]:
    """Every key a server entry can have (their JSON names)."""
    keys: set[str] = set()
    for model in (StdioServerConfig, RemoteServerConfig):
        keys |= {field.alias or name for name, field in model.model_fields.items()}
    return keys


def advised_keys() -> set[str]:
    """The config keys that mcpdeck's error messages tell a user to change."""
    known = config_keys()
    found: set[str] = set()
    for path in SOURCES.rglob("*.py"):
        text = path.read_text()
        found |= {key for key in QUOTED.findall(text) if key in known}
        if OAUTH.search(text):
            found.add("oauth")
    return found


def test_every_key_an_error_advises_changing_has_a_place_in_the_form() -> None:
    advised = advised_keys()
    assert FIELDS | AS_JSON <= advised, "the scan of the error texts found less than it should: fix the patterns"
    unplaced = advised - FIELDS - AS_JSON - BASIC
    assert not unplaced, f"advice about keys the form cannot change: {unplaced}"


def test_the_advised_keys_are_changed_in_the_form_and_saved(console_for: Callable[[dict[str, Any]], Console]) -> None:
    oauth = {
        "grantType": "client_credentials",
        "clientId": "me",
        "clientSecret": SECRET,
        "issuer": "http://127.0.0.1:9",
    }
    console = console_for(
        {
            "basic": stdio_server("basic"),
            "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "oauth": oauth, "x-note": "kept"},
        }
    )
    page = console.open()
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")

    # A field for each of these, in the stdio server's dialog; its hint names the key the errors name.
    page.locator("tr[data-name=basic]").get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit basic")
    dialog.get_by_text("More settings").click()
    values = {"startupTimeout": "45", "timeout": "90", "maxMessageSize": "1048576"}
    for key, value in values.items():
        control = dialog.locator(f'[data-key="{key}"]')
        expect(control).to_be_visible()
        control.fill(value)
        hint = control.get_attribute("aria-describedby")
        assert hint is not None
        expect(dialog.locator(f"#{hint}")).to_contain_text(f'"{key}"')
    dialog.locator('[data-key="protocol"]').select_option("handshake")
    dialog.get_by_role("button", name="Save & reconnect").click()
    expect(dialog).to_be_hidden()
    saved = console.config_file()["mcpServers"]["basic"]
    assert saved["startupTimeout"] == 45
    assert saved["timeout"] == 90
    assert saved["maxMessageSize"] == 1048576
    assert saved["protocol"] == "handshake"
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")

    # The rest of the entry (oauth here) as JSON, its secret masked; changed there, saved, secret kept.
    page.locator("tr[data-name=remote]").get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit remote")
    more = dialog.get_by_label("Other settings (JSON)")
    expect(more).to_be_visible()  # open at once: the entry has such settings
    shown = json.loads(more.input_value())
    assert shown["oauth"]["clientSecret"] != SECRET
    assert "****" in shown["oauth"]["clientSecret"]
    assert shown["x-note"] == "kept"
    shown["oauth"]["issuer"] = "http://127.0.0.1:10"
    more.fill(json.dumps(shown))
    dialog.get_by_role("button", name="Save & reconnect").click()
    expect(dialog).to_be_hidden()
    saved = console.config_file()["mcpServers"]["remote"]
    assert saved["oauth"] == {**oauth, "issuer": "http://127.0.0.1:10"}
    assert saved["x-note"] == "kept"

    # A key with a field of its own is refused in the JSON, and broken JSON says so; nothing is saved.
    before = Path(console.config).read_text()
    page.locator("tr[data-name=remote]").get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit remote")
    more = dialog.get_by_label("Other settings (JSON)")
    more.fill('{"startupTimeout": 5}')
    dialog.get_by_role("button", name="Save & reconnect").click()
    expect(dialog.get_by_role("alert")).to_have_text(
        'Other settings: "startupTimeout" has a field of its own above; set it there.'
    )
    more.fill('{"oauth": ')
    dialog.get_by_role("button", name="Test", exact=True).click()
    expect(dialog.get_by_role("alert")).to_contain_text("Other settings: that is not JSON")
    assert Path(console.config).read_text() == before
    assert console.errors == []
