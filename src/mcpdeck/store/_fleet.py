"""This process as one replica of a fleet sharing a store: its sign of life, and the jobs one replica runs.

A replica holds a lock named after its id for as long as it runs (``replica-<id>``: a PostgreSQL
session advisory lock, or an ``flock`` beside a SQLite file), has a row in ``replicas`` and updates
its ``last_seen`` every ``HEARTBEAT`` seconds. Every heartbeat, a replica also tries the reaper's lock
without waiting; the one that gets it looks at the other replicas' rows: one whose lock nobody holds
(its process is gone: the lock went with it) or whose heartbeat is older than ``STALE_AFTER`` (a
machine that vanished with its connection half open) is dead, its running calls are marked
``interrupted``, its clients' session approvals orphaned (``_approvals``) and its row removed.
Retention (``keep_days``) runs the same way, at most once per ``RETENTION_EVERY`` for the whole
fleet (the ``leases`` table says when it last ran). A replica that starts again under the same id
marks the calls (and orphans the approvals) its earlier life left.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import anyio.to_thread

from mcpdeck.errors import ConfigError
from mcpdeck.store._approvals import ORPHANED_FOR, orphan_approvals
from mcpdeck.store._db import Database
from mcpdeck.store._history import History, now
from mcpdeck.store._location import check_replica_id

__all__ = ["HEARTBEAT", "RETENTION_EVERY", "STALE_AFTER", "Replica", "default_replica_id"]

logger = logging.getLogger("mcpdeck.store")

HEARTBEAT = 2.0
"""Seconds between a replica's heartbeats (and its tries at the reaper's lock)."""
STALE_AFTER = 30.0
"""Seconds without a heartbeat after which a replica counts as dead even if its lock looks held."""
RETENTION_EVERY = 3600.0
"""Seconds between two runs of retention, fleet-wide."""
_INTERRUPT = "UPDATE tool_calls SET status = 'interrupted', error = ? WHERE replica = ? AND status = 'running'"


def default_replica_id(config: Path) -> str:
    """A lone ``serve``'s replica id: the machine's name and a short hash of its config file's path, stable
    from one start to the next, and apart from a ``serve`` of another config sharing the same history."""
    label = re.sub(r"[^A-Za-z0-9_-]+", "-", socket.gethostname().split(".")[0]).strip("-")[:20] or "serve"
    digest = hashlib.sha256(os.fsencode(config.expanduser().resolve())).hexdigest()[:4]
    return f"{label}-{digest}"


def _ago(seconds: float) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat()


def _lock_name(replica: str) -> str:
    return f"replica-{replica}"


class Replica:
    """This process's place in the fleet of ``history``'s store (``serve`` runs one).

    Args:
        history: The history it records into (its ``replica`` is this id).
        heartbeat: Seconds between heartbeats and reaper runs.
        stale_after: Seconds without a heartbeat after which another replica is dead.
        keep_days: Delete calls and conversations older than this many days (None: keep everything).
        orphaned_for: Seconds a dead replica's session approvals are kept for its clients (``ORPHANED_FOR``).
    """

    def __init__(
        self,
        history: History,
        *,
        heartbeat: float = HEARTBEAT,
        stale_after: float = STALE_AFTER,
        keep_days: float | None = None,
        orphaned_for: float = ORPHANED_FOR,
    ):
        if history.replica is None:
            raise ValueError("the history must record a replica id")
        self.id = check_replica_id(history.replica)
        self.history = history
        self.heartbeat = heartbeat
        self.stale_after = stale_after
        self.keep_days = keep_days
        self.orphaned_for = orphaned_for
        self._store = history.store

    # ----- joining and leaving -------------------------------------------------------------------

    def join(self) -> None:
        """Take this id's lock, mark what an earlier life of it left running, and add its row (blocks).

        Raises:
            ConfigError: A running process holds this id on this store.
        """
        if not self._store.locks.try_lock(_lock_name(self.id)):
            raise ConfigError(
                f"the replica id {self.id!r} is taken: another mcpdeck serve runs with it on the store "
                f"{self.history.where}; give each replica its own --replica-id (or $MCPDECK_REPLICA_ID)"
            )
        pid, host, at = os.getpid(), socket.gethostname(), now()

        def join(db: Database) -> int:
            left = db.run(
                _INTERRUPT, (f"its replica {self.id} stopped while the call ran (found when it started again)", self.id)
            )
            orphan_approvals(db, self.id, before=_ago(ORPHANED_FOR))  # its earlier life's sessions are gone
            db.run(
                "INSERT INTO replicas (id, pid, host, started_at, last_seen) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, host = excluded.host,"
                " started_at = excluded.started_at, last_seen = excluded.last_seen",
                (self.id, pid, host, at, at),
            )
            return left

        left = self._store.writer.call(join, write=True)
        if left:
            logger.warning(
                "replica %s: %d calls of its earlier run were left running; marked interrupted", self.id, left
            )

    def leave(self) -> None:
        """Remove this replica's row, then let its lock go (blocks)."""

        def leave(db: Database) -> None:
            db.run("DELETE FROM replicas WHERE id = ?", (self.id,))
            orphan_approvals(db, self.id, before=_ago(self.orphaned_for))  # any its sessions did not take along

        try:
            self._store.writer.call(leave, write=True)
        finally:
            self._store.locks.release(_lock_name(self.id))

    def alive(self, other: str) -> bool:
        """Whether the replica ``other`` runs (blocks): its row is there, its heartbeat is younger than
        ``stale_after`` and its lock is held (a process that died let it go at once)."""
        if other == self.id:
            return True
        cutoff = (datetime.now(UTC) - timedelta(seconds=self.stale_after)).isoformat()
        row = self._store.writer.call(lambda db: db.one("SELECT last_seen FROM replicas WHERE id = ?", (other,)))
        if row is None or row[0] < cutoff:
            return False
        return bool(self._store.locks.held_elsewhere([_lock_name(other)]))

    # ----- what it does every heartbeat ----------------------------------------------------------

    def beat(self) -> None:
        """Say this replica is alive (blocks); take its lock again if a lost connection dropped it."""
        self._store.locks.try_lock(_lock_name(self.id))
        pid, host, at = os.getpid(), socket.gethostname(), now()
        self._store.writer.call(
            lambda db: db.run(
                "INSERT INTO replicas (id, pid, host, started_at, last_seen) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen",
                (self.id, pid, host, at, at),
            ),
            write=True,
        )

    def reap(self) -> dict[str, int]:
        """If no other replica is reaping: mark the running calls of dead replicas ``interrupted`` and
        remove their rows (blocks). Returns how many calls of each dead replica were marked."""
        locks = self._store.locks
        if not locks.try_lock("reaper"):
            return {}
        try:
            cutoff = _ago(self.stale_after)
            orphaned = _ago(self.orphaned_for)

            def reap(db: Database) -> dict[str, int]:
                others = db.rows("SELECT id, last_seen FROM replicas WHERE id <> ?", (self.id,))
                alive = locks.held_elsewhere(_lock_name(replica) for replica, _ in others)
                dead = [replica for replica, seen in others if _lock_name(replica) not in alive or seen < cutoff]
                marked: dict[str, int] = {}
                for replica in dead:
                    error = f"its replica {replica} stopped while the call ran (found by {self.id})"
                    marked[replica] = db.run(_INTERRUPT, (error, replica))
                    orphan_approvals(db, replica, before=orphaned)
                    db.run("DELETE FROM replicas WHERE id = ?", (replica,))
                    db.run("DELETE FROM relayed WHERE recipient = ?", (replica,))  # nobody will read them
                db.run("DELETE FROM approvals WHERE orphaned_at < ?", (orphaned,))
                return marked

            marked = self._store.writer.call(reap, write=True)
        finally:
            locks.release("reaper")
        for replica, count in marked.items():
            logger.warning(
                "replica %s is gone; %d of its calls were running and are marked interrupted", replica, count
            )
        return marked

    def retain(self, *, every: float = RETENTION_EVERY) -> int | None:
        """If ``keep_days`` is set, no other replica runs it and it has not run in the last ``every``
        seconds: delete calls and conversations older than ``keep_days`` (blocks). Returns how many
        calls were deleted, or None when it did not run."""
        if self.keep_days is None:
            return None
        locks = self._store.locks
        if not locks.try_lock("retention"):
            return None
        try:
            moment = datetime.now(UTC)
            cutoff = (moment - timedelta(days=self.keep_days)).isoformat()
            since = (moment - timedelta(seconds=every)).isoformat()

            def retain(db: Database) -> int | None:
                last = db.one("SELECT last_run FROM leases WHERE job = 'retention'")
                if last is not None and last[0] > since:
                    return None
                calls = db.run("DELETE FROM tool_calls WHERE started_at < ? AND status <> 'running'", (cutoff,))
                old = "SELECT id FROM conversations WHERE started_at < ?"
                db.run(f"UPDATE tool_calls SET conversation_id = NULL WHERE conversation_id IN ({old})", (cutoff,))
                db.run(f"DELETE FROM messages WHERE conversation_id IN ({old})", (cutoff,))
                db.run("DELETE FROM conversations WHERE started_at < ?", (cutoff,))
                db.run(
                    "INSERT INTO leases (job, replica, last_run) VALUES ('retention', ?, ?)"
                    " ON CONFLICT (job) DO UPDATE SET replica = excluded.replica, last_run = excluded.last_run",
                    (self.id, moment.isoformat()),
                )
                return calls

            return self._store.writer.call(retain, write=True)
        finally:
            locks.release("retention")

    async def run(self) -> None:
        """Every ``heartbeat`` seconds: a heartbeat, then the reaper and retention if this replica gets
        them. Runs until cancelled; a failure is logged and tried again next time."""
        while True:
            try:
                await anyio.to_thread.run_sync(self.retain)
                await anyio.to_thread.run_sync(self.reap)
            except Exception as error:  # the store is down for a moment: the next heartbeat tries again
                logger.error("replica %s: the reaper or retention failed: %s", self.id, error)
            await anyio.sleep(self.heartbeat)
            try:
                await anyio.to_thread.run_sync(self.beat)
            except Exception as error:
                logger.error("replica %s: the heartbeat failed: %s", self.id, error)
