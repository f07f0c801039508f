"""Why ``serve --stdio`` never exits by itself: the gateway's history recorder is a task started with
``Host.start_task``, which says the task "is cancelled when the host closes"; closing the host instead
waits for it, and a task that reads the host's events forever keeps the host open forever."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcpdeck import Host

pytestmark = pytest.mark.anyio


async def test_a_task_started_on_the_host_is_cancelled_when_the_host_closes(log_dir: Path) -> None:
    cancelled = anyio.Event()

    async def listen_forever(host: Host) -> None:
        try:
            async with host.events.subscribe() as events:
                async for _ in events:
                    pass
        finally:
            cancelled.set()

    closed = False
    with anyio.move_on_after(10):
        async with Host({}, log_dir=log_dir) as host:
            host.start_task(listen_forever, host, name="tryout listener")
        closed = True
    assert closed, "the host did not close within 10 s: it waited for a task it should have cancelled"
    assert cancelled.is_set()
