"""A fleet's live events on a real PostgreSQL (``mcpdeck.store.EventBroadcast``): another replica hears an event
whole, or trimmed to fit a ``NOTIFY`` when it is too big; a replica never hears its own back; secrets are
replaced before anything leaves."""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mcpdeck.store import PAYLOAD_LIMIT, ConfigNotices, EventBroadcast, History, Listener
from tests.helpers import WAIT
from tests.postgres import Postgres

pytestmark = pytest.mark.anyio

SECRET = "sk-live-" + "s" * 24


async def test_events_reach_the_other_replica_trimmed_when_too_big_and_never_come_back(
    tmp_path: Path, postgres: Postgres
) -> None:
    config = tmp_path / "mcp.json"
    heard_a: queue.SimpleQueue[tuple[str, dict[str, Any]]] = queue.SimpleQueue()
    heard_b: queue.SimpleQueue[tuple[str, dict[str, Any]]] = queue.SimpleQueue()
    woken: queue.SimpleQueue[str] = queue.SimpleQueue()
    with postgres.database() as url, History(url, replica="a") as on_a, History(url, replica="b") as on_b:
        listen_a, listen_b = Listener(on_a.store), Listener(on_b.store)
        a = EventBroadcast(listen_a, config, "a", redact=lambda text: text.replace(SECRET, "****"))
        b = EventBroadcast(listen_b, config, "b")
        a.listen(lambda replica, data: heard_a.put((replica, data)))
        b.listen(lambda replica, data: heard_b.put((replica, data)))
        # The config file's notices share B's one listening connection.
        ConfigNotices(on_b.store, config, "b", listen_b).listen(lambda: woken.put("woken"))
        told = ConfigNotices(on_a.store, config, "a", listen_a)
        listen_a.start()
        listen_b.start()
        try:
            for listener in (listen_a, listen_b):
                assert await anyio.to_thread.run_sync(listener.listening.wait, WAIT)
            small = {"type": "ToolCallStarted", "callId": "c1", "tool": "echo", "arguments": {"key": SECRET}}
            big = {"type": "ToolCallStarted", "callId": "c2", "tool": "echo", "arguments": {"text": "é" * 9000}}
            a.send(small)
            a.send(big)
            told.notify()
            first = await anyio.to_thread.run_sync(lambda: heard_b.get(timeout=WAIT))
            second = await anyio.to_thread.run_sync(lambda: heard_b.get(timeout=WAIT))
            assert await anyio.to_thread.run_sync(lambda: woken.get(timeout=WAIT)) == "woken"
            assert first == ("a", {**small, "arguments": {"key": "****"}})
            replica, trimmed = second
            assert replica == "a"
            assert trimmed == {
                "type": "ToolCallStarted",
                "callId": "c2",
                "tool": "echo",
                "arguments": None,
                "trimmed": ["arguments"],
            }
            # B says something after: once A hears it, an echo of A's own two would have come before it.
            b.send({"type": "ConfigChanged", "server": "x", "change": "added"})
            assert await anyio.to_thread.run_sync(lambda: heard_a.get(timeout=WAIT)) == (
                "b",
                {"type": "ConfigChanged", "server": "x", "change": "added"},
            )
            assert heard_a.empty() and heard_b.empty()
            assert a.unsent == 0
            # What does not fit even trimmed (what it always keeps is too long) is not sent, and counted.
            a.send({"type": "ToolCallStarted", "callId": "c" * (PAYLOAD_LIMIT + 1)})
            assert a.unsent == 1
        finally:
            listen_a.close()
            listen_b.close()
