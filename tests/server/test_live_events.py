"""The console's live events across a fleet: two ``mcpdeck serve`` replicas on one PostgreSQL store, a client
following B's ``/api/events`` sees a tool call made through A's gateway, marked with A's replica id; A's own
stream has that call's events once, never again as an echo of its own notice. And a 2026-07-28 client's
``subscriptions/listen`` stream held on B hears the list change of a server added through A."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.subscriptions import ToolsListChanged

from tests.helpers import stdio_server
from tests.postgres import Postgres
from tests.support.api_events import events_of
from tests.support.replicas import START, TOKEN, Replica, fleet

LIMIT = 150.0
"""Seconds the whole test may take: two processes starting take long on a busy machine."""
SEEN = 10.0
"""Seconds B gets to show A's call once A answered it (a NOTIFY goes out with A's next commit)."""
TOOL = "mcp__basic__echo"


class Stream:
    """The events one replica's ``/api/events`` sent, as they came."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.opened = anyio.Event()
        self.changed = anyio.Event()

    async def follow(self, url: str) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=None) as http:
            async for event in events_of(http, f"{url}/api/events", self.opened):
                self.events.append(event)
                self.changed.set()
                self.changed = anyio.Event()

    async def until(self, kind: str, **fields: Any) -> dict[str, Any]:
        """The first event of ``kind`` whose fields include ``fields``, waiting for it."""
        while True:
            for event in self.events:
                if event["type"] == kind and all(event.get(k) == v for k, v in fields.items()):
                    return event
            await self.changed.wait()


async def _call(replica: Replica, text: str) -> None:
    """``echo(text)`` through the replica's gateway, once its ``basic`` server is there."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{replica.url}/mcp", http_client=http)) as client:
        while TOOL not in {tool.name for tool in (await client.list_tools()).tools}:  # noqa: ASYNC110
            await anyio.sleep(0.1)  # `basic` is still starting on this replica
        assert not (await client.call_tool(TOOL, {"text": text})).is_error


def test_a_call_made_through_one_replica_is_on_the_others_event_stream_once(tmp_path: Path, postgres: Postgres) -> None:
    async def bounded() -> None:
        with postgres.database() as store, anyio.fail_after(LIMIT):
            await _followed(tmp_path, store)

    anyio.run(bounded)


async def _followed(tmp_path: Path, store: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"basic": stdio_server("basic")}}))
    on_a, on_b = Stream(), Stream()
    async with fleet(tmp_path, config, ("a", "b"), "--store", store) as replicas, anyio.create_task_group() as tg:
        a, b = replicas["a"], replicas["b"]
        tg.start_soon(on_a.follow, a.url)
        tg.start_soon(on_b.follow, b.url)
        with anyio.fail_after(START):
            await on_a.opened.wait()
            await on_b.opened.wait()
            await _call(a, "from a")
        mine = await on_a.until("ToolCallStarted", tool="echo", arguments={"text": "from a"})
        with anyio.fail_after(SEEN):
            started = await on_b.until("ToolCallStarted", callId=mine["callId"])
            finished = await on_b.until("ToolCallFinished", callId=mine["callId"])
        assert started["remote"] is True and started["replica"] == "a"
        assert started["arguments"] == {"text": "from a"} and started["server"] == "basic"
        assert finished["remote"] is True and finished["replica"] == "a" and finished["isError"] is False

        # B's call is told to A after A's call's own notices went out (A committed them first): once A has heard
        # B's, an echo of A's own would have come before it.
        with anyio.fail_after(START):
            await _call(b, "from b")
        with anyio.fail_after(SEEN):
            theirs = await on_a.until("ToolCallFinished", remote=True, replica="b")
        assert theirs["tool"] == "echo"
        of_mine = [e for e in on_a.events if e.get("callId") == mine["callId"]]
        assert [e["type"] for e in of_mine] == ["ToolCallStarted", "ToolCallFinished"]
        assert not any(e.get("remote") for e in of_mine)
        assert [e["type"] for e in on_b.events if e.get("callId") == mine["callId"]] == [
            "ToolCallStarted",
            "ToolCallFinished",
        ]

        # A 2026-07-28 client listening on B hears a list change made by an edit through A's API: B re-reads the
        # file (A's notice wakes its follower) and connects the new server itself, so its own stream says so.
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{b.url}/mcp", http_client=http), mode="auto") as modern,
            modern.listen(tools_list_changed=True) as stream,
        ):
            assert modern.protocol_version == "2026-07-28"
            added = await http.post(f"{a.url}/api/servers", json={"name": "second", "config": stdio_server("basic")})
            assert added.status_code == 201, added.text
            with anyio.fail_after(START):
                while "mcp__second__echo" not in {tool.name for tool in (await modern.list_tools()).tools}:
                    assert isinstance(await anext(stream), ToolsListChanged)
        tg.cancel_scope.cancel()
