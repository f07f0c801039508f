"""Messages between replicas on a real PostgreSQL (``mcpdeck.store.Relay``): answered by the replica they are for,
and given up on, with a clear reason, when it is gone or does not take them; never a hang."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

import anyio
import pytest

from mcpdeck.store import History, Relay, Replica, Unreachable
from mcpdeck.store._relay import PICKUP
from tests.helpers import WAIT
from tests.postgres import Postgres

pytestmark = pytest.mark.anyio


@contextmanager
def joined(url: str, name: str) -> Generator[Replica]:
    with History(url, replica=name) as history:
        replica = Replica(history)
        replica.join()
        try:
            yield replica
        finally:
            replica.leave()


async def _echo(body: str) -> str:
    return f"r1 got {body}"


async def test_a_message_is_answered_by_its_replica_and_a_gone_or_deaf_one_fails_clearly(postgres: Postgres) -> None:
    with postgres.database() as url, joined(url, "r1") as r1, joined(url, "r2") as r2, joined(url, "r3") as r3:
        asker = Relay(r2)
        async with anyio.create_task_group() as tg:
            await tg.start(Relay(r1).run, _echo)
            await tg.start(asker.run, _echo)  # the answers come back to its own channel
            with anyio.fail_after(WAIT):
                assert await asker.ask("r1", "hello", limit=WAIT) == "r1 got hello"
                # r3 runs but takes no messages: given up on after PICKUP seconds
                with pytest.raises(Unreachable, match=f"replica r3 did not take the message within {PICKUP:g} s"):
                    await asker.ask("r3", "anyone?", limit=WAIT)
            r3.leave()  # its row and its lock gone, as when its process dies
            with anyio.fail_after(1), pytest.raises(Unreachable, match="replica r3 is gone"):
                await asker.ask("r3", "still there?", limit=WAIT)
            tg.cancel_scope.cancel()
        rows = r2.history.store.writer.call(lambda db: db.rows("SELECT recipient FROM relayed"))
        assert rows == [], rows  # every message was taken or taken back
