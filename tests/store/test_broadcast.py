"""A fleet's live events on a real PostgreSQL (``mcpdeck.store.EventBroadcast``): another replica hears an event
whole, or trimmed to fit a ``NOTIFY`` when it is too big; a replica never hears its own back; secrets are
replaced before anything leaves; events sent together go in few notices, each after the rows of its calls;
a notice of one event alone (what replicas sent before) is heard too."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import psycopg
import pytest
from psycopg import sql

from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.store import PAYLOAD_LIMIT, ConfigNotices, EventBroadcast, History, Listener, events_channel
from tests.helpers import WAIT
from tests.postgres import Postgres

pytestmark = pytest.mark.anyio

SECRET = "sk-live-" + "s" * 24


def into(heard: queue.SimpleQueue[tuple[str, dict[str, Any]]]) -> Callable[[str, list[dict[str, Any]]], None]:
    """A ``listen`` handler that puts each event heard in ``heard``, with its replica."""

    def hand(replica: str, events: list[dict[str, Any]]) -> None:
        for event in events:
            heard.put((replica, event))

    return hand


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
        a.listen(into(heard_a))
        b.listen(into(heard_b))
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
            # Arguments with a lone surrogate (a client sent "\\ud800"), which no encoding takes: told anyway.
            a.send({"type": "ToolCallStarted", "callId": "c3", "tool": "echo", "arguments": {"text": "lone \ud800"}})
            assert await anyio.to_thread.run_sync(lambda: heard_b.get(timeout=WAIT)) == (
                "a",
                {"type": "ToolCallStarted", "callId": "c3", "tool": "echo", "arguments": {"text": "lone \ufffd"}},
            )
            # B says something after: once A hears it, an echo of A's own would have come before it.
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


async def test_events_sent_together_go_in_few_notices_in_order_each_after_its_call_s_row(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Forty calls recorded and told at once, as the call path does (the row queued, then the event): B hears every
    event in order, in far fewer notices than events (one ``NOTIFY`` per group, not per event), and each call's row
    is in the store when B hears its event (a console that reloads its History on the event finds it)."""
    config = tmp_path / "mcp.json"
    calls = 40
    heard: queue.SimpleQueue[tuple[str, bool]] = queue.SimpleQueue()
    notices: list[str] = []
    with postgres.database() as url, History(url, replica="a") as on_a, History(url, replica="b") as on_b:
        listen_a, listen_b = Listener(on_a.store), Listener(on_b.store)
        a = EventBroadcast(listen_a, config, "a")
        b = EventBroadcast(listen_b, config, "b")
        a.listen(lambda _replica, _events: None)
        with psycopg.connect(url, autocommit=True) as reader:

            def hand(_replica: str, events: list[dict[str, Any]]) -> None:
                for event in events:  # in B's listening thread, as it hears it: is the call's row there?
                    row = reader.execute(
                        "SELECT status FROM tool_calls WHERE call_id = %s", (event["callId"],)
                    ).fetchone()
                    heard.put((event["callId"], row is not None and row[0] == "ok"))

            b.listen(hand)
            counting = threading.Event()
            stop = threading.Event()

            def count() -> None:  # every notice on the channel, as PostgreSQL delivers them
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(events_channel(config))))
                    counting.set()
                    while not stop.is_set():
                        notices.extend(notice.payload for notice in conn.notifies(timeout=0.2))

            thread = threading.Thread(target=count, daemon=True)
            thread.start()
            listen_a.start()
            listen_b.start()
            try:
                for waiting in (listen_a.listening, listen_b.listening, counting):
                    assert await anyio.to_thread.run_sync(waiting.wait, WAIT)
                ids = [f"call-{n}" for n in range(calls)]
                for call_id in ids:
                    started = ToolCallStarted(call_id=call_id, name="s__echo", server="s", tool="echo", arguments={})
                    on_a.call_started(started)
                    on_a.call_finished(
                        ToolCallFinished(
                            call_id=call_id, name="s__echo", server="s", tool="echo", duration=0.001, is_error=False
                        )
                    )
                    a.send({"type": "ToolCallFinished", "callId": call_id})
                got = [await anyio.to_thread.run_sync(lambda: heard.get(timeout=WAIT)) for _ in ids]
                assert got == [(call_id, True) for call_id in ids]
                with anyio.fail_after(WAIT):  # the counting connection has them all too
                    while sum(notice.count('"callId"') for notice in notices) < calls:  # noqa: ASYNC110
                        await anyio.sleep(0.01)
                assert 1 <= len(notices) <= calls // 4, len(notices)
                assert a.notices == len(notices)
            finally:
                stop.set()
                thread.join(WAIT)
                listen_a.close()
                listen_b.close()


async def test_a_notice_of_one_event_alone_is_heard(tmp_path: Path, postgres: Postgres) -> None:
    """What a replica of an earlier version sends (one event, its replica beside its fields) is heard whole."""
    config = tmp_path / "mcp.json"
    heard: queue.SimpleQueue[tuple[str, dict[str, Any]]] = queue.SimpleQueue()
    with postgres.database() as url, History(url, replica="b") as on_b:
        listener = Listener(on_b.store)
        EventBroadcast(listener, config, "b").listen(into(heard))
        listener.start()
        try:
            assert await anyio.to_thread.run_sync(listener.listening.wait, WAIT)
            old = '{"type":"ConfigChanged","server":"x","change":"added","replica":"old"}'
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("SELECT pg_notify(%s, %s)", (events_channel(config), old))
            assert await anyio.to_thread.run_sync(lambda: heard.get(timeout=WAIT)) == (
                "old",
                {"type": "ConfigChanged", "server": "x", "change": "added"},
            )
        finally:
            listener.close()


async def test_notices_nobody_here_wants_are_dropped_unread_and_heard_again_once_someone_follows(
    tmp_path: Path, postgres: Postgres
) -> None:
    """A replica nobody watches does not decode the fleet's events: ``wanted`` says no, the notice is counted as
    unwanted and ``heard`` is not called; once it says yes, the next notice is heard."""
    config = tmp_path / "mcp.json"
    heard: queue.SimpleQueue[tuple[str, dict[str, Any]]] = queue.SimpleQueue()
    following = threading.Event()
    asked = threading.Event()

    def wanted() -> bool:
        answer = following.is_set()
        asked.set()
        return answer

    with postgres.database() as url, History(url, replica="b") as on_b:
        listener = Listener(on_b.store)
        broadcast = EventBroadcast(listener, config, "b")
        broadcast.listen(into(heard), wanted=wanted)
        listener.start()
        try:
            assert await anyio.to_thread.run_sync(listener.listening.wait, WAIT)
            with psycopg.connect(url, autocommit=True) as conn:

                def notify(server: str) -> None:
                    event = {"type": "ConfigChanged", "server": server, "change": "added"}
                    notice = json.dumps({"replica": "a", "events": [event]})
                    conn.execute("SELECT pg_notify(%s, %s)", (events_channel(config), notice))

                notify("unseen")
                assert await anyio.to_thread.run_sync(asked.wait, WAIT)
                following.set()
                notify("seen")
                assert await anyio.to_thread.run_sync(lambda: heard.get(timeout=WAIT)) == (
                    "a",
                    {"type": "ConfigChanged", "server": "seen", "change": "added"},
                )
                assert heard.empty()  # the first notice was never heard
                assert broadcast.unwanted == 1
        finally:
            listener.close()
