"""The Metrics page in Chromium: a card per server with uPlot's three charts of the last hour, the totals of the
calls made, and a new call showing up live; and uPlot itself, served as the file npm gave at the pinned version."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import httpx2
from playwright.sync_api import expect

from tests.console.conftest import Console
from tests.helpers import ROOT, WAIT, stdio_server

CONSOLE = ROOT / "src" / "mcpdeck" / "console"
UPLOT = ROOT / "node_modules" / "uplot"


def test_uplot_is_the_pinned_npm_release_byte_for_byte_with_its_mit_licence() -> None:
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["uplot"]
    installed = json.loads((UPLOT / "package.json").read_text())
    assert installed["version"] == pinned and installed["license"] == "MIT"
    for name in ("uPlot.iife.min.js", "uPlot.min.css"):
        assert (CONSOLE / name).read_bytes() == (UPLOT / "dist" / name).read_bytes(), name
    assert (CONSOLE / "uPlot.LICENSE.txt").read_bytes() == (UPLOT / "LICENSE").read_bytes()


def _call(http: httpx2.Client, tool: str, arguments: dict[str, object]) -> None:
    answer = http.post(f"/api/tools/mcp__basic__{tool}/call", json={"arguments": arguments})
    assert answer.status_code == 200, answer.text


def test_the_metrics_page_charts_each_server_s_last_hour_live(
    console_for: Callable[..., Console], tmp_path: Path
) -> None:
    console = console_for({"basic": stdio_server("basic")})
    headers = {"Authorization": f"Bearer {console.token}"}
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
    with httpx2.Client(base_url=console.url, headers=headers, timeout=WAIT) as http:
        for a in range(4):
            _call(http, "add", {"a": a, "b": 1})
        for _ in range(2):
            _call(http, "fail", {"message": "no"})
        page.goto(f"{console.url}/#/metrics")
        card = page.locator(".metric-card[data-server=basic]")
        expect(card.locator(".metric-totals")).to_contain_text("6 calls · 2 errors")
        expect(card.locator(".metric-chart")).to_have_count(3)
        expect(card.locator(".metric-chart canvas")).to_have_count(3)  # drawn by uPlot
        expect(card.locator(".u-title")).to_have_text(["Calls / min", "Latency (ms)", "Errors / min"])
        expect(card.locator(".metric-totals")).to_contain_text("p50 ")
        assert "p50 \u2013" not in card.locator(".metric-totals").inner_text()  # a latency was read

        _call(http, "echo", {"text": "live"})  # no reload: the page follows the calls as they end
        expect(card.locator(".metric-totals")).to_contain_text("7 calls · 2 errors")

        shots = Path(os.environ.get("MCPDECK_SCREENSHOTS", tmp_path))
        page.screenshot(path=str(shots / "console-metrics.png"), full_page=True)
    assert console.errors == []
