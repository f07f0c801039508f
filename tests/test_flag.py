"""``Flag``: the one-shot event a connection keeps for what is seldom waited on."""

from __future__ import annotations

import anyio
import pytest

from mcpdeck.connection._flag import Flag
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio


async def test_every_waiter_wakes_when_it_is_set() -> None:
    flag = Flag()
    woken: list[int] = []

    async def waiter(n: int) -> None:
        await flag.wait()
        woken.append(n)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(waiter, n)
            await anyio.wait_all_tasks_blocked()
            assert woken == [] and not flag.is_set()
            flag.set()
            flag.set()  # a second set changes nothing
    assert sorted(woken) == [0, 1, 2] and flag.is_set()


async def test_a_set_flag_is_waited_for_at_once() -> None:
    flag = Flag()
    flag.set()
    with anyio.fail_after(WAIT):
        await flag.wait()
    assert flag.is_set()


async def test_a_waiter_can_be_cancelled_and_a_later_one_still_wakes() -> None:
    flag = Flag()
    with anyio.move_on_after(0.05) as scope:
        await flag.wait()
    assert scope.cancelled_caught
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(flag.wait)
            await anyio.wait_all_tasks_blocked()
            flag.set()
