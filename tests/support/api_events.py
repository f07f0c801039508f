"""The server-sent events of the API (``/api/events`` and the other streams), read as they arrive."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2


async def events_of(
    client: httpx2.AsyncClient, path: str = "/api/events", opened: anyio.Event | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The JSON of each server-sent event on ``path``, as it arrives; ``opened`` is set once it listens."""
    async with client.stream("GET", path) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        kind = None
        async for line in response.aiter_lines():
            if line == ": connected" and opened is not None:
                opened.set()
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if isinstance(data, dict) and "type" in data:
                    assert data["type"] == kind
                yield data
