"""Messages between the replicas of a fleet on PostgreSQL: a row in ``relayed``, announced by NOTIFY.

``Relay.ask(replica, body)`` writes a row for ``replica`` and NOTIFYs its channel (``mcpdeck_relay_<id>``)
with the row's id; that replica hears it on its one listening connection (``store.Listener``, shared with
the config notices and the live events), and its ``Relay.run`` takes the row (deletes it), hands the body
to its handler and sends the handler's answer back the same way, as a row that replies to the first. Each
time the listening connection listens (again), the rows that came while nobody heard are taken too. The
asker waits for that answer, and every ``CHECK_EVERY`` seconds looks whether it still can come: a
recipient that has not taken the row within ``PICKUP`` seconds, or that is no longer alive (its lock and
heartbeat: ``Replica.alive``), ends the wait at once with ``Unreachable``; so does ``limit``.

What the bodies mean is the caller's business (the gateway relays a 2026-07-28 call's rounds with it).
SQLite has no NOTIFY: there is no relay on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, LiteralString

import anyio
import anyio.to_thread
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from mcpdeck.errors import ConfigError
from mcpdeck.store._db import postgres_arguments, unreachable
from mcpdeck.store._fleet import Replica
from mcpdeck.store._history import now
from mcpdeck.store._notices import Listener

if TYPE_CHECKING:
    import psycopg

__all__ = ["CHECK_EVERY", "PICKUP", "Relay", "Unreachable"]

logger = logging.getLogger("mcpdeck.store")

CHECK_EVERY = 1.0
"""Seconds between two looks, while an answer is awaited, at whether it can still come."""
PICKUP = 5.0
"""Seconds a recipient has to take a message (delete its row) before the asker gives up on it."""
_SWEEP = -1
"""In the inbox: the listening connection listens (again): take what came while nobody heard."""


class Unreachable(Exception):
    """The replica a message is for cannot answer it: it is gone, does not take it, or took too long."""


@dataclass
class _Waiting:
    arrived: anyio.Event = field(default_factory=anyio.Event)
    body: str = ""


class Relay:
    """This replica's end of the relay (PostgreSQL stores only).

    Args:
        replica: This process in the fleet: its id, its store, and how it tells another replica is alive.
        listener: The replica's listening connection, not started yet (its owner starts and closes it).
    """

    def __init__(self, replica: Replica, listener: Listener):
        location = replica.history.store.location
        if location.kind != "postgresql":
            raise ValueError("only a PostgreSQL store relays between replicas")
        self.replica = replica
        self.id = replica.id
        self._location = location
        self._sending: psycopg.AsyncConnection[Any] | None = None
        self._lock = anyio.Lock()
        self._waiting: dict[int, _Waiting] = {}
        self._handler: Callable[[str], Awaitable[str]] | None = None
        self._inbox: tuple[asyncio.AbstractEventLoop, MemoryObjectSendStream[int]] | None = None
        listener.on(self.channel(self.id), self._heard)
        listener.on_connect(lambda: self._deliver(_SWEEP))

    def _heard(self, payload: str) -> None:
        """From the listening thread: a notice on this replica's channel (a row's id)."""
        if payload.isdigit():
            self._deliver(int(payload))

    def _deliver(self, row: int) -> None:
        """From the listening thread: hand ``row`` (or ``_SWEEP``) to ``run`` on its event loop, if it runs."""
        inbox = self._inbox
        if inbox is not None:
            loop, send = inbox
            with contextlib.suppress(RuntimeError):  # its loop is closed: run has ended
                loop.call_soon_threadsafe(_put, send, row)

    @staticmethod
    def channel(replica: str) -> str:
        """The NOTIFY channel of a replica (a replica id is 1-32 of ``A-Za-z0-9_-``)."""
        return f"mcpdeck_relay_{replica}"

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        import psycopg

        url, extra = postgres_arguments(self._location)
        try:
            return await psycopg.AsyncConnection.connect(url, **extra)
        except psycopg.Error as error:
            raise unreachable(self._location, error) from None

    async def _execute(self, query: LiteralString, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run one statement on the sending connection (made again when it was lost)."""
        import psycopg

        async with self._lock:
            for attempt in (1, 2):
                if self._sending is None or self._sending.closed or self._sending.broken:
                    self._sending = await self._connect()
                try:
                    cursor = await self._sending.execute(query, params)
                    return await cursor.fetchall() if cursor.description is not None else []
                except psycopg.OperationalError:
                    if attempt == 2:
                        raise
                    await self._sending.close()
        return []  # (not reached)

    async def _send(self, recipient: str, body: str, reply_to: int | None = None) -> int:
        rows = await self._execute(
            "INSERT INTO relayed (recipient, sender, reply_to, body, sent_at) VALUES (%s, %s, %s, %s, %s) RETURNING id",
            (recipient, self.id, reply_to, body, now()),
        )
        return int(rows[0][0])

    async def _notify(self, recipient: str, row: int) -> None:
        await self._execute("SELECT pg_notify(%s, %s)", (self.channel(recipient), str(row)))

    async def ask(self, replica: str, body: str, *, limit: float) -> str:
        """Send ``body`` to ``replica`` and wait for its answer.

        Raises:
            Unreachable: ``replica`` is not alive, did not take the message within ``PICKUP`` seconds, died
                while it was at work, or did not answer within ``limit`` seconds; or the store is down.
        """
        import psycopg

        alive = self.replica.alive
        try:
            if not await anyio.to_thread.run_sync(alive, replica):
                raise Unreachable(f"replica {replica} is gone (no heartbeat in the store, or its process ended)")
            row = await self._send(replica, body)
            waiting = self._waiting[row] = _Waiting()
            try:
                await self._notify(replica, row)
                taken, sent = False, anyio.current_time()
                with anyio.move_on_after(limit) as scope:
                    while not waiting.arrived.is_set():
                        with anyio.move_on_after(CHECK_EVERY):
                            await waiting.arrived.wait()
                        if waiting.arrived.is_set():
                            break
                        if not await anyio.to_thread.run_sync(alive, replica):
                            raise Unreachable(f"replica {replica} stopped while it had the message")
                        if not taken:
                            left = await self._execute("SELECT sent_at FROM relayed WHERE id = %s", (row,))
                            taken = not left
                            if not taken and anyio.current_time() - sent >= PICKUP:
                                raise Unreachable(f"replica {replica} did not take the message within {PICKUP:g} s")
                if scope.cancelled_caught:
                    raise Unreachable(f"replica {replica} did not answer within {limit:g} s")
                return waiting.body
            finally:
                del self._waiting[row]
                if not waiting.arrived.is_set():
                    with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                        await self._execute("DELETE FROM relayed WHERE id = %s", (row,))
        except (psycopg.Error, OSError) as error:
            reason = " ".join(str(error).split())
            raise Unreachable(f"the store cannot be reached to relay to replica {replica}: {reason}") from None

    async def run(
        self,
        handler: Callable[[str], Awaitable[str]],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Until cancelled: take the messages for this replica, answer each with ``handler(body)``, and hand the
        answers to the ``ask`` waiting for them. What an earlier life of this replica was sent is dropped first."""
        import psycopg

        self._handler = handler
        send, receive = anyio.create_memory_object_stream[int](math.inf)
        self._inbox = (asyncio.get_running_loop(), send)
        try:
            async with receive, anyio.create_task_group() as tg:
                try:  # for nobody now; what comes from now on is taken when the listener (next) listens
                    await self._execute("DELETE FROM relayed WHERE recipient = %s", (self.id,))
                except (psycopg.Error, OSError, ConfigError) as error:  # the replica serves meanwhile
                    logger.error("replica %s: the relay cannot reach the store: %s", self.id, error)
                task_status.started()
                async for row in receive:
                    if row != _SWEEP:
                        tg.start_soon(self._take, row)
                        continue
                    try:
                        pending = await self._execute("SELECT id FROM relayed WHERE recipient = %s", (self.id,))
                    except (psycopg.Error, OSError, ConfigError) as error:
                        logger.error("replica %s: the relay cannot look for its messages: %s", self.id, error)
                        continue
                    for (found,) in pending:
                        tg.start_soon(self._take, int(found))
        finally:
            self._inbox = None
            send.close()
            await self.aclose()

    async def aclose(self) -> None:
        """Close the connection it sends with (``run`` does, when it ends)."""
        sending, self._sending = self._sending, None
        if sending is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await sending.close()

    async def _take(self, row: int) -> None:
        """Take one message (it is gone from the table once taken) and deal with it."""
        try:
            rows = await self._execute(
                "DELETE FROM relayed WHERE id = %s AND recipient = %s RETURNING sender, reply_to, body", (row, self.id)
            )
            if not rows:  # taken already (a notification and the sweep after a reconnect)
                return
            sender, reply_to, body = rows[0]
            if reply_to is not None:
                waiting = self._waiting.get(int(reply_to))
                if waiting is not None:
                    waiting.body = body
                    waiting.arrived.set()
                return
            assert self._handler is not None
            answer = await self._handler(body)
            reply = await self._send(sender, answer, reply_to=row)
            await self._notify(sender, reply)
        except Exception as error:  # one message lost; its asker's wait ends on its own bounds
            logger.error("replica %s: a relayed message (row %d) failed: %s", self.id, row, error)


def _put(send: MemoryObjectSendStream[int], row: int) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # run has ended
        send.send_nowait(row)
