"""The timeouts of one connection's requests in flight, kept by one timer of the event loop.

A cancel scope with a deadline puts a timer in the event loop's heap for each request, and
asyncio orders that heap by comparing timers in Python: each request's timer costs a few dozen
comparisons to add and, once cancelled, to take out again, more the more timers the heap holds
(a minute's timeout and many calls a second keep thousands in it): a share of each call that
bench/RESULTS.md gives (cachegrind, ``gateway --stdio``). Here each
request's deadline is an entry of a dict and one timer waits for the earliest; it fires about
once per timeout, looks at the requests then in flight and cancels those that are due.

asyncio only, as mcpdeck is (``docs/architecture.md``, "Async backend").
"""

from __future__ import annotations

import asyncio
import math

import anyio

__all__ = ["Deadlines"]


class Deadlines:
    """Cancels each scope given to ``start`` once its time is up, unless ``end`` came first."""

    __slots__ = ("_due", "_timer")

    def __init__(self) -> None:
        self._due: dict[anyio.CancelScope, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def start(self, scope: anyio.CancelScope, limit: float) -> None:
        """Cancel ``scope`` ``limit`` seconds from now (again: from now, not from the first ``start``); at once
        when ``limit`` is not positive, never when it is infinite."""
        if limit <= 0:
            self._due.pop(scope, None)
            scope.cancel()
            return
        loop = asyncio.get_running_loop()
        due = self._due[scope] = loop.time() + limit
        timer = self._timer
        if due < math.inf and (timer is None or due < timer.when()):
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_at(due, self._expire, loop)

    def end(self, scope: anyio.CancelScope) -> None:
        """``scope`` needs no timeout any more (the timer may still fire once, for nothing)."""
        self._due.pop(scope, None)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        now = loop.time()
        earliest = math.inf
        for scope, due in list(self._due.items()):
            if due <= now:
                del self._due[scope]
                scope.cancel()
            else:
                earliest = min(earliest, due)
        if earliest < math.inf:
            self._timer = loop.call_at(earliest, self._expire, loop)
