"""The Metrics page in Chromium: a card per server with uPlot's three charts of the last hour, the totals of the
calls made, and a new call showing up live; and uPlot itself, served as the file npm gave at the pinned version."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
from playwright.sync_api import expect

from tests.console.conftest import Console, start_serve, stop_serve
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


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _call(http: httpx2.Client, tool: str, arguments: dict[str, object]) -> None:
    answer = http.post(f"/api/tools/mcp__basic__{tool}/call", json={"arguments": arguments})
    assert answer.status_code == 200, answer.text


def _ready(http: httpx2.Client) -> None:
    """Wait until the replica's servers have settled (``/readyz``): a call to one still connecting is refused."""
    deadline = time.monotonic() + WAIT
    while (answer := http.get("/readyz")).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.05)


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


def test_the_metrics_page_shows_each_replica_s_figures_when_several_share_the_store(
    console_for: Callable[..., Console], tmp_path: Path
) -> None:
    """Two real ``serve`` replicas on one SQLite store: the console of one charts the calls of both, a card per
    server and replica, from the minutes each writes to the store."""
    servers = {"basic": stdio_server("basic")}
    console = console_for(servers, {"MCPDECK_REPLICA_ID": "r1"})
    (tmp_path / "r2").mkdir()
    store: dict[str, str | None] = {"MCPDECK_STORE": str(tmp_path / "history.sqlite3"), "MCPDECK_REPLICA_ID": "r2"}
    other = start_serve(tmp_path / "r2", servers, store)
    try:
        with (
            httpx2.Client(base_url=console.url, headers=_bearer(console.token), timeout=WAIT) as one,
            httpx2.Client(base_url=other.url, headers=_bearer(other.token), timeout=WAIT) as two,
        ):
            _ready(one)
            _ready(two)
            for a in range(2):
                _call(one, "add", {"a": a, "b": 1})
            for _ in range(3):
                _call(two, "echo", {"text": "from r2"})
            _call(two, "fail", {"message": "no"})
            deadline = time.monotonic() + WAIT  # r2 writes its minutes to the store every 2 s
            while {s["replica"] for s in one.get("/api/metrics").json()["series"]} != {"r1", "r2"}:
                assert time.monotonic() < deadline, one.get("/api/metrics").json()
                time.sleep(0.1)
        page = console.open("#/metrics")
        cards = page.locator(".metric-card[data-server=basic]")
        expect(cards).to_have_count(2)
        expect(page.locator(".metric-card[data-replica=r1] .metric-totals")).to_contain_text("2 calls · 0 errors")
        expect(page.locator(".metric-card[data-replica=r2] .metric-totals")).to_contain_text("4 calls · 1 error")
        expect(page.locator(".metric-card[data-replica=r2] .badge")).to_have_text("replica r2")
        expect(page.locator(".metric-card[data-replica=r2] .metric-chart canvas")).to_have_count(3)
        shots = Path(os.environ.get("MCPDECK_SCREENSHOTS", tmp_path))
        page.screenshot(path=str(shots / "console-metrics-replicas.png"), full_page=True)
    finally:
        stop_serve(other)
    assert console.errors == []
