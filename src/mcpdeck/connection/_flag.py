"""``Flag``: a one-shot event that holds no event-loop objects until something waits on it.

An ``anyio.Event`` on asyncio carries an ``asyncio.Event`` and its deque of waiters from the
moment it is made (about 760 bytes), and keeps them after it is set. A host keeps several
events per connected server that are seldom or never waited on (a supervisor's wake-up, "the
server settled", "the session ended", "the listen stream is up"); as ``Flag`` they cost one
small object until a task waits, and nothing more once set.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel

__all__ = ["Flag"]


class Flag:
    """``set`` once; ``wait`` returns once it is set (at once if it is already)."""

    __slots__ = ("_event", "_set")

    def __init__(self) -> None:
        self._set = False
        self._event: anyio.Event | None = None  # only while a task waits

    def set(self) -> None:
        """Set it and wake every waiter (again: nothing happens)."""
        if self._set:
            return
        self._set = True
        event, self._event = self._event, None  # the waiters hold it; this flag needs it no more
        if event is not None:
            event.set()

    def is_set(self) -> bool:
        """Whether it is set."""
        return self._set

    async def wait(self) -> None:
        """Wait until it is set (a checkpoint if it already is)."""
        if self._set:
            await anyio.lowlevel.checkpoint()
            return
        event = self._event
        if event is None:
            event = self._event = anyio.Event()
        await event.wait()
