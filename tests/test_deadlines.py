"""A connection's request timeouts on one timer (``mcpdeck.connection._deadlines``): each scope is cancelled
when its own time is up, and not after ``end``, whatever the other requests do."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel
import pytest

from mcpdeck.connection._deadlines import Deadlines
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio


async def _cancelled_after(deadlines: Deadlines, limit: float) -> float:
    """Seconds until a scope started with ``limit`` is cancelled."""
    began = time.monotonic()
    with anyio.fail_after(WAIT), anyio.CancelScope() as scope:
        deadlines.start(scope, limit)
        await anyio.sleep_forever()
    assert scope.cancelled_caught
    return time.monotonic() - began


async def test_a_scope_is_cancelled_when_its_time_is_up_and_not_before() -> None:
    deadlines = Deadlines()
    assert 0.2 <= await _cancelled_after(deadlines, 0.2) < WAIT


async def test_a_shorter_limit_after_a_longer_one_is_kept_on_time() -> None:
    deadlines = Deadlines()
    with anyio.CancelScope() as long:
        deadlines.start(long, 60.0)  # the timer now waits a minute
        assert await _cancelled_after(deadlines, 0.1) < 30.0
        assert not long.cancel_called
        deadlines.end(long)


async def test_ended_scopes_are_never_cancelled_and_later_ones_still_are() -> None:
    deadlines = Deadlines()
    ended: list[anyio.CancelScope] = []
    for _ in range(1000):  # requests that got their answers in time
        with anyio.CancelScope() as scope:
            deadlines.start(scope, 0.05)
            await anyio.lowlevel.checkpoint()  # (the request, answered at once)
            deadlines.end(scope)
        ended.append(scope)
    await anyio.sleep(0.1)  # past their deadlines: the timer fires for nothing
    assert not any(scope.cancel_called for scope in ended)
    assert 0.05 <= await _cancelled_after(deadlines, 0.05) < WAIT


async def test_starting_again_restarts_the_time_as_progress_does() -> None:
    deadlines = Deadlines()
    began = time.monotonic()
    with anyio.fail_after(WAIT), anyio.CancelScope() as scope:
        deadlines.start(scope, 0.3)
        for _ in range(4):  # progress every 0.15 s: never 0.3 s without news
            await anyio.sleep(0.15)
            deadlines.start(scope, 0.3)
        await anyio.sleep_forever()
    assert scope.cancelled_caught and time.monotonic() - began >= 0.9


async def test_a_limit_of_zero_cancels_at_once_and_an_infinite_one_never() -> None:
    deadlines = Deadlines()
    with anyio.CancelScope() as now:
        deadlines.start(now, 0)
        await anyio.sleep(WAIT)
    assert now.cancelled_caught
    with anyio.move_on_after(0.2) as outer, anyio.CancelScope() as never:
        deadlines.start(never, float("inf"))
        await anyio.sleep_forever()
    assert outer.cancelled_caught and not never.cancel_called
