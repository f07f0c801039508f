"""What the console saves through the API changes only what the user changed in the config file's text.

Each hand-written style (``tests/config/hand_written``) is served, changed through every API route
that saves, and compared byte for byte: the console's first save used to rewrite the whole file
(one array item a line, ``"timeout": 30.0``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import running_api
from tests.config.hand_written import ADDED, NEW_SERVER, STYLES, offline

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("style", STYLES)
async def test_every_save_through_the_api_touches_only_what_it_changed(style: str, tmp_path: Path) -> None:
    text = offline(STYLES[style])
    async with running_api(tmp_path, text=text, in_process=False, history=False) as api:
        client = api.client

        def file() -> bytes:
            return api.config.read_bytes()

        # The console's edit dialog: the server as the API shows it, saved back unchanged, then with a new timeout.
        shown: dict[str, Any] = (await client.get("/api/servers/fs")).json()["config"]
        assert (await client.put("/api/servers/fs", json={"config": shown})).status_code == 200
        assert file() == text.encode()
        answer = await client.put("/api/servers/fs", json={"config": {**shown, "timeout": 45}})
        assert answer.status_code == 200
        assert file() == text.replace('"timeout": 30', '"timeout": 45').encode()
        assert (await client.patch("/api/servers/fs", json={"timeout": 30})).status_code == 200
        assert file() == text.encode()

        # The new server's command is not installed here: saved as it is, as the dialog's Save anyway does.
        added = await client.post(
            "/api/servers", json={"name": "git", "config": offline_entry(NEW_SERVER), "saveAnyway": True}
        )
        assert added.status_code == 201, added.text
        before, after = ADDED[style]
        assert file() == text.replace(offline(before), offline(after)).encode()
        assert (await client.delete("/api/servers/git")).status_code == 200
        assert file() == text.encode()

        assert (await client.post("/api/servers/api/disable")).status_code == 200
        assert file() != text.encode()
        assert (await client.post("/api/servers/api/enable")).status_code == 200
        assert (await client.post("/api/host/disable")).status_code == 200
        assert (await client.post("/api/host/enable")).status_code == 200
        assert file() == text.encode()

        rules = await client.put("/api/permissions", json={"allow": ["mcp__fs__read_*", "mcp__api"]})
        assert rules.status_code == 200, rules.text
        assert file() == text.replace('["mcp__fs__read_*"]', '["mcp__fs__read_*", "mcp__api"]').encode()


def offline_entry(entry: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "command": offline(f'"{entry["command"]}"').strip('"')}
