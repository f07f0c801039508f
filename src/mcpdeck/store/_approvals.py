"""The approvals gateway clients give "for the rest of this session", kept in the store so every replica honours them.

A client is known by what the gateway knows of it: the name of the token it used, the profile it opened
and its ``clientInfo`` (``name version``). Its answer is one row of ``approvals``, held by the session
that gave it (a gateway connection: a handshake-era session, a stdio peer). Any session of the same
client, on any replica, finds it with one indexed lookup, and then keeps a row of its own, so the approval
lasts as long as some session of that client that has used it. A session that ends (the client closes
it, its connection ends) takes its rows with it. The sessions of a replica that dies cannot end: the
reaper marks that replica's rows orphaned (``Replica.reap``), its clients find them on the replica they
come back to, and rows orphaned for longer than ``ORPHANED_FOR`` are deleted.

The lookup is made only for a call that would otherwise be asked about, and once found an approval is
remembered by the gateway's client: the store is asked at most once per tool and session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread

from mcpdeck._util.safe_text import storable
from mcpdeck.store._db import Database
from mcpdeck.store._history import now
from mcpdeck.store._store import Store

if TYPE_CHECKING:  # the permissions part imports the SDK's types; `mcpdeck history` must not
    from mcpdeck.permissions import ClientKey

__all__ = ["ORPHANED_FOR", "SessionApprovals", "orphan_approvals"]

ORPHANED_FOR = 600.0
"""Seconds the approvals of a dead replica's sessions are kept for their clients to come back elsewhere."""

_FIND = "SELECT session FROM approvals WHERE client = ? AND token = ? AND profile = ? AND tool = ?"
_ADD = "INSERT INTO approvals (token, profile, client, tool, session, replica, given_at) VALUES (?, ?, ?, ?, ?, ?, ?)"


def orphan_approvals(db: Database, replica: str, *, before: str) -> None:
    """Mark ``replica``'s approvals orphaned (its sessions are gone) and delete those orphaned before ``before``."""
    db.run("UPDATE approvals SET orphaned_at = ? WHERE replica = ? AND orphaned_at IS NULL", (now(), replica))
    db.run("DELETE FROM approvals WHERE orphaned_at < ?", (before,))


class SessionApprovals:
    """The approvals table of ``store``, as replica ``replica`` reads and writes it."""

    def __init__(self, store: Store, replica: str):
        self._store = store
        self.replica = replica

    def _read(self, who: ClientKey, tool: str) -> list[str]:
        client, tool = storable(who.client), storable(tool)
        return [
            row[0] for row in self._store.writer.call(lambda db: db.rows(_FIND, (client, who.token, who.profile, tool)))
        ]

    async def holds(self, who: ClientKey, tool: str, session: str) -> bool:
        """Whether ``who`` allowed ``tool`` for a session of theirs (any replica's); if so ``session`` holds it too."""
        sessions = await anyio.to_thread.run_sync(self._read, who, tool)
        if not sessions:
            return False
        if session not in sessions:
            await self.give(who, tool, session)
        return True

    async def give(self, who: ClientKey, tool: str, session: str) -> None:
        """Keep ``who``'s approval of ``tool`` for ``session``; returns once it is committed."""
        # (the client's name is what its clientInfo said: kept as the history keeps texts, and looked up so)
        row = (who.token, who.profile, storable(who.client), storable(tool), session, self.replica, now())
        writer = self._store.writer
        writer.submit(lambda db: db.run(_ADD, row))
        await writer.committed()

    async def end(self, session: str) -> None:
        """``session`` ended: its approvals go (a client's other sessions keep theirs)."""
        writer = self._store.writer
        writer.submit(lambda db: db.run("DELETE FROM approvals WHERE session = ?", (session,)))
        await writer.committed()
