"""Secrets in a real ``mcpdeck serve``: those of a server added while it runs stay out of its history."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import anyio
import pytest

from tests.helpers import WAIT, stdio_server
from tests.support.serve_process import rest_of_output, serving

pytestmark = pytest.mark.anyio

LITERAL = "literal-secret-7c1e9a55"
FROM_VARIABLE = "variable-secret-4d2b8f31"


async def test_the_secrets_of_a_server_added_while_it_runs_stay_out_of_the_history(tmp_path: Path) -> None:
    """The history's redactor was built once, at start, from the config as it was then."""
    history = tmp_path / "history.sqlite3"
    env = {"MCPDECK_HISTORY": str(history), "DECK_TEST_SECRET": FROM_VARIABLE}
    async with serving(tmp_path, {}, env=env) as run:
        config = stdio_server("basic", env={"API_TOKEN": LITERAL, "FROM_VAR": "${DECK_TEST_SECRET}"})
        async with run.client() as client:
            added = await client.post("/api/servers", json={"name": "late", "config": config})
            assert added.status_code == 201, added.text
            assert added.json()["status"]["state"] == "connected"
            echoed = await client.post(
                "/api/tools/mcp__late__echo/call", json={"arguments": {"text": f"{LITERAL} {FROM_VARIABLE}"}}
            )
            assert echoed.status_code == 200
        run.process.send_signal(signal.SIGTERM)  # the history is written in full when it stops
        with anyio.fail_after(WAIT):
            await rest_of_output(run.process)
            assert await run.process.wait() == 0
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT name, arguments FROM tool_calls").fetchall()
    assert [name for name, _ in rows] == ["mcp__late__echo"]
    assert LITERAL not in rows[0][1]
    assert FROM_VARIABLE not in rows[0][1]
    assert rows[0][1].count("****") == 2
