"""A connection's request timeouts on one timer (``mcpdeck.connection._deadlines``): each scope is cancelled
when its own time is up, and not after ``end``, whatever the other requests do."""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest

from mcpdeck.connection._deadlines import Deadlines
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio


def _look_at(delay: float, scope: anyio.CancelScope, seen: list[bool]) -> None:
    """At ``delay`` seconds from now, note whether ``scope`` was cancelled by then.

    The look is a timer of the event loop, as the deadlines' own timer is: the loop runs due timers in the order
    of their times, so a look timed before a deadline sees it not yet passed, and one timed after sees it passed,
    however late a loaded machine runs them both."""
    asyncio.get_running_loop().call_later(delay, lambda: seen.append(scope.cancel_called))


async def _cancelled(deadlines: Deadlines, limit: float) -> list[bool]:
    """Start a scope with ``limit``, wait for it to be cancelled, and say whether a look just before its time and
    one just after it saw it cancelled."""
    seen: list[bool] = []
    with anyio.fail_after(WAIT), anyio.CancelScope() as scope:
        _look_at(limit * 0.9, scope, seen)  # timed before the deadline's own start: due earlier
        deadlines.start(scope, limit)
        _look_at(limit * 1.1, scope, seen)  # timed after it: due later
        await anyio.sleep_forever()
    assert scope.cancelled_caught
    await anyio.sleep(limit * 0.2)  # (the look after it, due by now, has run)
    return seen


async def test_a_scope_is_cancelled_when_its_time_is_up_and_not_before() -> None:
    deadlines = Deadlines()
    assert await _cancelled(deadlines, 0.2) == [False, True]


async def test_a_shorter_limit_after_a_longer_one_is_kept_on_time() -> None:
    deadlines = Deadlines()
    with anyio.CancelScope() as long:
        deadlines.start(long, 60.0)  # the timer now waits a minute
        assert await _cancelled(deadlines, 0.1) == [False, True]
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
    assert await _cancelled(deadlines, 0.05) == [False, True]


async def test_starting_again_restarts_the_time_as_progress_does() -> None:
    deadlines = Deadlines()
    loop = asyncio.get_running_loop()
    seen: list[bool] = []
    with anyio.fail_after(WAIT), anyio.CancelScope() as scope:
        deadlines.start(scope, 0.3)
        for at in (0.15, 0.3, 0.45, 0.6):  # progress every 0.15 s: never 0.3 s without news
            loop.call_later(at, deadlines.start, scope, 0.3)
            _look_at(at + 0.2, scope, seen)  # after the time the start before this one set, before this one's
        await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert seen == [False] * 4


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
