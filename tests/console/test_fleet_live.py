"""The console of one replica follows the fleet live: two real ``serve`` replicas of one config file on one
PostgreSQL store; a call made through the other replica shows up on this one's History page at once (its live
event told over the store), in a Replica column."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx2
from playwright.sync_api import expect

from tests.console.conftest import Console, start_serve, stop_serve
from tests.helpers import WAIT, stdio_server
from tests.postgres import Postgres


def _call(url: str, token: str, text: str) -> None:
    with httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT) as http:
        answer = http.post("/api/tools/mcp__basic__echo/call", json={"arguments": {"text": text}})
        assert answer.status_code == 200, answer.text


def test_the_history_page_shows_another_replica_s_call_live_with_its_replica(
    console_for: Callable[..., Console], tmp_path: Path, postgres: Postgres
) -> None:
    servers = {"basic": stdio_server("basic")}
    with postgres.database() as store:
        console = console_for(servers, {"MCPDECK_STORE": store, "MCPDECK_REPLICA_ID": "r1"})
        other = start_serve(tmp_path, servers, {"MCPDECK_STORE": store, "MCPDECK_REPLICA_ID": "r2"})  # same config file
        try:
            page = console.open("#/servers")
            expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")
            _call(console.url, console.token, "made on r1")
            page.goto(f"{console.url}/#/history")
            rows = page.locator("table.history tbody tr")
            expect(rows).to_have_count(1)
            expect(page.locator("table.history thead")).not_to_contain_text("Replica")  # one replica's calls only

            _call(other.url, other.token, "made on r2")  # no reload: r2's ToolCallFinished reaches r1's stream
            expect(rows).to_have_count(2)
            expect(page.locator("table.history thead")).to_contain_text("Replica")
            expect(rows.nth(0).locator("td.mono").last).to_have_text("r2")
            expect(rows.nth(1).locator("td.mono").last).to_have_text("r1")
            shots = Path(os.environ.get("MCPDECK_SCREENSHOTS", tmp_path))
            page.screenshot(path=str(shots / "console-history-replicas.png"), full_page=True)
        finally:
            stop_serve(other)
    assert console.errors == []
