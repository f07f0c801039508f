"""Messages between replicas on a real PostgreSQL (``mcpdeck.store.Relay``): answered by the replica they are for,
and given up on, with a clear reason, when it is gone or does not take them; never a hang."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import psycopg
import pytest

from mcpdeck.store import ConfigNotices, History, Listener, Relay, Replica, Unreachable
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


@asynccontextmanager
async def relaying(replica: Replica, tmp_path: Path) -> AsyncGenerator[Relay]:
    """A replica's relay on its one listening connection, which the config notices share (as ``serve`` has them)."""
    listener = Listener(replica.history.store)
    ConfigNotices(listener.store, tmp_path / "mcpdeck.json", replica.id, listener).listen(lambda: None)
    relay = Relay(replica, listener)  # its channel is the listener's last LISTEN (what pg_stat_activity shows)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(relay.run, _echo)
            listener.start()
            with anyio.fail_after(WAIT):
                await anyio.to_thread.run_sync(listener.listening.wait)
            yield relay
            tg.cancel_scope.cancel()
    finally:
        await anyio.to_thread.run_sync(listener.close)


def _listening(url: str) -> int:
    """How many connections to the database at ``url`` have said LISTEN (their last statement)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def test_a_replica_s_relay_listens_on_its_one_listening_connection(postgres: Postgres, tmp_path: Path) -> None:
    """The relay, the config notices (and the live events) of a replica share ONE LISTEN connection; a message sent
    while that connection was down is taken when it listens again."""
    with postgres.database() as url, joined(url, "r1") as r1, joined(url, "r2") as r2:
        async with relaying(r1, tmp_path), relaying(r2, tmp_path) as asker:
            assert await anyio.to_thread.run_sync(_listening, url) == 2  # one per replica
            with anyio.fail_after(WAIT):
                assert await asker.ask("r1", "hello", limit=WAIT) == "r1 got hello"

            # r1's listening connection is cut: the message sent meanwhile is taken once it listens again
            with psycopg.connect(url, autocommit=True) as admin:
                cut = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND query LIKE 'LISTEN %mcpdeck_relay_r1%'"
                ).fetchall()
            assert cut == [(True,)]
            with anyio.fail_after(WAIT):
                assert await asker.ask("r1", "again", limit=WAIT) == "r1 got again"


async def test_a_message_is_answered_by_its_replica_and_a_gone_or_deaf_one_fails_clearly(
    postgres: Postgres, tmp_path: Path
) -> None:
    with postgres.database() as url, joined(url, "r1") as r1, joined(url, "r2") as r2, joined(url, "r3") as r3:
        async with relaying(r1, tmp_path), relaying(r2, tmp_path) as asker, anyio.create_task_group() as tg:
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
