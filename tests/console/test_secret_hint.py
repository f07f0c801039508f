"""A secret typed out in the server dialog's env or header values is noticed, and a ``${NAME}`` reference
offered in its place, saying where the value then comes from (Chromium against a real ``mcpdeck serve``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from mcpdeck._util.masking import literal_secret, reference_for
from tests.console.conftest import Console
from tests.helpers import ROOT
from tests.support.secret_values import REFERENCES, TYPED_VALUES

TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


def test_the_page_tells_a_typed_secret_as_the_cli_does(console_for: Callable[[dict[str, Any]], Console]) -> None:
    page = console_for({}).open()
    found = page.evaluate(
        """async ([typed, references]) => {
          const hint = await import('/console/secret-hint.js');
          return {
            typed: typed.map(([name, value]) => hint.literalSecret(name, value)),
            references: references.map(([server, name, value, header]) =>
              hint.referenceFor(server, name, value, header)),
          };
        }""",
        [TYPED_VALUES, REFERENCES],
    )
    assert found["typed"] == [literal_secret(name, value) for name, value, _ in TYPED_VALUES]
    assert [tuple(pair) for pair in found["references"]] == [
        reference_for(server, name, value, header=header) for server, name, value, header, _ in REFERENCES
    ]


def test_a_secret_typed_into_the_dialog_is_offered_as_a_variable_of_serves_environment(
    console_for: Callable[[dict[str, Any]], Console], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)  # serve's environment: where the reference will be read
    console = console_for({})
    page = console.open()
    page.get_by_role("button", name="Add server").click()
    dialog = page.get_by_role("dialog", name="Add a server")
    dialog.get_by_label("Name", exact=True).fill("github")
    dialog.get_by_label("Command").fill(sys.executable)
    dialog.get_by_label("Arguments").fill("-m\ntests.servers.basic")
    dialog.get_by_label("Working folder").fill(str(ROOT))
    dialog.get_by_role("button", name="Add variable").click()
    dialog.get_by_label("Variable name").fill("GITHUB_TOKEN")
    value = dialog.get_by_label("Variable value")
    value.fill(TOKEN)
    note = dialog.locator(".secret-hint")
    expect(note).to_contain_text("This looks like a secret: saved as typed, it sits in clear in the config file.")
    note.get_by_role("button", name="Use ${GITHUB_TOKEN}").click()
    expect(value).to_have_value("${GITHUB_TOKEN}")
    expect(note).to_contain_text(
        "Saved as ${GITHUB_TOKEN}: mcpdeck reads GITHUB_TOKEN from the environment of the mcpdeck serve process"
    )
    note.get_by_role("button", name="Undo").click()
    expect(value).to_have_value(TOKEN)
    note.get_by_role("button", name="Use ${GITHUB_TOKEN}").click()
    dialog.get_by_role("button", name="Add variable").click()
    dialog.get_by_label("Variable name").nth(1).fill("MODE")
    dialog.get_by_label("Variable value").nth(1).fill("production")
    expect(dialog.locator(".secret-hint:not([hidden])")).to_have_count(1)  # an ordinary setting: no note

    # A header gets a variable named after the server, its scheme kept.
    dialog.get_by_label("Transport").select_option("http")
    dialog.get_by_role("button", name="Add header").click()
    dialog.get_by_label("Header name").fill("Authorization")
    dialog.get_by_label("Header value").fill("Bearer sk-abcdefghijklmnop1234")
    expect(dialog.get_by_role("button", name="Use Bearer ${GITHUB_TOKEN}")).to_be_visible()
    dialog.get_by_label("Transport").select_option("stdio")

    dialog.get_by_role("button", name="Add & connect").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("tr[data-name=github] .status")).to_have_attribute("data-state", "connected")
    saved = console.config_file()["mcpServers"]["github"]
    assert saved["env"] == {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "MODE": "production"}
    assert TOKEN not in console.config.read_text()
    assert console.errors == []
