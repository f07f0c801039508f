"""EventBus: callbacks and streams get every event in order; a slow or broken subscriber hurts nobody."""

from __future__ import annotations

import logging

import anyio
import pytest

from mcpdeck.events import (
    ConfigChanged,
    Event,
    EventBus,
    ServerStatusChanged,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from mcpdeck.status import ServerState

pytestmark = pytest.mark.anyio

STATES = list(ServerState)


def status(state: ServerState | int) -> ServerStatusChanged:
    """A status event; an int picks the n-th state (events only need to differ)."""
    state = state if isinstance(state, ServerState) else STATES[state % len(STATES)]
    return ServerStatusChanged(server=f"s{STATES.index(state)}", state=state, previous=ServerState.STOPPED)


async def test_a_callback_gets_every_event_in_order_until_it_unsubscribes() -> None:
    bus = EventBus()
    got: list[Event] = []
    unsubscribe = bus.on(got.append)
    first, second = status(ServerState.CONNECTING), status(ServerState.CONNECTED)
    bus.publish(first)
    bus.publish(second)
    unsubscribe()
    bus.publish(status(ServerState.FAILED))
    assert got == [first, second]


async def test_a_failing_callback_is_logged_and_the_others_still_get_the_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    got: list[Event] = []

    def broken(event: Event) -> None:
        raise ValueError("subscriber bug")

    bus.on(broken)
    bus.on(got.append)
    event = ConfigChanged(server="s", change="added")
    with caplog.at_level(logging.ERROR, logger="mcpdeck.events"):
        bus.publish(event)
    assert got == [event]
    assert "event callback" in caplog.text and "subscriber bug" in caplog.text


async def test_a_stream_subscriber_gets_the_events_published_while_it_listens() -> None:
    bus = EventBus()
    bus.publish(status(ServerState.DISABLED))
    async with bus.subscribe() as events:
        one, two = status(ServerState.CONNECTING), ToolsChanged(server="s", tool_count=3, catalog_version=1)
        bus.publish(one)
        bus.publish(two)
        with anyio.fail_after(5):
            assert await events.receive() == one
            assert await events.receive() == two
    bus.publish(status(ServerState.FAILED))  # nobody listens any more: nothing breaks


async def test_a_stream_can_be_iterated() -> None:
    bus = EventBus()
    published = [status(n) for n in range(3)]
    got: list[Event] = []
    async with bus.subscribe() as events:
        for event in published:
            bus.publish(event)
        with anyio.fail_after(5):
            async for event in events:
                got.append(event)
                if len(got) == len(published):
                    break
    assert got == published


async def test_a_slow_stream_subscriber_loses_events_past_its_buffer_and_counts_them() -> None:
    bus = EventBus()
    async with bus.subscribe(buffer=2) as slow, bus.subscribe() as fast:
        published = [status(n) for n in range(5)]
        for event in published:
            bus.publish(event)  # never blocks, even with a full buffer
        assert slow.dropped == 3
        assert fast.dropped == 0
        with anyio.fail_after(5):
            assert [await slow.receive() for _ in range(2)] == published[:2]
            assert [await fast.receive() for _ in range(5)] == published


async def test_events_carry_the_time_they_happened() -> None:
    before = ConfigChanged(server=None, change="enabled")
    after = ConfigChanged(server=None, change="disabled")
    assert before.at <= after.at
    assert before.at.tzinfo is not None


async def test_a_callback_for_some_kinds_gets_only_those() -> None:
    bus = EventBus()
    got: list[Event] = []
    everything: list[Event] = []
    unsubscribe = bus.on(got.append, ToolsChanged, ConfigChanged)
    bus.on(everything.append)
    published = [
        status(1),
        ToolsChanged(server="s", tool_count=1, catalog_version=2),
        ConfigChanged(server="s", change="added"),
    ]
    for event in published:
        bus.publish(event)
    unsubscribe()
    bus.publish(ToolsChanged(server="s", tool_count=2, catalog_version=3))
    assert got == published[1:]
    assert everything[:3] == published and len(everything) == 4


async def test_wants_says_whether_anyone_takes_a_kind_as_subscribers_come_and_go() -> None:
    bus = EventBus()
    assert not bus.wants(ToolCallStarted)
    off_news = bus.on(lambda _: None, ToolsChanged)
    assert bus.wants(ToolsChanged) and not bus.wants(ToolCallStarted)  # the gateway's case: calls build no events
    off_calls = bus.on(lambda _: None, ToolCallStarted, ToolCallFinished)
    assert bus.wants(ToolCallStarted) and bus.wants(ToolCallFinished)
    off_calls()
    assert not bus.wants(ToolCallStarted)
    off_all = bus.on(lambda _: None)
    assert bus.wants(ToolCallFinished)
    off_all()
    off_news()
    assert not bus.wants(ToolsChanged)
    async with bus.subscribe():
        assert bus.wants(ToolCallFinished)  # a stream takes every event
    assert not bus.wants(ToolCallFinished)


async def test_wants_any_answers_for_several_kinds_and_changes_as_subscribers_come_and_go() -> None:
    bus = EventBus()
    calls = (ToolCallStarted, ToolCallFinished)
    assert not bus.wants_any(calls)
    off_news = bus.on(lambda _: None, ToolsChanged)
    assert not bus.wants_any(calls) and bus.wants_any((ToolCallStarted, ToolsChanged))
    off_finished = bus.on(lambda _: None, ToolCallFinished)
    assert bus.wants_any(calls)  # one of them is enough
    off_finished()
    assert not bus.wants_any(calls)
    async with bus.subscribe():
        assert bus.wants_any(calls)
    assert not bus.wants_any(calls)
    off_news()
